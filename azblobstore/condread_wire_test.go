package azblobstore_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/nodeid/nodeid/lease"
)

// TestGetIfChangedAnswers checks the conditional read of keep-alive by reads:
// If-None-Match on the wire, and a 304 credited only when its own ETag
// header shows the ETag asked for.
func TestGetIfChangedAnswers(t *testing.T) {
	const asked = `"0x8DB1"`
	date := time.Date(2026, 3, 4, 5, 6, 7, 0, time.UTC)
	reply := func(r *http.Request, status int, etag, body string) *http.Response {
		h := http.Header{}
		h.Set("Date", date.Format(http.TimeFormat))
		if etag != "" {
			h.Set("ETag", etag)
		}
		if status == http.StatusNotFound {
			h.Set("x-ms-error-code", "BlobNotFound")
		}
		h.Set("Content-Length", "0")
		if body != "" {
			h.Set("Content-Length", "8")
		}
		return &http.Response{StatusCode: status, Header: h, Body: io.NopCloser(strings.NewReader(body)), Request: r}
	}
	tests := []struct {
		name     string
		status   int
		etag     string
		want     error
		wantETag string
	}{
		{name: "304 with the ETag asked for", status: 304, etag: asked, want: lease.ErrNotModified, wantETag: asked},
		{name: "304 without an ETag", status: 304, want: lease.ErrNotModifiedUnproven},
		{name: "304 with another ETag", status: 304, etag: `"0x8DB2"`, want: lease.ErrNotModifiedUnproven},
		{name: "200 with a new ETag", status: 200, etag: `"0x8DB2"`, wantETag: `"0x8DB2"`},
		{name: "404", status: 404, want: lease.ErrNotFound},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var inm []string
			f := &fakeTransport{reply: func(r *http.Request) (*http.Response, error) {
				inm = append(inm, r.Header.Get("If-None-Match"))
				body := ""
				if tt.status == 200 {
					body = "new body"
				}
				return reply(r, tt.status, tt.etag, body), nil
			}}
			body, m, err := fakeStore(t, f).GetIfChanged(context.Background(), "7.json", asked)
			if len(inm) != 1 || inm[0] != asked {
				t.Fatalf("If-None-Match sent %q, want one request with %q", inm, asked)
			}
			switch {
			case tt.want == nil && err != nil:
				t.Fatalf("err = %v, want a 200", err)
			case tt.want != nil && !errors.Is(err, tt.want):
				t.Fatalf("err = %v, want %v", err, tt.want)
			case tt.want == lease.ErrNotModifiedUnproven && errors.Is(err, lease.ErrNotModified):
				t.Fatalf("err = %v matches ErrNotModified", err)
			}
			if m.ETag != tt.wantETag {
				t.Errorf("ETag = %q, want %q", m.ETag, tt.wantETag)
			}
			if tt.wantETag != "" && !m.Date.Equal(date) {
				t.Errorf("Date = %v, want %v", m.Date, date)
			}
			if tt.want == nil && string(body) != "new body" {
				t.Errorf("body = %q", body)
			}
		})
	}
}
