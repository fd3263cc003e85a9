package lease

import (
	"errors"
	"io/fs"
	"strings"
	"testing"
)

func TestMisconfiguredKeepsCauseAndText(t *testing.T) {
	cause := &fs.PathError{Op: "open", Path: "x", Err: fs.ErrNotExist}
	err := Misconfigured(cause)
	if !errors.Is(err, ErrMisconfigured) || !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("Misconfigured(%v) matches ErrMisconfigured %v, its cause %v; want both", cause, errors.Is(err, ErrMisconfigured), errors.Is(err, fs.ErrNotExist))
	}
	if err.Error() != cause.Error() {
		t.Fatalf("text %q, want the cause's %q", err, cause)
	}
	if errors.Is(cause, ErrMisconfigured) {
		t.Fatal("the cause itself matches ErrMisconfigured")
	}
}

func TestSortByKey(t *testing.T) {
	l := Listing{Objects: []ObjectInfo{{Key: "b"}, {Key: "a10"}, {Key: "a"}, {Key: "a2"}}}
	if err := l.SortByKey(); err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, o := range l.Objects {
		got = append(got, o.Key)
	}
	if strings.Join(got, ",") != "a,a10,a2,b" {
		t.Fatalf("sorted %v, want byte order a,a10,a2,b", got)
	}
	dup := Listing{Objects: []ObjectInfo{{Key: "7.json"}, {Key: "1.json"}, {Key: "7.json"}}}
	if err := dup.SortByKey(); err == nil || !strings.Contains(err.Error(), `"7.json" twice`) {
		t.Fatalf("a key listed twice gave %v, want an error naming it", err)
	}
}

func TestQuoteETag(t *testing.T) {
	for in, want := range map[string]string{"": "", "abc": `"abc"`, `"abc"`: `"abc"`, `W/"abc"`: `W/"abc"`, "0x8DC": `"0x8DC"`} {
		if got := QuoteETag(in); got != want {
			t.Errorf("QuoteETag(%q) = %q, want %q", in, got, want)
		}
	}
}
