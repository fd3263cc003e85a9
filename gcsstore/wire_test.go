package gcsstore_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"google.golang.org/api/googleapi"

	"github.com/nodeid/nodeid/gcsstore"
	"github.com/nodeid/nodeid/lease"
)

// fakeServer is an httptest server that answers every request with reply and
// counts the requests by method.
type fakeServer struct {
	url         string
	posts, gets atomic.Int32
	lastQuery   atomic.Value // the last upload's raw query
	reply       func(w http.ResponseWriter, r *http.Request)
}

func newFakeServer(t *testing.T, reply func(w http.ResponseWriter, r *http.Request)) *fakeServer {
	t.Helper()
	f := &fakeServer{reply: reply}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		switch r.Method {
		case http.MethodPost:
			f.posts.Add(1)
			f.lastQuery.Store(r.URL.RawQuery)
		case http.MethodGet:
			f.gets.Add(1)
		}
		f.reply(w, r)
	}))
	t.Cleanup(srv.Close)
	f.url = srv.URL
	return f
}

// gcsError answers as Cloud Storage's JSON API does on an error.
func gcsError(status int, reason string) func(http.ResponseWriter, *http.Request) {
	return func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		fmt.Fprintf(w, `{"error":{"code":%d,"message":"%s","errors":[{"domain":"global","reason":"%s","message":"%s","locationType":"header","location":"Authorization"}]}}`,
			status, http.StatusText(status), reason, http.StatusText(status))
	}
}

// reset closes the connection without an answer, after the request arrived.
func reset(w http.ResponseWriter, r *http.Request) {
	conn, _, err := w.(http.Hijacker).Hijack()
	if err != nil {
		panic(err)
	}
	if tc, ok := conn.(*net.TCPConn); ok {
		_ = tc.SetLinger(0) // RST, not FIN
	}
	_ = conn.Close()
}

func wireStore(t *testing.T, url string, timeout time.Duration) *gcsstore.Store {
	t.Helper()
	c := gcsstore.DefaultConfig()
	c.Endpoint = url + "/storage/v1/"
	c.NoAuth = true
	c.Bucket = "nodeid"
	c.RequestTimeout = timeout
	st, err := gcsstore.New(c)
	if err != nil {
		t.Fatal(err)
	}
	return st
}

// oneLine fails the test unless err's text is one line of at most 400
// characters that keeps the answer (its status, reason and message) but not
// googleapi's details, the URL and its query.
func oneLine(t *testing.T, err error) {
	t.Helper()
	text := err.Error()
	if strings.Contains(text, "\n") || len(text) > 400 || strings.Contains(text, "uploadType") || strings.Contains(text, "googleapi") {
		t.Fatalf("error text of %d characters, want one line of at most 400 without the client's details and URL: %q", len(text), text)
	}
	var ge *googleapi.Error
	if errors.As(err, &ge) && !strings.Contains(text, fmt.Sprintf("HTTP %d %s: %s", ge.Code, ge.Errors[0].Reason, ge.Message)) {
		t.Fatalf("error %q does not say the answer: HTTP %d, its reason and message", text, ge.Code)
	}
}

// TestWriteAnswers checks how each answer to a conditional upload maps onto
// the lease errors, and that a write is sent exactly once whatever the answer
// (the client's retries are off).
func TestWriteAnswers(t *testing.T) {
	slow := func(w http.ResponseWriter, r *http.Request) { time.Sleep(2 * time.Second) }
	tests := []struct {
		name     string
		reply    func(http.ResponseWriter, *http.Request)
		update   bool
		want     error // errors.Is target; nil for a plain error
		unknown  bool
		conflict bool
	}{
		{name: "412 on create", reply: gcsError(412, "conditionNotMet"), want: lease.ErrPreconditionFailed},
		{name: "412 on update", reply: gcsError(412, "conditionNotMet"), update: true, want: lease.ErrPreconditionFailed},
		{name: "409 on update", reply: gcsError(409, "conflict"), update: true, want: lease.ErrConflict, conflict: true},
		{name: "503 on create", reply: gcsError(503, "backendError"), want: lease.ErrUnknownOutcome, unknown: true},
		{name: "500 on update", reply: gcsError(500, "internalError"), update: true, want: lease.ErrUnknownOutcome, unknown: true},
		{name: "429 on update", reply: gcsError(429, "rateLimitExceeded"), update: true, want: lease.ErrUnknownOutcome, unknown: true},
		{name: "408 on create", reply: gcsError(408, "requestTimeout"), want: lease.ErrUnknownOutcome, unknown: true},
		{name: "reset connection", reply: reset, want: lease.ErrUnknownOutcome, unknown: true},
		{name: "timeout in flight", reply: slow, update: true, want: lease.ErrUnknownOutcome, unknown: true},
		{name: "200 that is not an object", reply: func(w http.ResponseWriter, r *http.Request) { _, _ = io.WriteString(w, "<html>hello</html>") },
			want: lease.ErrUnknownOutcome, unknown: true},
		{name: "401", reply: gcsError(401, "required"), want: lease.ErrMisconfigured},
		{name: "403", reply: gcsError(403, "forbidden"), update: true, want: lease.ErrMisconfigured},
		{name: "404 bucket", reply: gcsError(404, "notFound"), want: lease.ErrMisconfigured},
		{name: "400", reply: gcsError(400, "invalid")},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := newFakeServer(t, tc.reply)
			st := wireStore(t, f.url, 500*time.Millisecond)
			var err error
			if tc.update {
				_, err = st.Update(context.Background(), "7.json", []byte("x"), `"1701234567890123"`)
			} else {
				_, err = st.Create(context.Background(), "7.json", []byte("x"))
			}
			t.Logf("%v", err)
			if err == nil {
				t.Fatal("write succeeded")
			}
			oneLine(t, err)
			if n := f.posts.Load(); n != 1 {
				t.Fatalf("the write was sent %d times, want once", n)
			}
			q, _ := f.lastQuery.Load().(string)
			wantCond := "ifGenerationMatch=0"
			if tc.update {
				wantCond = "ifGenerationMatch=1701234567890123"
			}
			if !strings.Contains(q, wantCond) || !strings.Contains(q, "uploadType=multipart") {
				t.Fatalf("upload query %q, want %s and uploadType=multipart", q, wantCond)
			}
			if tc.want != nil && !errors.Is(err, tc.want) {
				t.Fatalf("error = %v, want it to match %v", err, tc.want)
			}
			var uo *lease.UnknownOutcomeError
			if errors.As(err, &uo) != tc.unknown {
				t.Fatalf("error = %v: unknown outcome %v, want %v", err, !tc.unknown, tc.unknown)
			}
			if !tc.unknown && errors.Is(err, lease.ErrUnknownOutcome) {
				t.Fatalf("error = %v matches ErrUnknownOutcome", err)
			}
			if tc.want != lease.ErrPreconditionFailed && !tc.conflict && errors.Is(err, lease.ErrPreconditionFailed) {
				t.Fatalf("error = %v matches ErrPreconditionFailed: it would look like a lost race", err)
			}
			if tc.want == nil && (errors.Is(err, lease.ErrPreconditionFailed) || errors.Is(err, lease.ErrMisconfigured)) {
				t.Fatalf("error = %v, want a plain error", err)
			}
		})
	}
}

// TestWriteNeverSent: a connection refused and an unknown host are not
// written (a misconfiguration), never an unknown outcome, and say so in one
// line, without the request's URL.
func TestWriteNeverSent(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closed := "http://" + l.Addr().String()
	_ = l.Close()
	for what, url := range map[string]string{"connection refused": closed, "unknown host": "http://nodeid-no-such-host.invalid"} {
		_, err := wireStore(t, url, 2*time.Second).Create(context.Background(), "7.json", []byte("x"))
		t.Logf("%s: %v", what, err)
		if errors.Is(err, lease.ErrUnknownOutcome) || errors.Is(err, lease.ErrPreconditionFailed) || err == nil {
			t.Fatalf("%s: %v, want a plain error (not written)", what, err)
		}
		oneLine(t, err)
	}
}

// TestReadsRetryAndNotFound: a download is retried (three attempts) under
// 503s; a missing object is lease.ErrNotFound; 403 on a listing is a
// misconfiguration.
func TestReadsRetryAndNotFound(t *testing.T) {
	f := newFakeServer(t, gcsError(503, "backendError"))
	if _, _, err := wireStore(t, f.url, 5*time.Second).Get(context.Background(), "7.json"); err == nil {
		t.Fatal("Get succeeded")
	}
	if n := f.gets.Load(); n != 3 {
		t.Fatalf("Get under 503s was sent %d times, want 3 (two retries)", n)
	}
	f = newFakeServer(t, gcsError(404, "notFound"))
	if _, _, err := wireStore(t, f.url, 5*time.Second).Get(context.Background(), "7.json"); !errors.Is(err, lease.ErrNotFound) {
		t.Fatalf("Get of a missing object: %v, want ErrNotFound", err)
	}
	f = newFakeServer(t, gcsError(403, "forbidden"))
	_, err := wireStore(t, f.url, 5*time.Second).List(context.Background())
	t.Logf("list, 403: %v", err)
	if !errors.Is(err, lease.ErrMisconfigured) || !strings.Contains(err.Error(), "roles/storage.objectUser") {
		t.Fatalf("List answered 403: %v, want ErrMisconfigured naming the role", err)
	}
	f = newFakeServer(t, func(w http.ResponseWriter, r *http.Request) { _, _ = io.WriteString(w, "<html>hello</html>") })
	err = wireStore(t, f.url, 5*time.Second).Check(context.Background())
	t.Logf("check, not GCS: %v", err)
	if !errors.Is(err, lease.ErrMisconfigured) {
		t.Fatalf("Check of an endpoint that is not Cloud Storage: %v, want ErrMisconfigured", err)
	}
}

// TestUpdateForeignETag: an ETag that is not a quoted generation matches
// nothing, without a request.
func TestUpdateForeignETag(t *testing.T) {
	f := newFakeServer(t, gcsError(500, "internalError"))
	st := wireStore(t, f.url, time.Second)
	for _, etag := range []string{"", `"0"`, `"-1"`, `1701234567890123`, `"0x8D000000"`, `W/"12"`, `"99999999999999999999"`} {
		if _, err := st.Update(context.Background(), "7.json", []byte("x"), etag); !errors.Is(err, lease.ErrPreconditionFailed) {
			t.Errorf("Update with ETag %q: %v, want ErrPreconditionFailed", etag, err)
		}
	}
	if n := f.posts.Load(); n != 0 {
		t.Fatalf("Updates with foreign ETags sent %d requests", n)
	}
}

func TestConfigValidate(t *testing.T) {
	good := gcsstore.DefaultConfig()
	good.Bucket = "nodeid-leases"
	if err := good.Validate(); err != nil {
		t.Fatal(err)
	}
	for name, mod := range map[string]func(*gcsstore.Config){
		"no bucket":          func(c *gcsstore.Config) { c.Bucket = "" },
		"upper case":         func(c *gcsstore.Config) { c.Bucket = "NodeID" },
		"slash":              func(c *gcsstore.Config) { c.Bucket = "nodeid/leases" },
		"short":              func(c *gcsstore.Config) { c.Bucket = "ab" },
		"starts with hyphen": func(c *gcsstore.Config) { c.Bucket = "-nodeid" },
		"slash prefix":       func(c *gcsstore.Config) { c.Prefix = "/nodeid/" },
		"bad endpoint":       func(c *gcsstore.Config) { c.Endpoint = "127.0.0.1:4443" },
		"no auth on GCS":     func(c *gcsstore.Config) { c.NoAuth = true },
		"negative timeout":   func(c *gcsstore.Config) { c.RequestTimeout = -time.Second },
	} {
		c := good
		mod(&c)
		if err := c.Validate(); err == nil {
			t.Errorf("%s: Validate accepted %+v", name, c)
		}
	}
	emu := good
	emu.Endpoint, emu.NoAuth, emu.Bucket = "http://127.0.0.1:4443/storage/v1/", true, "my_bucket.example.com"
	if err := emu.Validate(); err != nil {
		t.Errorf("emulator config: %v", err)
	}
}

// TestMinWriteInterval: the store reports Cloud Storage's one write per
// second per object, also when scoped.
func TestMinWriteInterval(t *testing.T) {
	st := wireStore(t, "http://127.0.0.1:1", time.Second)
	if got := lease.MinWriteInterval(st); got != time.Second {
		t.Fatalf("MinWriteInterval = %v, want 1s", got)
	}
	if got := lease.MinWriteInterval(lease.Scope(st, "election/x/")); got != time.Second {
		t.Fatalf("MinWriteInterval of a scoped store = %v, want 1s", got)
	}
}
