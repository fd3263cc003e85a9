package gcsstore_test

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nodeid/nodeid/lease"
)

// The conditional read of keep-alive by reads: ifGenerationNotMatch on the
// wire, and a 304 credited only when its own x-goog-generation header shows
// the generation asked for.

const (
	askedGen  = "1701234567890123"
	askedETag = `"` + askedGen + `"`
	newGen    = "1701234567890999"
)

var condDate = time.Date(2026, 3, 4, 5, 6, 7, 0, time.UTC)

// condQueries records the query of each download the server saw.
type condQueries struct {
	mu sync.Mutex
	qs []map[string][]string
}

func (c *condQueries) add(r *http.Request) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.qs = append(c.qs, r.URL.Query())
}

func (c *condQueries) get() []map[string][]string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.qs
}

// notModifiedReply answers 304 with the headers given (name, value, ...)
// and the Date.
func notModifiedReply(kv ...string) func(http.ResponseWriter, *http.Request) {
	return func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Date", condDate.Format(http.TimeFormat))
		for i := 0; i+1 < len(kv); i += 2 {
			w.Header().Set(kv[i], kv[i+1])
		}
		w.WriteHeader(http.StatusNotModified)
	}
}

// objectReply answers 200 with body as a download of generation gen.
func objectReply(gen, body string) func(http.ResponseWriter, *http.Request) {
	return func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Date", condDate.Format(http.TimeFormat))
		w.Header().Set("Last-Modified", condDate.Add(-time.Second).Format(http.TimeFormat))
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("X-Goog-Generation", gen)
		w.Header().Set("X-Goog-Metageneration", "1")
		_, _ = w.Write([]byte(body))
	}
}

func TestGetIfChangedAnswers(t *testing.T) {
	tests := []struct {
		name     string
		reply    func(http.ResponseWriter, *http.Request)
		want     error // matched with errors.Is; nil: a 200
		wantETag string
		wantMsg  string
		wantBody string
	}{
		{name: "304 with the generation asked for",
			reply: notModifiedReply("X-Goog-Generation", askedGen, "Last-Modified", condDate.Add(-time.Second).Format(http.TimeFormat)),
			want:  lease.ErrNotModified, wantETag: askedETag},
		{name: "304 without x-goog-generation", reply: notModifiedReply(),
			want: lease.ErrNotModifiedUnproven, wantMsg: "without an x-goog-generation header"},
		{name: "304 with another generation", reply: notModifiedReply("X-Goog-Generation", newGen),
			want: lease.ErrNotModifiedUnproven, wantMsg: `x-goog-generation "` + newGen + `"`},
		{name: "304 with a generation that is not a number", reply: notModifiedReply("X-Goog-Generation", "abc"),
			want: lease.ErrNotModifiedUnproven},
		// Cloud Storage's own ETag is not the generation: an ETag header,
		// even one equal to the ETag asked for, shows nothing.
		{name: "304 with an ETag header alone", reply: notModifiedReply("ETag", askedETag),
			want: lease.ErrNotModifiedUnproven, wantMsg: "without an x-goog-generation header"},
		{name: "200 with a new generation", reply: objectReply(newGen, `{"writeId":"b"}`),
			wantETag: `"` + newGen + `"`, wantBody: `{"writeId":"b"}`},
		// A server that ignores the condition (fake-gcs-server v1.56.1).
		{name: "200 with the generation asked for", reply: objectReply(askedGen, `{"writeId":"a"}`),
			wantETag: askedETag, wantBody: `{"writeId":"a"}`},
		{name: "404", reply: gcsError(404, "notFound"), want: lease.ErrNotFound},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var seen condQueries
			f := newFakeServer(t, func(w http.ResponseWriter, r *http.Request) {
				seen.add(r)
				tt.reply(w, r)
			})
			body, m, err := wireStore(t, f.url, 5*time.Second).GetIfChanged(context.Background(), "7.json", askedETag)
			t.Logf("%q, %+v, %v", body, m, err)
			qs := seen.get()
			if len(qs) != 1 || f.gets.Load() != 1 {
				t.Fatalf("%d requests (%d GETs), want one GET", len(qs), f.gets.Load())
			}
			if q := qs[0]; len(q["ifGenerationNotMatch"]) != 1 || q["ifGenerationNotMatch"][0] != askedGen || q["alt"][0] != "media" {
				t.Fatalf("query %v, want alt=media and ifGenerationNotMatch=%s", q, askedGen)
			}
			switch {
			case tt.want == nil && err != nil:
				t.Fatalf("err = %v, want a 200", err)
			case tt.want != nil && !errors.Is(err, tt.want):
				t.Fatalf("err = %v, want %v", err, tt.want)
			case tt.want != lease.ErrNotModified && errors.Is(err, lease.ErrNotModified):
				t.Fatalf("err = %v matches ErrNotModified", err)
			case tt.want == lease.ErrNotModified && errors.Is(err, lease.ErrNotModifiedUnproven):
				t.Fatalf("err = %v matches ErrNotModifiedUnproven too", err)
			case tt.wantMsg != "" && !strings.Contains(err.Error(), tt.wantMsg):
				t.Fatalf("err = %v, want it to say %q", err, tt.wantMsg)
			}
			if m.ETag != tt.wantETag {
				t.Errorf("ETag = %q, want %q", m.ETag, tt.wantETag)
			}
			if tt.wantETag != "" {
				if !m.Date.Equal(condDate) {
					t.Errorf("Date = %v, want %v", m.Date, condDate)
				}
				if want := condDate.Add(-time.Second); !m.LastModified.Equal(want) {
					t.Errorf("LastModified = %v, want %v", m.LastModified, want)
				}
			}
			if string(body) != tt.wantBody {
				t.Errorf("body = %q, want %q", body, tt.wantBody)
			}
		})
	}
}

// TestGetIfChangedRetries: a conditional read is retried as Get is (three
// attempts under 503s), carrying the condition on every attempt, and a 304
// after the retries is credited like a first one.
func TestGetIfChangedRetries(t *testing.T) {
	var seen condQueries
	f := newFakeServer(t, func(w http.ResponseWriter, r *http.Request) {
		seen.add(r)
		if len(seen.get()) < 3 {
			gcsError(503, "backendError")(w, r)
			return
		}
		notModifiedReply("X-Goog-Generation", askedGen)(w, r)
	})
	_, m, err := wireStore(t, f.url, 5*time.Second).GetIfChanged(context.Background(), "7.json", askedETag)
	if !errors.Is(err, lease.ErrNotModified) || m.ETag != askedETag || !m.Date.Equal(condDate) {
		t.Fatalf("GetIfChanged after two 503s = %+v, %v; want ErrNotModified with ETag %s and the 304's Date", m, err, askedETag)
	}
	qs := seen.get()
	if len(qs) != 3 {
		t.Fatalf("%d attempts, want 3", len(qs))
	}
	for i, q := range qs {
		if got := q["ifGenerationNotMatch"]; len(got) != 1 || got[0] != askedGen {
			t.Errorf("attempt %d: ifGenerationNotMatch %q, want %s", i+1, got, askedGen)
		}
	}
}

// TestGetIfChangedForeignETag: an ETag that is not one this store returns
// names no generation: the read is a plain download, without a condition.
func TestGetIfChangedForeignETag(t *testing.T) {
	for _, etag := range []string{"", `"0"`, `"-1"`, askedGen, `"0x8DB1"`, `W/"12"`, `"012"`, `"99999999999999999999"`} {
		var seen condQueries
		f := newFakeServer(t, func(w http.ResponseWriter, r *http.Request) {
			seen.add(r)
			objectReply(newGen, "x")(w, r)
		})
		body, m, err := wireStore(t, f.url, 5*time.Second).GetIfChanged(context.Background(), "7.json", etag)
		if err != nil || string(body) != "x" || m.ETag != `"`+newGen+`"` {
			t.Errorf("GetIfChanged(%q) = %q, %+v, %v; want the object", etag, body, m, err)
			continue
		}
		if qs := seen.get(); len(qs) != 1 || len(qs[0]["ifGenerationNotMatch"]) != 0 {
			t.Errorf("GetIfChanged(%q) sent %v, want one download without ifGenerationNotMatch", etag, qs)
		}
	}
}
