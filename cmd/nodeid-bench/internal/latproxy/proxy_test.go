package latproxy

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// upstream records what reached it and answers 412 to PUT-update, 200 else.
type upstream struct {
	mu     sync.Mutex
	hosts  []string
	labels []string
	at     []time.Time
}

func (u *upstream) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	u.mu.Lock()
	u.hosts = append(u.hosts, r.Host)
	u.labels = append(u.labels, r.Header.Get(LabelHeader))
	u.at = append(u.at, time.Now())
	u.mu.Unlock()
	if r.Method == http.MethodPut && r.Header.Get("If-Match") != "" {
		w.WriteHeader(http.StatusPreconditionFailed)
		return
	}
	_, _ = io.WriteString(w, "ok")
}

func do(t *testing.T, method, url string, header map[string]string) *http.Response {
	t.Helper()
	req, err := http.NewRequest(method, url, strings.NewReader(""))
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range header {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp
}

func TestDelayIsAppliedHalfEachWay(t *testing.T) {
	up := &upstream{}
	srv := httptest.NewServer(up)
	defer srv.Close()
	const latency = 60 * time.Millisecond
	p, err := Start(Config{Upstream: srv.URL, Latency: latency})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	var mu sync.Mutex
	var slept []time.Duration
	p.sleep = func(ctx context.Context, d time.Duration) error {
		mu.Lock()
		slept = append(slept, d)
		mu.Unlock()
		return sleepCtx(ctx, d)
	}
	sent := time.Now()
	do(t, http.MethodGet, p.URL()+"/b/k", nil)
	took := time.Since(sent)
	if took < latency {
		t.Errorf("round trip took %v, want at least the added %v", took, latency)
	}
	// How much longer it took depends on the machine: the delays the proxy
	// asked for do not.
	mu.Lock()
	defer mu.Unlock()
	if len(slept) != 2 || slept[0] != latency/2 || slept[1] != latency/2 {
		t.Errorf("the proxy slept %v, want %v before forwarding and as much after", slept, latency/2)
	}
	if arrived := up.at[0].Sub(sent); arrived < latency/2 || arrived >= took {
		t.Errorf("request reached the server %v after it was sent; want at least half the latency (%v) and before the answer (%v)", arrived, latency/2, took)
	}
}

func TestCountsByOperationStatusAndLabel(t *testing.T) {
	up := &upstream{}
	srv := httptest.NewServer(up)
	defer srv.Close()
	p, err := Start(Config{Upstream: srv.URL, Record: true})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	u := p.URL()
	lab := func(l string) map[string]string { return map[string]string{LabelHeader: l} }
	do(t, http.MethodGet, u+"/b?list-type=2&prefix=nodeid%2F", lab("a"))
	do(t, http.MethodGet, u+"/b?list-type=2&continuation-token=x", lab("a"))
	do(t, http.MethodGet, u+"/b/nodeid/7.json", lab("a"))
	do(t, http.MethodPut, u+"/b/nodeid/7.json", map[string]string{LabelHeader: "b", "If-None-Match": "*"})
	do(t, http.MethodPut, u+"/b/nodeid/7.json", map[string]string{LabelHeader: "b", "If-Match": `"e"`})
	do(t, http.MethodHead, u+"/b/nodeid/7.json", nil)
	do(t, http.MethodPut, u+"/b", nil)

	c := p.Counts()
	want := map[Op]int{OpList: 2, OpGet: 1, OpCreate: 1, OpUpdate: 1, OpOther: 2}
	for op, n := range want {
		if got := c.Total(Key{Op: op}); got != n {
			t.Errorf("%s: %d requests, want %d", op, got, n)
		}
	}
	if got := c.Total(Key{Op: OpUpdate, Status: 412}); got != 1 {
		t.Errorf("PUT-update 412: %d, want 1 (status from the server)", got)
	}
	if got := c.Total(Key{Status: 200}); got != 6 {
		t.Errorf("status 200: %d, want 6", got)
	}
	if got := c.ByLabel(); got["a"] != 3 || got["b"] != 2 || got[""] != 2 {
		t.Errorf("by label = %v, want a:3 b:2 (none):2", got)
	}
	if got := c.Total(Key{}); got != 7 || len(p.Events()) != 7 {
		t.Errorf("total %d, events %d, want 7", got, len(p.Events()))
	}
	for i, l := range up.labels {
		if l != "" {
			t.Errorf("request %d reached the server with the label header %q", i, l)
		}
	}
	host := strings.TrimPrefix(u, "http://")
	for i, h := range up.hosts {
		if h != host {
			t.Errorf("request %d reached the server with Host %q, want the proxy's %q (signatures cover it)", i, h, host)
		}
	}
}

func TestBlockHangsUpOnALabel(t *testing.T) {
	up := &upstream{}
	srv := httptest.NewServer(up)
	defer srv.Close()
	p, err := Start(Config{Upstream: srv.URL})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	p.Block("dead")
	req, _ := http.NewRequest(http.MethodGet, p.URL()+"/b/k", nil)
	req.Header.Set(LabelHeader, "dead")
	// A transport of its own: the request goes on a new connection, which the
	// client does not retry on, so the proxy sees it exactly once.
	client := &http.Client{Transport: &http.Transport{}}
	defer client.CloseIdleConnections()
	if resp, err := client.Do(req); err == nil {
		resp.Body.Close()
		t.Fatalf("blocked request answered %d, want a connection error", resp.StatusCode)
	}
	// The client has seen the hang-up: the request must already be counted.
	dead := p.Counts().Where(func(k Key) bool { return k.Label == "dead" && k.Status == 0 })
	if got := dead.Total(Key{}); got != 1 {
		t.Errorf("blocked requests counted %d once the client saw the hang-up, want 1 with status 0", got)
	}
	do(t, http.MethodGet, p.URL()+"/b/k", map[string]string{LabelHeader: "alive"})
	up.mu.Lock()
	n := len(up.at)
	up.mu.Unlock()
	if n != 1 {
		t.Fatalf("server saw %d requests, want 1 (the blocked one never forwarded)", n)
	}
}

// A client that has read a whole answer finds the request counted, even when
// the body was longer than the server's write buffer and so reached the client
// before the proxy's handler returned.
func TestCountedBeforeTheClientHasTheAnswer(t *testing.T) {
	body := strings.Repeat("x", 64<<10)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Length", strconv.Itoa(len(body)))
		_, _ = io.WriteString(w, body)
	}))
	defer srv.Close()
	p, err := Start(Config{Upstream: srv.URL, Record: true})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	for i := range 20 {
		do(t, http.MethodGet, p.URL()+"/b/k", nil)
		if got := p.Counts().Total(Key{Op: OpGet, Status: http.StatusOK}); got != i+1 {
			t.Fatalf("after %d answers read, %d counted", i+1, got)
		}
		if got := len(p.Events()); got != i+1 {
			t.Fatalf("after %d answers read, %d events recorded", i+1, got)
		}
	}
}
