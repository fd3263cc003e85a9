package s3store_test

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

	"github.com/nodeid/nodeid/lease"
	"github.com/nodeid/nodeid/s3store"
)

// These tests put an httptest server in S3's place and check what goes over the
// wire: the conditional headers, that a conditional PUT is sent exactly once
// whatever happens, that GETs are retried, that Date is captured and that a
// listing follows continuation tokens.

var serverDate = time.Date(2026, 3, 4, 5, 6, 7, 0, time.UTC)

// fakeS3 is an httptest server whose handler the test sets; it counts requests.
type fakeS3 struct {
	*httptest.Server
	n       atomic.Int64
	handler func(w http.ResponseWriter, r *http.Request, n int)
}

func newFakeS3(t *testing.T, h func(w http.ResponseWriter, r *http.Request, n int)) *fakeS3 {
	f := &fakeS3{handler: h}
	f.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n := int(f.n.Add(1))
		w.Header().Set("Date", serverDate.Format(http.TimeFormat))
		f.handler(w, r, n)
	}))
	t.Cleanup(f.Close)
	return f
}

func (f *fakeS3) requests() int { return int(f.n.Load()) }

func testConfig(endpoint string) s3store.Config {
	c := s3store.DefaultConfig()
	c.Bucket = "bucket"
	c.Endpoint = endpoint
	c.UsePathStyle = true
	c.Region = "us-east-1"
	c.AccessKeyID = "AKIDTEST"
	c.SecretAccessKey = "secret"
	c.RequestTimeout = 3 * time.Second
	return c
}

func newStore(t *testing.T, endpoint string, mods ...func(*s3store.Config)) *s3store.Store {
	t.Helper()
	c := testConfig(endpoint)
	for _, m := range mods {
		m(&c)
	}
	s, err := s3store.New(context.Background(), c)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func s3Error(w http.ResponseWriter, status int, code string) {
	w.Header().Set("Content-Type", "application/xml")
	w.WriteHeader(status)
	fmt.Fprintf(w, `<?xml version="1.0" encoding="UTF-8"?><Error><Code>%s</Code><Message>test says %s</Message><RequestId>r1</RequestId></Error>`, code, code)
}

func TestCreateSendsIfNoneMatchStar(t *testing.T) {
	f := newFakeS3(t, func(w http.ResponseWriter, r *http.Request, _ int) {
		body, _ := io.ReadAll(r.Body)
		switch {
		case r.Method != http.MethodPut || r.URL.Path != "/bucket/nodeid/7.json":
			t.Errorf("got %s %s, want PUT /bucket/nodeid/7.json", r.Method, r.URL.Path)
		case r.Header.Get("If-None-Match") != "*":
			t.Errorf("If-None-Match = %q, want *", r.Header.Get("If-None-Match"))
		case r.Header.Get("If-Match") != "":
			t.Errorf("create sent If-Match %q", r.Header.Get("If-Match"))
		case string(body) != `{"x":1}`:
			t.Errorf("body = %q", body)
		}
		w.Header().Set("ETag", `"e1"`)
	})
	m, err := newStore(t, f.URL).Create(context.Background(), "7.json", []byte(`{"x":1}`))
	if err != nil {
		t.Fatal(err)
	}
	if m.ETag != `"e1"` || !m.Date.Equal(serverDate) || !m.LastModified.IsZero() {
		t.Errorf("Meta = %+v, want ETag \"e1\", Date %v and no LastModified", m, serverDate)
	}
}

func TestUpdateSendsIfMatch(t *testing.T) {
	f := newFakeS3(t, func(w http.ResponseWriter, r *http.Request, _ int) {
		if got := r.Header.Get("If-Match"); got != `"e1"` {
			t.Errorf("If-Match = %q, want \"e1\"", got)
		}
		if got := r.Header.Get("If-None-Match"); got != "" {
			t.Errorf("update sent If-None-Match %q", got)
		}
		w.Header().Set("ETag", `"e2"`)
	})
	m, err := newStore(t, f.URL).Update(context.Background(), "7.json", []byte("b"), `"e1"`)
	if err != nil {
		t.Fatal(err)
	}
	if m.ETag != `"e2"` || !m.Date.Equal(serverDate) {
		t.Errorf("Meta = %+v", m)
	}
}

func TestUpdateEmptyETagSendsNothing(t *testing.T) {
	f := newFakeS3(t, func(w http.ResponseWriter, r *http.Request, _ int) { w.Header().Set("ETag", `"e"`) })
	_, err := newStore(t, f.URL).Update(context.Background(), "7.json", []byte("b"), "")
	if !errors.Is(err, lease.ErrPreconditionFailed) {
		t.Fatalf("error = %v, want ErrPreconditionFailed", err)
	}
	if f.requests() != 0 {
		t.Fatalf("%d requests sent for an empty ETag: an If-Match without a value would be an unconditional PUT", f.requests())
	}
}

// TestWriteAnswers checks how every kind of answer to a conditional PUT is
// classified, and that the PUT is sent exactly once whatever the answer (the
// SDK would retry a 500 or a 503 three times).
func TestWriteAnswers(t *testing.T) {
	const (
		precondition  = "precondition"
		conflict      = "conflict"
		unknown       = "unknown"
		plain         = "plain"
		misconfigured = "misconfigured"
	)
	tests := []struct {
		status int
		code   string
		want   map[string]string // op -> class
		msg    string            // in the error text
	}{
		{412, "PreconditionFailed", map[string]string{"create": precondition, "update": precondition}, "HTTP 412 PreconditionFailed"},
		// 409: not applied, and who won is unknown (AWS: re-read the ETag).
		{409, "ConditionalRequestConflict", map[string]string{"create": conflict, "update": conflict}, "HTTP 409 ConditionalRequestConflict"},
		{404, "NoSuchKey", map[string]string{"update": precondition}, "HTTP 404 NoSuchKey"},
		{404, "NoSuchBucket", map[string]string{"create": misconfigured, "update": misconfigured}, `bucket "bucket" does not exist`},
		{404, "XAdminUserNotFound", map[string]string{"create": misconfigured, "update": misconfigured}, "does not know the access key ID"},
		{403, "AccessDenied", map[string]string{"create": misconfigured, "update": misconfigured}, "s3:PutObject on arn:aws:s3:::bucket/nodeid/*"},
		{400, "InvalidArgument", map[string]string{"create": plain, "update": plain}, "HTTP 400"},
		{501, "NotImplemented", map[string]string{"create": misconfigured, "update": misconfigured}, "this store cannot do conditional writes"},
		{500, "InternalError", map[string]string{"create": unknown, "update": unknown}, ""},
		{503, "SlowDown", map[string]string{"create": unknown, "update": unknown}, ""},
	}
	for _, tc := range tests {
		for op, want := range tc.want {
			t.Run(fmt.Sprintf("%s/%d-%s", op, tc.status, tc.code), func(t *testing.T) {
				f := newFakeS3(t, func(w http.ResponseWriter, r *http.Request, _ int) {
					_, _ = io.Copy(io.Discard, r.Body)
					s3Error(w, tc.status, tc.code)
				})
				st := newStore(t, f.URL)
				var err error
				if op == "create" {
					_, err = st.Create(context.Background(), "7.json", []byte("b"))
				} else {
					_, err = st.Update(context.Background(), "7.json", []byte("b"), `"e1"`)
				}
				checkClass(t, err, want, tc.msg)
				if tc.status == http.StatusNotImplemented {
					header := map[string]string{"create": "a PUT with If-None-Match", "update": "a PUT with If-Match"}[op]
					checkClass(t, err, want, header) // names the header the store does not implement
				}
				if f.requests() != 1 {
					t.Errorf("%d requests, want exactly 1: conditional PUTs must never be retried", f.requests())
				}
			})
		}
	}
}

func checkClass(t *testing.T, err error, want, msg string) {
	t.Helper()
	var uo *lease.UnknownOutcomeError
	switch {
	case err == nil:
		t.Fatalf("no error, want %s", want)
	case want == "precondition" && (!errors.Is(err, lease.ErrPreconditionFailed) || errors.Is(err, lease.ErrConflict)):
		t.Fatalf("error = %v, want ErrPreconditionFailed (and not ErrConflict)", err)
	case want == "conflict" && (!errors.Is(err, lease.ErrConflict) || !errors.Is(err, lease.ErrPreconditionFailed)):
		t.Fatalf("error = %v, want ErrConflict (matching ErrPreconditionFailed: not applied)", err)
	case want == "unknown" && !errors.As(err, &uo):
		t.Fatalf("error = %v, want *lease.UnknownOutcomeError", err)
	case (want == "plain" || want == "misconfigured") && (errors.Is(err, lease.ErrPreconditionFailed) || errors.Is(err, lease.ErrUnknownOutcome)):
		t.Fatalf("error = %v, want a plain error (not written, not ambiguous)", err)
	case want == "plain" && errors.Is(err, lease.ErrMisconfigured):
		t.Fatalf("error = %v matches lease.ErrMisconfigured: retrying might help", err)
	case want == "misconfigured" && !errors.Is(err, lease.ErrMisconfigured):
		t.Fatalf("error = %v, want one matching lease.ErrMisconfigured (retrying cannot help)", err)
	case !strings.Contains(err.Error(), msg):
		t.Fatalf("error = %v, want it to say %q", err, msg)
	}
}

func TestWriteDroppedConnectionIsUnknownAndNotRetried(t *testing.T) {
	f := newFakeS3(t, func(w http.ResponseWriter, r *http.Request, _ int) {
		_, _ = io.Copy(io.Discard, r.Body) // the write "landed"...
		conn, _, err := w.(http.Hijacker).Hijack()
		if err != nil {
			t.Error(err)
			return
		}
		_ = conn.Close() // ...and the answer is lost
	})
	_, err := newStore(t, f.URL).Create(context.Background(), "7.json", []byte("b"))
	var uo *lease.UnknownOutcomeError
	if !errors.As(err, &uo) || uo.Op != "create" || uo.Key != "7.json" {
		t.Fatalf("error = %#v, want *lease.UnknownOutcomeError{Op: create, Key: 7.json}", err)
	}
	if f.requests() != 1 {
		t.Fatalf("%d requests, want exactly 1", f.requests())
	}
}

func TestWriteTimeoutIsUnknownAndNotRetried(t *testing.T) {
	f := newFakeS3(t, func(w http.ResponseWriter, r *http.Request, _ int) {
		_, _ = io.Copy(io.Discard, r.Body)
		select {
		case <-r.Context().Done():
		case <-time.After(5 * time.Second):
		}
	})
	st := newStore(t, f.URL, func(c *s3store.Config) { c.RequestTimeout = 200 * time.Millisecond })
	start := time.Now()
	_, err := st.Update(context.Background(), "7.json", []byte("b"), `"e1"`)
	if !errors.Is(err, lease.ErrUnknownOutcome) {
		t.Fatalf("error = %v, want an unknown outcome", err)
	}
	if d := time.Since(start); d > 2*time.Second {
		t.Errorf("took %v with a 200ms request timeout", d)
	}
	if f.requests() != 1 {
		t.Fatalf("%d requests, want exactly 1", f.requests())
	}
}

func TestWriteConnectionRefusedIsMisconfigured(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	_ = ln.Close()
	_, err = newStore(t, "http://"+addr).Create(context.Background(), "7.json", []byte("b"))
	checkClass(t, err, "misconfigured", "http://"+addr+" refuses connections")
}

// dnsFailure returns an HTTP client whose every dial fails as a DNS lookup
// does: with IsNotFound (the name does not exist) or as a timeout.
func dnsFailure(notFound bool) *http.Client {
	return &http.Client{Transport: &http.Transport{
		DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
			host, _, _ := net.SplitHostPort(addr)
			return nil, &net.OpError{Op: "dial", Net: network, Err: &net.DNSError{
				Err: "lookup failed", Name: host, IsNotFound: notFound, IsTimeout: !notFound}}
		},
	}}
}

// TestDNSFailures: a name that does not exist is a misconfiguration; a
// lookup that timed out may succeed later.
func TestDNSFailures(t *testing.T) {
	for _, tc := range []struct {
		notFound bool
		want     string
		msg      string
	}{
		{true, "misconfigured", `host "s3.nodeid-typo.example" does not exist (DNS): check Endpoint`},
		{false, "plain", `cannot resolve host "s3.nodeid-typo.example"`},
	} {
		st := newStore(t, "http://s3.nodeid-typo.example:9000", func(c *s3store.Config) { c.HTTPClient = dnsFailure(tc.notFound) })
		_, err := st.Create(context.Background(), "7.json", []byte("b"))
		checkClass(t, err, tc.want, tc.msg)
		checkClass(t, st.Check(context.Background()), tc.want, tc.msg)
	}
}

func TestWriteCanceledContextSendsNothing(t *testing.T) {
	f := newFakeS3(t, func(w http.ResponseWriter, r *http.Request, _ int) {})
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := newStore(t, f.URL).Create(ctx, "7.json", []byte("b"))
	checkClass(t, err, "plain", "context canceled")
	if f.requests() != 0 {
		t.Fatalf("%d requests sent with a canceled context", f.requests())
	}
}

func TestGetIsRetriedAndCapturesTimes(t *testing.T) {
	lastModified := serverDate.Add(-90 * time.Second)
	f := newFakeS3(t, func(w http.ResponseWriter, r *http.Request, n int) {
		if r.Method != http.MethodGet || r.URL.Path != "/bucket/nodeid/3.json" {
			t.Errorf("got %s %s", r.Method, r.URL.Path)
		}
		if n == 1 {
			s3Error(w, http.StatusInternalServerError, "InternalError")
			return
		}
		w.Header().Set("ETag", `"e3"`)
		w.Header().Set("Last-Modified", lastModified.Format(http.TimeFormat))
		_, _ = io.WriteString(w, "body")
	})
	body, m, err := newStore(t, f.URL).Get(context.Background(), "3.json")
	if err != nil {
		t.Fatal(err)
	}
	if f.requests() != 2 {
		t.Errorf("%d requests, want 2 (a GET that got a 500 is retried)", f.requests())
	}
	if string(body) != "body" || m.ETag != `"e3"` || !m.LastModified.Equal(lastModified) || !m.Date.Equal(serverDate) {
		t.Errorf("got %q %+v", body, m)
	}
}

func TestGetAnswers(t *testing.T) {
	tests := []struct {
		status   int
		code     string
		notFound bool
		msg      string
	}{
		{404, "NoSuchKey", true, ""},
		{404, "NoSuchBucket", false, `bucket "bucket" does not exist`},
		{403, "AccessDenied", false, "s3:GetObject on arn:aws:s3:::bucket/nodeid/*"},
	}
	for _, tc := range tests {
		t.Run(tc.code, func(t *testing.T) {
			f := newFakeS3(t, func(w http.ResponseWriter, r *http.Request, _ int) { s3Error(w, tc.status, tc.code) })
			_, _, err := newStore(t, f.URL).Get(context.Background(), "3.json")
			if errors.Is(err, lease.ErrNotFound) != tc.notFound || err == nil || !strings.Contains(err.Error(), tc.msg) {
				t.Fatalf("error = %v, want ErrNotFound %v and %q", err, tc.notFound, tc.msg)
			}
		})
	}
}

func TestGetRefusesHugeObject(t *testing.T) {
	f := newFakeS3(t, func(w http.ResponseWriter, r *http.Request, _ int) {
		w.Header().Set("ETag", `"big"`)
		_, _ = w.Write(make([]byte, s3store.MaxObjectSize+1))
	})
	_, _, err := newStore(t, f.URL).Get(context.Background(), "3.json")
	if !errors.Is(err, lease.ErrCorrupt) {
		t.Fatalf("error = %v, want ErrCorrupt", err)
	}
}

func TestListFollowsContinuationTokens(t *testing.T) {
	dates := []time.Time{serverDate, serverDate.Add(-2 * time.Second), serverDate.Add(time.Second)}
	pages := []struct{ token, next, keys string }{
		{"", "tok-1", "nodeid/b.json nodeid/a.json"},
		{"tok-1", "tok-2", "nodeid/sub/c.json"},
		{"tok-2", "", "nodeid/d.json"},
	}
	f := newFakeS3(t, nil)
	f.handler = func(w http.ResponseWriter, r *http.Request, n int) {
		q := r.URL.Query()
		if q.Get("list-type") != "2" || q.Get("prefix") != "nodeid/" {
			t.Errorf("query = %v, want list-type=2 and prefix=nodeid/", q)
		}
		if n > len(pages) {
			t.Errorf("request %d: more pages asked for than exist", n)
			return
		}
		p := pages[n-1]
		if got := q.Get("continuation-token"); got != p.token {
			t.Errorf("request %d: continuation-token = %q, want %q", n, got, p.token)
		}
		w.Header().Set("Date", dates[n-1].Format(http.TimeFormat))
		var b strings.Builder
		fmt.Fprintf(&b, `<?xml version="1.0" encoding="UTF-8"?><ListBucketResult xmlns="http://s3.amazonaws.com/doc/2006-03-01/"><Name>bucket</Name><Prefix>nodeid/</Prefix><IsTruncated>%v</IsTruncated>`, p.next != "")
		if p.next != "" {
			fmt.Fprintf(&b, `<NextContinuationToken>%s</NextContinuationToken>`, p.next)
		}
		for _, k := range strings.Fields(p.keys) {
			// Unquoted ETags here: the store must return them quoted, as PUT and GET do.
			fmt.Fprintf(&b, `<Contents><Key>%s</Key><LastModified>2026-03-04T05:06:01.250Z</LastModified><ETag>etag-%s</ETag><Size>1</Size></Contents>`, k, k[len("nodeid/"):])
		}
		b.WriteString(`</ListBucketResult>`)
		_, _ = io.WriteString(w, b.String())
	}
	l, err := newStore(t, f.URL).List(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if f.requests() != 3 {
		t.Errorf("%d requests, want 3 pages", f.requests())
	}
	var got []string
	for _, o := range l.Objects {
		got = append(got, o.Key+"="+o.ETag)
	}
	want := `[a.json="etag-a.json" b.json="etag-b.json" d.json="etag-d.json" sub/c.json="etag-sub/c.json"]`
	if fmt.Sprint(got) != want {
		t.Errorf("objects = %v, want %v (relative to the prefix, sorted, quoted ETags)", got, want)
	}
	if !l.Date.Equal(dates[1]) {
		t.Errorf("Listing.Date = %v, want the earliest page Date %v", l.Date, dates[1])
	}
	if lm := l.Objects[0].LastModified; !lm.Equal(time.Date(2026, 3, 4, 5, 6, 1, 250e6, time.UTC)) {
		t.Errorf("LastModified = %v", lm)
	}
}

func TestListRefusesRepeatedToken(t *testing.T) {
	f := newFakeS3(t, func(w http.ResponseWriter, r *http.Request, n int) {
		if n > 5 {
			t.Errorf("still listing after %d pages", n)
		}
		_, _ = io.WriteString(w, `<ListBucketResult><IsTruncated>true</IsTruncated><NextContinuationToken>same</NextContinuationToken></ListBucketResult>`)
	})
	if _, err := newStore(t, f.URL).List(context.Background()); err == nil || !strings.Contains(err.Error(), "repeated continuation token") {
		t.Fatalf("error = %v, want a repeated-token error", err)
	}
}
