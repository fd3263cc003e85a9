// Package latproxy is an HTTP reverse proxy for S3 traffic that adds a fixed
// delay to every request and counts the requests by S3 operation, outcome
// status and client label. nodeid-bench puts it between the lease stores and
// the S3 server (gofakes3 or MinIO) to model an in-region round trip and to
// count exactly what each scenario sends.
//
// The delay is split in two: half is waited before the request is forwarded
// and half before the answer is returned, so a request reaches the server
// half a round trip after it was sent, as on a network.
//
// Requests are classified from the wire (path-style addressing) by
// s3wire.Classify, with every operation nodeid does not send folded into one:
//
//	LIST          GET on the bucket (no key), e.g. ListObjectsV2
//	GET           GET on a key
//	PUT-create    PUT on a key with If-None-Match
//	PUT-update    PUT on a key with If-Match
//	other         anything else (HEAD, unconditional PUT, DELETE, bucket calls)
//
// A client labels its requests with the LabelHeader header (any string); the
// proxy removes the header before forwarding, so it is never seen (or signed)
// by the server.
package latproxy

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"slices"
	"sync"
	"time"

	"github.com/nodeid/nodeid/internal/ctxtime"
	"github.com/nodeid/nodeid/internal/testkit/s3wire"
)

// LabelHeader carries the client label of a request; the proxy strips it.
const LabelHeader = "X-Nodeid-Bench-Label"

// Op is the S3 operation of a request, as the proxy classifies it.
type Op string

// The operations the proxy tells apart: s3wire's, but for OpOther, which is
// every other one of s3wire's (and spelled "other" in reports).
const (
	OpList   = Op(s3wire.OpList)
	OpGet    = Op(s3wire.OpGet)
	OpCreate = Op(s3wire.OpCreate)
	OpUpdate = Op(s3wire.OpUpdate)
	OpOther  = Op("other")
)

// Ops lists the operations in report order.
var Ops = []Op{OpList, OpGet, OpCreate, OpUpdate, OpOther}

// Classify returns the operation of a path-style S3 request.
func Classify(r *http.Request) Op {
	switch op := Op(s3wire.Classify(r)); op {
	case OpList, OpGet, OpCreate, OpUpdate:
		return op
	}
	return OpOther
}

// Key identifies one counter: a label, an operation and a status (0 when the
// upstream could not be reached).
type Key struct {
	Label  string
	Op     Op
	Status int
}

// Counts is a snapshot of the proxy's counters.
type Counts map[Key]int

// Total returns the number of requests whose key matches every non-zero field
// of filter (an empty Label, Op or zero Status matches any).
func (c Counts) Total(filter Key) int {
	n := 0
	for k, v := range c {
		if (filter.Label == "" || k.Label == filter.Label) && (filter.Op == "" || k.Op == filter.Op) &&
			(filter.Status == 0 || k.Status == filter.Status) {
			n += v
		}
	}
	return n
}

// Where returns the counts whose key satisfies keep.
func (c Counts) Where(keep func(Key) bool) Counts {
	out := Counts{}
	for k, v := range c {
		if keep(k) {
			out[k] = v
		}
	}
	return out
}

// Sub returns c minus before, key by key (for the requests of a time window).
func (c Counts) Sub(before Counts) Counts {
	out := Counts{}
	for k, v := range c {
		if d := v - before[k]; d != 0 {
			out[k] = d
		}
	}
	return out
}

// ByOp returns the number of requests per operation.
func (c Counts) ByOp() map[Op]int {
	out := map[Op]int{}
	for k, v := range c {
		out[k.Op] += v
	}
	return out
}

// ByStatus returns the number of requests per operation and status, as
// "PUT-create 412" -> n.
func (c Counts) ByStatus() map[string]int {
	out := map[string]int{}
	for k, v := range c {
		out[fmt.Sprintf("%s %d", k.Op, k.Status)] += v
	}
	return out
}

// ByLabel returns the number of requests per label.
func (c Counts) ByLabel() map[string]int {
	out := map[string]int{}
	for k, v := range c {
		out[k.Label] += v
	}
	return out
}

// Event is one request as the proxy saw it, for scenarios that need times.
type Event struct {
	Label  string
	Op     Op
	Status int
	// Sent is when the proxy received the request; Done when it answered
	// (wrote the status line, after both delays) or hung up.
	Sent, Done time.Time
}

// Proxy is a running latency-adding, counting reverse proxy.
type Proxy struct {
	url      string
	upstream *url.URL
	delay    time.Duration
	sleep    func(context.Context, time.Duration) error // sleepCtx; a test may record the delays
	srv      *http.Server
	ln       net.Listener
	done     chan error

	mu     sync.Mutex
	counts Counts
	events []Event
	record bool
	blocks map[string]bool

	closeOnce sync.Once
	closeErr  error
}

// Config configures [Start].
type Config struct {
	// Upstream is the S3 server's base URL, e.g. "http://127.0.0.1:9000".
	Upstream string
	// Latency is the added round trip per request: half before forwarding,
	// half before answering. Zero adds none.
	Latency time.Duration
	// Record keeps an Event per request (see Events).
	Record bool
}

// Start listens on a free port of 127.0.0.1 and proxies to cfg.Upstream.
func Start(cfg Config) (*Proxy, error) {
	u, err := url.Parse(cfg.Upstream)
	if err != nil || u.Host == "" || (u.Scheme != "http" && u.Scheme != "https") {
		return nil, fmt.Errorf("latproxy: upstream %q is not an http(s) URL", cfg.Upstream)
	}
	if cfg.Latency < 0 {
		return nil, fmt.Errorf("latproxy: negative latency %v", cfg.Latency)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("latproxy: listen: %w", err)
	}
	p := &Proxy{
		url: "http://" + ln.Addr().String(), upstream: u, delay: cfg.Latency, sleep: sleepCtx, ln: ln,
		done: make(chan error, 1), counts: Counts{}, record: cfg.Record, blocks: map[string]bool{},
	}
	transport := http.DefaultTransport.(*http.Transport).Clone()
	transport.MaxIdleConns, transport.MaxIdleConnsPerHost = 4096, 4096
	rp := &httputil.ReverseProxy{
		Rewrite: func(pr *httputil.ProxyRequest) {
			pr.SetURL(u)
			// The client signed the Host it sent (the proxy's): keep it, or a
			// server that checks signatures (MinIO) refuses the request.
			pr.Out.Host = pr.In.Host
			pr.Out.URL.Path, pr.Out.URL.RawPath = pr.In.URL.Path, pr.In.URL.RawPath
			pr.Out.Header.Del(LabelHeader)
		},
		Transport: &delayTransport{p: p, inner: transport},
		ErrorLog:  nil,
		ErrorHandler: func(w http.ResponseWriter, r *http.Request, err error) {
			w.WriteHeader(http.StatusBadGateway)
		},
	}
	p.srv = &http.Server{Handler: p.handler(rp), ReadHeaderTimeout: 10 * time.Second}
	go func() { p.done <- p.srv.Serve(ln) }()
	return p, nil
}

// handler wraps the reverse proxy: it refuses blocked labels, and counts every
// request with its final status.
//
// A request is counted before the client can see its outcome: before the
// hang-up of a blocked request, and when the status line of an answer is
// written (not when the handler returns, which is after the body was sent). A
// client that has its answer, or its connection error, therefore finds the
// request in Counts and Events.
func (p *Proxy) handler(rp http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		label, op, sent := r.Header.Get(LabelHeader), Classify(r), time.Now()
		p.mu.Lock()
		blocked := p.blocks[label]
		p.mu.Unlock()
		if blocked {
			// A cut-off client: hang up without an answer, like a dead path.
			p.count(Event{Label: label, Op: op, Status: 0, Sent: sent, Done: time.Now()})
			if hj, ok := w.(http.Hijacker); ok {
				if conn, _, err := hj.Hijack(); err == nil {
					_ = conn.Close()
				}
			}
			return
		}
		sw := &statusWriter{ResponseWriter: w, answered: func(status int) {
			p.count(Event{Label: label, Op: op, Status: status, Sent: sent, Done: time.Now()})
		}}
		rp.ServeHTTP(sw, r)
		// Nothing written: net/http answers 200 with an empty body on return.
		sw.answer(http.StatusOK)
	})
}

func (p *Proxy) count(e Event) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.counts[Key{Label: e.Label, Op: e.Op, Status: e.Status}]++
	if p.record {
		p.events = append(p.events, e)
	}
}

// delayTransport waits half the latency before and half after each round trip.
type delayTransport struct {
	p     *Proxy
	inner http.RoundTripper
}

func (t *delayTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	half := t.p.delay / 2
	if err := t.p.sleep(r.Context(), half); err != nil {
		return nil, err
	}
	resp, err := t.inner.RoundTrip(r)
	if err != nil {
		return nil, err
	}
	if err := t.p.sleep(r.Context(), t.p.delay-half); err != nil {
		resp.Body.Close()
		return nil, err
	}
	return resp, nil
}

func sleepCtx(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return nil
	}
	return ctxtime.Sleep(ctx, d)
}

// statusWriter calls answered once, with the final status, before the status
// line goes to the client.
type statusWriter struct {
	http.ResponseWriter
	status   int
	answered func(status int)
}

// answer records the final status on the first call; informational (1xx)
// statuses are not final.
func (w *statusWriter) answer(code int) {
	if w.status == 0 && code >= 200 {
		w.status = code
		w.answered(code)
	}
}

func (w *statusWriter) WriteHeader(code int) {
	w.answer(code)
	w.ResponseWriter.WriteHeader(code)
}

func (w *statusWriter) Write(b []byte) (int, error) {
	w.answer(http.StatusOK)
	return w.ResponseWriter.Write(b)
}

func (w *statusWriter) Flush() {
	if f, ok := w.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

// URL returns the proxy's endpoint, "http://127.0.0.1:PORT".
func (p *Proxy) URL() string { return p.url }

// Latency returns the added round trip.
func (p *Proxy) Latency() time.Duration { return p.delay }

// Counts returns a snapshot of the counters.
func (p *Proxy) Counts() Counts {
	p.mu.Lock()
	defer p.mu.Unlock()
	out := make(Counts, len(p.counts))
	for k, v := range p.counts {
		out[k] = v
	}
	return out
}

// Events returns the recorded requests (Config.Record), in the order they were
// answered.
func (p *Proxy) Events() []Event {
	p.mu.Lock()
	defer p.mu.Unlock()
	return slices.Clone(p.events)
}

// Block makes the proxy hang up on every later request labelled label, without
// forwarding it: the client's path to S3 is cut, as when a task is killed or
// partitioned. Requests already forwarded complete.
func (p *Proxy) Block(label string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.blocks[label] = true
}

// Close stops the proxy and returns once it has stopped. It is safe to call more
// than once.
func (p *Proxy) Close() error {
	p.closeOnce.Do(func() {
		p.closeErr = p.srv.Close()
		if err := <-p.done; err != nil && !errors.Is(err, http.ErrServerClosed) {
			p.closeErr = errors.Join(p.closeErr, err)
		}
	})
	return p.closeErr
}

// Labeler is an http.RoundTripper that sets LabelHeader on every request from
// Label (read at each request, so a client can change phase).
type Labeler struct {
	Inner http.RoundTripper
	Label func() string
}

// RoundTrip implements http.RoundTripper.
func (l *Labeler) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set(LabelHeader, l.Label())
	return l.Inner.RoundTrip(r)
}
