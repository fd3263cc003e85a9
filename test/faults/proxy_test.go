package faults

import (
	"context"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/nodeid/nodeid/lease"
	"github.com/nodeid/nodeid/s3store"
	"github.com/nodeid/nodeid/s3store/s3fake"
)

// proxied starts an in-memory S3 (gofakes3) behind a Proxy and returns both
// with an s3store.Store that goes through the proxy.
func proxied(t *testing.T) (*Proxy, *s3store.Store) { return proxiedWith(t, nil, nil) }

// proxiedWith is proxied with the server's handler wrapped by wrap, and
// setup run on the proxy before the store is made (nil: none of either).
func proxiedWith(t *testing.T, wrap func(http.Handler) http.Handler, setup func(*Proxy)) (*Proxy, *s3store.Store) {
	t.Helper()
	h, err := s3fake.NewHandler(s3fake.Config{})
	if err != nil {
		t.Fatal(err)
	}
	if wrap != nil {
		h = wrap(h)
	}
	backend := httptest.NewServer(h)
	t.Cleanup(backend.Close)
	p, err := NewProxy(backend.URL, 1)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = p.Close() })
	if setup != nil {
		setup(p)
	}
	cfg := s3store.DefaultConfig()
	cfg.Bucket, cfg.Prefix, cfg.Endpoint, cfg.UsePathStyle, cfg.Region = s3fake.DefaultBucket, "t/", p.URL(), true, "us-east-1"
	cfg.AccessKeyID, cfg.SecretAccessKey = s3fake.AccessKeyID, s3fake.SecretAccessKey
	cfg.RequestTimeout = 2 * time.Second
	st, err := s3store.New(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	return p, st
}

func ctxT(t *testing.T, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}

// body reads key through st and fails the test on an error.
func body(t *testing.T, st lease.Store, key string) string {
	t.Helper()
	b, _, err := st.Get(ctxT(t, 5*time.Second), key)
	if err != nil {
		t.Fatalf("get %s: %v", key, err)
	}
	return string(b)
}

// TestProxyForwards: without a fault the proxy is transparent to a signed
// S3 client, and counts the operations by their answers.
func TestProxyForwards(t *testing.T) {
	p, st := proxied(t)
	ctx := ctxT(t, 10*time.Second)
	m, err := st.Create(ctx, "1.json", []byte("one"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := st.Create(ctx, "1.json", []byte("again")); !errors.Is(err, lease.ErrPreconditionFailed) {
		t.Fatalf("second create: %v, want ErrPreconditionFailed", err)
	}
	if _, err := st.Update(ctx, "1.json", []byte("two"), m.ETag); err != nil {
		t.Fatal(err)
	}
	if got := body(t, st, "1.json"); got != "two" {
		t.Fatalf("body %q, want two", got)
	}
	l, err := st.List(ctx)
	if err != nil || len(l.Objects) != 1 || l.Date.IsZero() {
		t.Fatalf("list: %+v, %v", l, err)
	}
	want := map[string]int{"PUT-create 200": 1, "PUT-create 412": 1, "PUT-update 200": 1, "GET 200": 1, "LIST 200": 1}
	for k, n := range want {
		if got := p.Counts()[k]; got != n {
			t.Errorf("count %q = %d, want %d (all: %v)", k, got, n, p.Counts())
		}
	}
}

// TestProxyLatency: each request is delayed by the latency plus a part of the
// jitter, and by nothing once the latency is off. The delays are checked as
// the proxy decides them (a GET's time would depend on the machine's speed);
// one GET checks that the delay is applied: it cannot take less.
func TestProxyLatency(t *testing.T) {
	p, st := proxied(t)
	if _, err := st.Create(ctxT(t, 5*time.Second), "1.json", []byte("x")); err != nil {
		t.Fatal(err)
	}
	p.SetLatency(150*time.Millisecond, 100*time.Millisecond)
	jittered := false
	for range 50 {
		_, d, _ := p.decide(OpGet, "/b/k")
		if d < 150*time.Millisecond || d >= 250*time.Millisecond {
			t.Fatalf("delay %v with 150ms latency and 100ms jitter", d)
		}
		jittered = jittered || d != 150*time.Millisecond
	}
	if !jittered {
		t.Error("50 delays, no jitter")
	}
	start := time.Now()
	body(t, st, "1.json")
	if d := time.Since(start); d < 150*time.Millisecond {
		t.Errorf("GET took %v with 150ms latency", d)
	}
	p.SetLatency(0, 0)
	if _, d, _ := p.decide(OpGet, "/b/k"); d != 0 {
		t.Errorf("delay %v without latency", d)
	}
}

// TestProxyBlackHole: a held request is never answered until the client gives
// up; after Heal, a held request is forwarded.
func TestProxyBlackHole(t *testing.T) {
	p, st := proxied(t)
	if _, err := st.Create(ctxT(t, 5*time.Second), "1.json", []byte("x")); err != nil {
		t.Fatal(err)
	}
	if err := p.Inject(Fault{Action: BlackHole}); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	_, _, err := st.Get(ctxT(t, 300*time.Millisecond), "1.json")
	if err == nil || time.Since(start) < 300*time.Millisecond {
		t.Fatalf("GET through a black hole: %v after %v", err, time.Since(start))
	}
	// A write held and given up on did not land.
	if _, err := st.Update(ctxT(t, 300*time.Millisecond), "1.json", []byte("y"), `"nope"`); !errors.Is(err, lease.ErrUnknownOutcome) {
		t.Fatalf("update through a black hole: %v, want an unknown outcome", err)
	}
	var wg sync.WaitGroup
	wg.Add(1)
	var got string
	var gerr error
	go func() {
		defer wg.Done()
		var b []byte
		b, _, gerr = st.Get(ctxT(t, 5*time.Second), "1.json")
		got = string(b)
	}()
	// The proxy learns that a client gave up only when its server sees the
	// connection close: wait for both, the first GET and the update.
	waitCount(t, p, "GET blackhole", 1)
	waitCount(t, p, string(OpUpdate)+" blackhole", 1)
	deadline := time.Now().Add(5 * time.Second)
	for p.Held(OpGet) == 0 { // the second one
		if time.Now().After(deadline) {
			t.Fatal("the second GET is not held")
		}
		time.Sleep(5 * time.Millisecond)
	}
	if n, m := p.HeldOn(OpGet, "1.json"), p.HeldOn(OpGet, "2.json")+p.HeldOn(OpUpdate, "1.json"); n != 1 || m != 0 {
		t.Fatalf("held on 1.json: %d GET, want 1; on 2.json or updates: %d, want 0", n, m)
	}
	if err := p.Heal(); err != nil {
		t.Fatal(err)
	}
	wg.Wait()
	if gerr != nil || got != "x" {
		t.Fatalf("held GET after Heal: %q, %v", got, gerr)
	}
	if c := p.Counts(); c["GET blackhole-released"] != 1 || c["PUT-update blackhole"] != 1 {
		t.Errorf("counts %v", c)
	}
}

func waitCount(t *testing.T, p *Proxy, key string, n int) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for p.Counts()[key] < n {
		if time.Now().After(deadline) {
			t.Fatalf("count %q never reached %d: %v", key, n, p.Counts())
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestProxyRefuse: connections are refused while refusing and the open ones
// are reset (a write on a pooled connection has an unknown outcome, one that
// needed a new connection was not sent); nothing lands; the proxy listens on
// the same port again after Heal.
func TestProxyRefuse(t *testing.T) {
	p, st := proxied(t)
	m, err := st.Create(ctxT(t, 5*time.Second), "1.json", []byte("x"))
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Inject(Fault{Action: Refuse}); err != nil {
		t.Fatal(err)
	}
	if _, err := net.Dial("tcp", strings.TrimPrefix(p.URL(), "http://")); !errors.Is(err, syscall.ECONNREFUSED) {
		t.Fatalf("dial a refusing proxy: %v, want ECONNREFUSED", err)
	}
	for range 2 { // the second one dials
		_, err = st.Update(ctxT(t, 5*time.Second), "1.json", []byte("y"), m.ETag)
		if err == nil || errors.Is(err, lease.ErrPreconditionFailed) {
			t.Fatalf("update through a refusing proxy: %v, want an error", err)
		}
	}
	if errors.Is(err, lease.ErrUnknownOutcome) {
		t.Errorf("update on a new connection to a refusing proxy: %v, want a plain error (not sent)", err)
	}
	if err := p.Heal(); err != nil {
		t.Fatal(err)
	}
	if got := body(t, st, "1.json"); got != "x" {
		t.Fatalf("after Heal: %q", got)
	}
}

// TestProxyReset: connections are reset; a write's outcome is unknown to the
// client, and it did not land.
func TestProxyReset(t *testing.T) {
	p, st := proxied(t)
	m, err := st.Create(ctxT(t, 5*time.Second), "1.json", []byte("x"))
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Inject(Fault{Action: Reset}); err != nil {
		t.Fatal(err)
	}
	// A reset after the request left is an unknown outcome; one while dialing
	// ("connect: connection reset by peer") means it never left, which the
	// store reports as a plain error. Either way it is not "precondition
	// failed", and (checked after Heal) nothing was written.
	if _, err := st.Update(ctxT(t, 5*time.Second), "1.json", []byte("y"), m.ETag); err == nil || errors.Is(err, lease.ErrPreconditionFailed) {
		t.Fatalf("update through a resetting proxy: %v, want an unknown outcome or a connection error", err)
	}
	if _, _, err := st.Get(ctxT(t, 5*time.Second), "1.json"); err == nil { // new connections
		t.Fatal("GET through a resetting proxy succeeded")
	}
	if p.Counts()["CONN reset"] == 0 {
		t.Errorf("no connection reset counted: %v", p.Counts())
	}
	if err := p.Heal(); err != nil {
		t.Fatal(err)
	}
	if got := body(t, st, "1.json"); got != "x" {
		t.Fatalf("after Heal: %q", got)
	}
}

// TestProxyAnswers: 500, 503 and 409 are answered without forwarding, with
// S3 error bodies the SDK parses: a 5xx write has an unknown outcome, a 409
// one is refused, and neither landed.
func TestProxyAnswers(t *testing.T) {
	for _, c := range []struct {
		action Action
		want   error
	}{
		{Error500, lease.ErrUnknownOutcome},
		{Error503, lease.ErrUnknownOutcome},
		{Conflict409, lease.ErrPreconditionFailed},
	} {
		t.Run(c.action.String(), func(t *testing.T) {
			p, st := proxied(t)
			m, err := st.Create(ctxT(t, 5*time.Second), "1.json", []byte("x"))
			if err != nil {
				t.Fatal(err)
			}
			if err := p.Inject(Fault{Action: c.action, Ops: Writes}); err != nil {
				t.Fatal(err)
			}
			_, err = st.Update(ctxT(t, 5*time.Second), "1.json", []byte("y"), m.ETag)
			if !errors.Is(err, c.want) {
				t.Fatalf("update: %v, want %v", err, c.want)
			}
			if c.action == Conflict409 && !strings.Contains(err.Error(), "ConditionalRequestConflict") {
				t.Errorf("409 error %q does not name ConditionalRequestConflict", err)
			}
			if got := body(t, st, "1.json"); got != "x" { // reads are not affected
				t.Fatalf("the write landed: %q", got)
			}
			if n := p.Counts()["PUT-update "+c.action.String()]; n != 1 {
				t.Errorf("counts %v", p.Counts())
			}
		})
	}
}

// TestProxyKey: a fault with a Key answers only the requests on that object:
// the 409 of a release, not of the election's resign.
func TestProxyKey(t *testing.T) {
	p, st := proxied(t)
	var etags []string
	for _, k := range []string{"1.json", "elections/jobs/1.json"} {
		m, err := st.Create(ctxT(t, 5*time.Second), k, []byte("x"))
		if err != nil {
			t.Fatal(err)
		}
		etags = append(etags, m.ETag)
	}
	if err := p.Inject(Fault{Action: Conflict409, Ops: []Op{OpUpdate}, Key: "t/1.json"}); err != nil {
		t.Fatal(err)
	}
	if _, err := st.Update(ctxT(t, 5*time.Second), "elections/jobs/1.json", []byte("y"), etags[1]); err != nil {
		t.Fatalf("update of another key: %v", err)
	}
	if _, err := st.Update(ctxT(t, 5*time.Second), "1.json", []byte("y"), etags[0]); !errors.Is(err, lease.ErrPreconditionFailed) {
		t.Fatalf("update of the key: %v, want a 409", err)
	}
	if n := p.Counts()["PUT-update 409"]; n != 1 {
		t.Errorf("counts %v", p.Counts())
	}
}

// TestProxyAmbiguous: the write is forwarded (it lands) and then its answer
// is lost or replaced by a 500: the client sees an unknown outcome.
func TestProxyAmbiguous(t *testing.T) {
	for _, a := range []Action{DropAfterForward, FailAfterForward} {
		t.Run(a.String(), func(t *testing.T) {
			p, st := proxied(t)
			m, err := st.Create(ctxT(t, 5*time.Second), "1.json", []byte("x"))
			if err != nil {
				t.Fatal(err)
			}
			if err := p.Inject(Fault{Action: a, Ops: []Op{OpUpdate}}); err != nil {
				t.Fatal(err)
			}
			if _, err := st.Update(ctxT(t, 5*time.Second), "1.json", []byte("y"), m.ETag); !errors.Is(err, lease.ErrUnknownOutcome) {
				t.Fatalf("update: %v, want an unknown outcome", err)
			}
			if got := body(t, st, "1.json"); got != "y" {
				t.Fatalf("the write did not land: %q", got)
			}
			if n := p.Counts()["PUT-update "+a.String()+" 200"]; n != 1 {
				t.Errorf("counts %v", p.Counts())
			}
		})
	}
}

// TestProxyProb: a fault with a probability hits about that share of the
// matching requests, and no other operation.
func TestProxyProb(t *testing.T) {
	p, _ := proxied(t)
	if err := p.Inject(Fault{Action: Error503, Ops: []Op{OpGet}, Prob: 0.3}); err != nil {
		t.Fatal(err)
	}
	c := &http.Client{Timeout: 5 * time.Second}
	for range 400 {
		resp, err := c.Get(p.URL() + "/" + s3fake.DefaultBucket + "/missing")
		if err != nil {
			t.Fatal(err)
		}
		_ = resp.Body.Close()
	}
	resp, err := c.Get(p.URL() + "/" + s3fake.DefaultBucket + "?list-type=2")
	if err != nil {
		t.Fatal(err)
	}
	_ = resp.Body.Close()
	n := p.Counts()
	if n["GET 503"] < 80 || n["GET 503"] > 160 || n["GET 503"]+n["GET 404"] != 400 || n["LIST 200"] != 1 {
		t.Errorf("counts %v, want about 120 of 400 GETs answered 503 and the LIST forwarded", n)
	}
}

// TestProxySlowAnswer: the write lands at once, its answer comes late.
func TestProxySlowAnswer(t *testing.T) {
	p, st := proxied(t)
	m, err := st.Create(ctxT(t, 5*time.Second), "1.json", []byte("x"))
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Inject(Fault{Action: SlowAnswer, Ops: []Op{OpUpdate}, Delay: 400 * time.Millisecond}); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	start := time.Now()
	go func() {
		_, err := st.Update(ctxT(t, 5*time.Second), "1.json", []byte("y"), m.ETag)
		done <- err
	}()
	deadline := time.Now().Add(5 * time.Second)
	for p.Held(OpUpdate) == 0 {
		if time.Now().After(deadline) {
			t.Fatal("the answer is not held")
		}
		time.Sleep(2 * time.Millisecond)
	}
	if got := body(t, st, "1.json"); got != "y" { // landed, not answered yet
		t.Fatalf("body %q while the answer is held", got)
	}
	if err := <-done; err != nil || time.Since(start) < 400*time.Millisecond {
		t.Fatalf("update: %v after %v", err, time.Since(start))
	}
	if n := p.Counts()["PUT-update slow-answer 200"]; n != 1 {
		t.Errorf("counts %v", p.Counts())
	}
}
