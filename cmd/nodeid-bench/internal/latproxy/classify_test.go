package latproxy

import (
	"net/http/httptest"
	"testing"
)

// TestClassifyFoldsOther: the four operations nodeid sends keep s3wire's
// names; every other one is "other".
func TestClassifyFoldsOther(t *testing.T) {
	for _, c := range []struct {
		method, target, hdr string
		want                Op
	}{
		{"GET", "/b?list-type=2", "", OpList},
		{"GET", "/b/k", "", OpGet},
		{"PUT", "/b/k", "If-None-Match", OpCreate},
		{"PUT", "/b/k", "If-Match", OpUpdate},
		{"PUT", "/b/k", "", OpOther},
		{"HEAD", "/b/k", "", OpOther},
		{"GET", "/", "", OpOther},
		{"GET", "/b?location", "", OpOther},
		{"DELETE", "/b/k", "", OpOther},
	} {
		r := httptest.NewRequest(c.method, c.target, nil)
		if c.hdr != "" {
			r.Header.Set(c.hdr, "*")
		}
		if got := Classify(r); got != c.want {
			t.Errorf("%s %s %s: %q, want %q", c.method, c.target, c.hdr, got, c.want)
		}
	}
	if OpOther != "other" {
		t.Errorf("OpOther = %q: reports and saved results spell it \"other\"", OpOther)
	}
}
