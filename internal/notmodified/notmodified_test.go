package notmodified_test

import (
	"errors"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/nodeid/nodeid/internal/notmodified"
	"github.com/nodeid/nodeid/lease"
)

var (
	date     = time.Date(2026, 3, 4, 5, 6, 7, 0, time.UTC)
	modified = date.Add(-time.Hour)
)

// header builds a 304's headers from name, value pairs.
func header(kv ...string) http.Header {
	h := http.Header{}
	for i := 0; i+1 < len(kv); i += 2 {
		h.Set(kv[i], kv[i+1])
	}
	return h
}

// version is a Proof as a store with its own version header would write it
// (gcsstore's x-goog-generation is tested with gcsstore): X-Version holds
// v<n>, naming the ETag "<n>".
var version = notmodified.Proof{
	Header: "x-version",
	Shown: func(h http.Header) (string, string) {
		text := h.Get("X-Version")
		n, ok := strings.CutPrefix(text, "v")
		if !ok || n == "" {
			return text, ""
		}
		return text, `"` + n + `"`
	},
	Unproven: func(key, etag, text string) error {
		return fmt.Errorf("%w: %s: asked %s, shown %q", lease.ErrNotModifiedUnproven, key, etag, text)
	},
}

func TestRead(t *testing.T) {
	httpDate := date.Format(http.TimeFormat)
	httpModified := modified.Format(http.TimeFormat)
	tests := []struct {
		name     string
		etag     string // asked for
		h        http.Header
		p        notmodified.Proof
		want     error // ErrNotModified or ErrNotModifiedUnproven
		wantMeta lease.Meta
		wantMsg  string // the whole message
	}{
		{name: "ETag equal, with Date and Last-Modified", etag: `"e1"`,
			h: header("ETag", `"e1"`, "Date", httpDate, "Last-Modified", httpModified), p: notmodified.ETag,
			want: lease.ErrNotModified, wantMeta: lease.Meta{ETag: `"e1"`, Date: date, LastModified: modified},
			wantMsg: `s3store: get 7.json: lease: not modified (HTTP 304, ETag "e1")`},
		{name: "ETag equal, without Last-Modified", etag: `"e1"`,
			h: header("ETag", `"e1"`, "Date", httpDate), p: notmodified.ETag,
			want: lease.ErrNotModified, wantMeta: lease.Meta{ETag: `"e1"`, Date: date},
			wantMsg: `s3store: get 7.json: lease: not modified (HTTP 304, ETag "e1")`},
		{name: "ETag equal, Date and Last-Modified that do not parse", etag: `"e1"`,
			h: header("ETag", `"e1"`, "Date", "yesterday", "Last-Modified", "2026-03-04"), p: notmodified.ETag,
			want: lease.ErrNotModified, wantMeta: lease.Meta{ETag: `"e1"`},
			wantMsg: `s3store: get 7.json: lease: not modified (HTTP 304, ETag "e1")`},
		{name: "ETag equal once quoted (header unquoted)", etag: `"e1"`,
			h: header("ETag", `e1`, "Date", httpDate), p: notmodified.ETag,
			want: lease.ErrNotModified, wantMeta: lease.Meta{ETag: `"e1"`, Date: date},
			wantMsg: `s3store: get 7.json: lease: not modified (HTTP 304, ETag "e1")`},
		{name: "ETag equal once quoted (asked unquoted)", etag: `e1`,
			h: header("ETag", `"e1"`, "Date", httpDate), p: notmodified.ETag,
			want: lease.ErrNotModified, wantMeta: lease.Meta{ETag: `"e1"`, Date: date},
			wantMsg: `s3store: get 7.json: lease: not modified (HTTP 304, ETag "e1")`},
		{name: "Date in RFC 850 form, in UTC", etag: `"e1"`,
			h: header("ETag", `"e1"`, "Date", date.Format(time.RFC850)), p: notmodified.ETag,
			want: lease.ErrNotModified, wantMeta: lease.Meta{ETag: `"e1"`, Date: date},
			wantMsg: `s3store: get 7.json: lease: not modified (HTTP 304, ETag "e1")`},
		{name: "another ETag", etag: `"e1"`,
			h: header("ETag", `"e2"`, "Date", httpDate, "Last-Modified", httpModified), p: notmodified.ETag,
			want:    lease.ErrNotModifiedUnproven,
			wantMsg: `s3store: get 7.json: lease: a 304 Not Modified answer that does not show the ETag asked for: 7.json: the store answered 304 to If-None-Match: "e1" with ETag "e2"`},
		{name: "weak ETag of the same value", etag: `"e1"`,
			h: header("ETag", `W/"e1"`), p: notmodified.ETag,
			want:    lease.ErrNotModifiedUnproven,
			wantMsg: `s3store: get 7.json: lease: a 304 Not Modified answer that does not show the ETag asked for: 7.json: the store answered 304 to If-None-Match: "e1" with ETag W/"e1"`},
		{name: "without ETag", etag: `"e1"`,
			h: header("Date", httpDate), p: notmodified.ETag,
			want:    lease.ErrNotModifiedUnproven,
			wantMsg: `s3store: get 7.json: lease: a 304 Not Modified answer that does not show the ETag asked for: 7.json: the store answered 304 to If-None-Match: "e1" without an ETag header, so it does not show what it compared`},
		{name: "version header equal", etag: `"5"`,
			h: header("X-Version", "v5", "Date", httpDate, "Last-Modified", httpModified), p: version,
			want: lease.ErrNotModified, wantMeta: lease.Meta{ETag: `"5"`, Date: date, LastModified: modified},
			wantMsg: `s3store: get 7.json: lease: not modified (HTTP 304, x-version v5)`},
		{name: "version header equal, ETag header ignored", etag: `"5"`,
			h: header("X-Version", "v5", "ETag", `"other"`), p: version,
			want: lease.ErrNotModified, wantMeta: lease.Meta{ETag: `"5"`},
			wantMsg: `s3store: get 7.json: lease: not modified (HTTP 304, x-version v5)`},
		{name: "version header of another version", etag: `"5"`,
			h: header("X-Version", "v6", "Date", httpDate), p: version,
			want:    lease.ErrNotModifiedUnproven,
			wantMsg: `s3store: get 7.json: lease: a 304 Not Modified answer that does not show the ETag asked for: 7.json: asked "5", shown "v6"`},
		{name: "version header that names no ETag", etag: `"5"`,
			h: header("X-Version", "5"), p: version,
			want:    lease.ErrNotModifiedUnproven,
			wantMsg: `s3store: get 7.json: lease: a 304 Not Modified answer that does not show the ETag asked for: 7.json: asked "5", shown "5"`},
		{name: "without the version header, an equal ETag header", etag: `"5"`,
			h: header("ETag", `"5"`, "Date", httpDate), p: version,
			want:    lease.ErrNotModifiedUnproven,
			wantMsg: `s3store: get 7.json: lease: a 304 Not Modified answer that does not show the ETag asked for: 7.json: asked "5", shown ""`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m, err := notmodified.Read("s3store", "7.json", tt.etag, tt.h, tt.p)
			if !errors.Is(err, tt.want) {
				t.Fatalf("err = %v, want %v", err, tt.want)
			}
			if errors.Is(err, lease.ErrNotModified) && errors.Is(err, lease.ErrNotModifiedUnproven) {
				t.Fatalf("err = %v matches both ErrNotModified and ErrNotModifiedUnproven", err)
			}
			if err.Error() != tt.wantMsg {
				t.Errorf("message\n %s\nwant\n %s", err, tt.wantMsg)
			}
			if m != tt.wantMeta {
				t.Errorf("meta = %+v, want %+v", m, tt.wantMeta)
			}
			if m.Date.Location() != time.UTC || m.LastModified.Location() != time.UTC {
				t.Errorf("meta times %v, %v not in UTC", m.Date.Location(), m.LastModified.Location())
			}
		})
	}
}

// The store's name begins every message, as each store's own messages do.
func TestReadNamesTheStore(t *testing.T) {
	for _, store := range []string{"s3store", "azblobstore", "gcsstore"} {
		_, err := notmodified.Read(store, "k", `"e"`, header("ETag", `"e"`), notmodified.ETag)
		if want := store + ": get k: "; !strings.HasPrefix(err.Error(), want) {
			t.Errorf("%v does not begin %q", err, want)
		}
		_, err = notmodified.Read(store, "k", `"e"`, header(), notmodified.ETag)
		if want := store + ": get k: "; !strings.HasPrefix(err.Error(), want) {
			t.Errorf("%v does not begin %q", err, want)
		}
	}
}
