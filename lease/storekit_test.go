package lease

import (
	"errors"
	"io"
	"io/fs"
	"strings"
	"testing"
	"testing/iotest"
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

func TestReadBody(t *testing.T) {
	if b, err := ReadBody(strings.NewReader("abc"), 3, 3); err != nil || string(b) != "abc" {
		t.Fatalf("a body of the limit: %q, %v", b, err)
	}
	if b, err := ReadBody(strings.NewReader("abc"), -1, 3); err != nil || string(b) != "abc" {
		t.Fatalf("a body of unknown size: %q, %v", b, err)
	}
	if _, err := ReadBody(strings.NewReader("abcd"), 4, 3); !errors.Is(err, ErrCorrupt) || !strings.Contains(err.Error(), "4 bytes") {
		t.Fatalf("a declared size over the limit: %v, want ErrCorrupt naming the size", err)
	}
	if _, err := ReadBody(strings.NewReader("abcd"), -1, 3); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("a body over the limit, size unknown: %v, want ErrCorrupt", err)
	}
	if _, err := ReadBody(iotest.ErrReader(io.ErrUnexpectedEOF), -1, 3); !errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, ErrCorrupt) {
		t.Fatalf("a failed read: %v, want it as it is, not corrupt", err)
	}
}

func TestReadVersionBody(t *testing.T) {
	meta := Meta{ETag: `"v1"`}
	errBad := errors.New("checksum did not match")
	bad := func(err error) bool { return errors.Is(err, errBad) }
	var be *BodyError
	if b, err := ReadVersionBody(strings.NewReader("abc"), 3, 3, meta, bad); err != nil || string(b) != "abc" {
		t.Fatalf("a good body: %q, %v", b, err)
	}
	if _, err := ReadVersionBody(strings.NewReader("abcd"), 4, 3, meta, bad); !errors.As(err, &be) || !errors.Is(err, ErrCorrupt) || be.Meta != meta {
		t.Fatalf("a body too large: %v, want a BodyError with the Meta, wrapping ErrCorrupt", err)
	}
	r := io.MultiReader(strings.NewReader("ab"), iotest.ErrReader(errBad))
	_, err := ReadVersionBody(r, 2, 3, meta, bad)
	if !errors.As(err, &be) || !errors.Is(err, ErrChecksumMismatch) || errors.Is(err, ErrCorrupt) || be.Meta != meta || string(be.Body) != "ab" {
		t.Fatalf("a body failing its checksum: %v (%+v), want a BodyError with the Meta and the body, wrapping ErrChecksumMismatch only", err, be)
	}
	if _, err := ReadVersionBody(iotest.ErrReader(io.ErrUnexpectedEOF), -1, 3, meta, bad); errors.As(err, &be) || !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Fatalf("a failed read: %v, want it as it is", err)
	}
	if _, err := ReadVersionBody(iotest.ErrReader(errBad), -1, 3, meta, nil); errors.As(err, &be) {
		t.Fatalf("no checksum test: %v, want the read error as it is", err)
	}
}
