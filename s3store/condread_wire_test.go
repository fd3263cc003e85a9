package s3store_test

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"testing"

	"github.com/nodeid/nodeid/lease"
)

// The conditional read of keep-alive by reads: If-None-Match on the wire,
// and a 304 credited only when its own ETag header shows the ETag asked for.

func TestGetIfChangedAnswers(t *testing.T) {
	const asked = `"aaa"`
	tests := []struct {
		name     string
		reply    func(w http.ResponseWriter)
		want     error // matched with errors.Is; nil: a 200
		notWant  error
		wantETag string
		wantMsg  string
	}{
		{name: "304 with the ETag asked for", reply: func(w http.ResponseWriter) {
			w.Header().Set("ETag", asked)
			w.Header().Set("Last-Modified", serverDate.Format(http.TimeFormat))
			w.WriteHeader(http.StatusNotModified)
		}, want: lease.ErrNotModified, wantETag: asked},
		{name: "304 with an unquoted ETag", reply: func(w http.ResponseWriter) {
			w.Header().Set("ETag", "aaa")
			w.WriteHeader(http.StatusNotModified)
		}, want: lease.ErrNotModified, wantETag: asked},
		{name: "304 without an ETag", reply: func(w http.ResponseWriter) {
			w.WriteHeader(http.StatusNotModified)
		}, want: lease.ErrNotModifiedUnproven, notWant: lease.ErrNotModified, wantMsg: "without an ETag header"},
		{name: "304 with another ETag", reply: func(w http.ResponseWriter) {
			w.Header().Set("ETag", `"bbb"`)
			w.WriteHeader(http.StatusNotModified)
		}, want: lease.ErrNotModifiedUnproven, notWant: lease.ErrNotModified, wantMsg: `with ETag "bbb"`},
		{name: "304 with a weak ETag", reply: func(w http.ResponseWriter) {
			w.Header().Set("ETag", `W/"aaa"`)
			w.WriteHeader(http.StatusNotModified)
		}, want: lease.ErrNotModifiedUnproven, notWant: lease.ErrNotModified},
		{name: "200 with a new ETag", reply: func(w http.ResponseWriter) {
			w.Header().Set("ETag", `"ccc"`)
			w.Header().Set("Last-Modified", serverDate.Format(http.TimeFormat))
			_, _ = w.Write([]byte("new body"))
		}, wantETag: `"ccc"`},
		{name: "404", reply: func(w http.ResponseWriter) { s3Error(w, http.StatusNotFound, "NoSuchKey") }, want: lease.ErrNotFound},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var inm []string
			f := newFakeS3(t, func(w http.ResponseWriter, r *http.Request, _ int) {
				if r.Method != http.MethodGet {
					t.Errorf("method %s", r.Method)
				}
				inm = append(inm, r.Header.Get("If-None-Match"))
				tt.reply(w)
			})
			s := newStore(t, f.URL)
			body, m, err := s.GetIfChanged(context.Background(), "7.json", asked)
			if len(inm) != 1 || inm[0] != asked {
				t.Fatalf("If-None-Match sent %q, want one request with %q", inm, asked)
			}
			switch {
			case tt.want == nil && err != nil:
				t.Fatalf("err = %v, want a 200", err)
			case tt.want != nil && !errors.Is(err, tt.want):
				t.Fatalf("err = %v, want %v", err, tt.want)
			case tt.notWant != nil && errors.Is(err, tt.notWant):
				t.Fatalf("err = %v matches %v", err, tt.notWant)
			case tt.wantMsg != "" && !strings.Contains(err.Error(), tt.wantMsg):
				t.Fatalf("err = %v, want it to say %q", err, tt.wantMsg)
			}
			if m.ETag != tt.wantETag {
				t.Errorf("ETag = %q, want %q", m.ETag, tt.wantETag)
			}
			if tt.wantETag != "" && !m.Date.Equal(serverDate) {
				t.Errorf("Date = %v, want %v", m.Date, serverDate)
			}
			if tt.want == nil && string(body) != "new body" {
				t.Errorf("body = %q", body)
			}
			if errors.Is(err, lease.ErrNotModified) && (body != nil || !m.LastModified.IsZero() && !m.LastModified.Equal(serverDate)) {
				t.Errorf("304: body %q, Last-Modified %v", body, m.LastModified)
			}
		})
	}
}

func TestGetIfChangedEmptyETagIsAPlainGet(t *testing.T) {
	f := newFakeS3(t, func(w http.ResponseWriter, r *http.Request, _ int) {
		if _, ok := r.Header["If-None-Match"]; ok {
			t.Errorf("If-None-Match sent: %q", r.Header.Get("If-None-Match"))
		}
		w.Header().Set("ETag", `"ccc"`)
		_, _ = w.Write([]byte("body"))
	})
	if _, m, err := newStore(t, f.URL).GetIfChanged(context.Background(), "7.json", ""); err != nil || m.ETag != `"ccc"` {
		t.Fatalf("GetIfChanged = %+v, %v", m, err)
	}
}

// TestGetIfChangedIsRetried checks that a conditional read is retried as a
// Get is (a 503, then the 304), each attempt carrying the condition: the
// answer a caller gets may come from a later attempt than the first send,
// which is why a holder credits it to its first send only.
func TestGetIfChangedIsRetried(t *testing.T) {
	const asked = `"aaa"`
	f := newFakeS3(t, func(w http.ResponseWriter, r *http.Request, n int) {
		if got := r.Header.Get("If-None-Match"); got != asked {
			t.Errorf("attempt %d: If-None-Match %q", n, got)
		}
		if n == 1 {
			s3Error(w, http.StatusServiceUnavailable, "SlowDown")
			return
		}
		w.Header().Set("ETag", asked)
		w.WriteHeader(http.StatusNotModified)
	})
	_, m, err := newStore(t, f.URL).GetIfChanged(context.Background(), "7.json", asked)
	if !errors.Is(err, lease.ErrNotModified) || m.ETag != asked || f.requests() != 2 {
		t.Fatalf("GetIfChanged = %+v, %v after %d requests; want ErrNotModified after 2", m, err, f.requests())
	}
}
