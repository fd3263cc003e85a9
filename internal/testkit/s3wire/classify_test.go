package s3wire

import (
	"net/http/httptest"
	"testing"
)

func TestClassify(t *testing.T) {
	for _, c := range []struct {
		method, target string
		hdr            map[string]string
		want           Op
	}{
		{"GET", "/b?list-type=2&prefix=nodeid%2F", nil, OpList},
		{"GET", "/b?list-type=2&continuation-token=x", nil, OpList},
		{"GET", "/b/", nil, OpList},
		{"GET", "/b", nil, OpList},
		{"GET", "/b?location", nil, OpOther},
		{"GET", "/", nil, OpOther},
		{"GET", "/b/nodeid/7.json", nil, OpGet},
		{"GET", "/b/nodeid/7.json?location", nil, OpGet},
		{"HEAD", "/b/nodeid/7.json", nil, OpHead},
		{"HEAD", "/b", nil, OpHead},
		{"HEAD", "/", nil, OpOther},
		{"PUT", "/b/nodeid/7.json", map[string]string{"If-None-Match": "*"}, OpCreate},
		{"PUT", "/b/nodeid/7.json", map[string]string{"If-Match": `"abc"`}, OpUpdate},
		{"PUT", "/b/nodeid/7.json", map[string]string{"If-None-Match": "*", "If-Match": `"abc"`}, OpCreate},
		{"PUT", "/b/nodeid/7.json", nil, OpPut},
		{"PUT", "/b", nil, OpOther},
		{"PUT", "/b/", map[string]string{"If-None-Match": "*"}, OpOther},
		{"DELETE", "/b/nodeid/7.json", nil, OpOther},
		{"POST", "/b?delete", nil, OpOther},
		{"GET", "/b/nodeid/7.json", map[string]string{"If-Match": `"abc"`}, OpGet},
	} {
		r := httptest.NewRequest(c.method, c.target, nil)
		for k, v := range c.hdr {
			r.Header.Set(k, v)
		}
		if got := Classify(r); got != c.want {
			t.Errorf("%s %s %v: %s, want %s", c.method, c.target, c.hdr, got, c.want)
		}
	}
}
