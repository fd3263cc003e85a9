package faults

import (
	"bytes"
	"context"
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/nodeid/nodeid/internal/testkit/s3wire"
	"github.com/nodeid/nodeid/internal/testkit/tcpgate"
)

// Op is the kind of an S3 request, as the proxy counts them: s3wire's
// classification of the request from the wire (s3wire.Classify).
type Op = s3wire.Op

// The S3 operations the proxy tells apart. A PUT is a create when it carries
// If-None-Match, an update when it carries If-Match (nodeid never writes
// without one of them).
const (
	OpList   = s3wire.OpList
	OpGet    = s3wire.OpGet
	OpHead   = s3wire.OpHead
	OpCreate = s3wire.OpCreate
	OpUpdate = s3wire.OpUpdate
	OpPut    = s3wire.OpPut // unconditional
	OpOther  = s3wire.OpOther
)

// Writes are the conditional PUTs: acquisitions, renewals, releases, bootstrap.
var Writes = []Op{OpCreate, OpUpdate}

// Action is what the proxy does with a request that a [Fault] selects.
type Action int

// The actions of a fault.
const (
	// Forward passes the request to the server and its answer back.
	Forward Action = iota
	// BlackHole holds the request without answering until the fault is
	// healed (then it is forwarded) or the client gives up.
	BlackHole
	// Refuse closes the listener and every open connection: new connections
	// are refused (ECONNREFUSED) until the fault is healed. Connection-level:
	// Ops and Prob do not apply.
	Refuse
	// Reset accepts connections and resets them at once (RST), and resets the
	// open ones: the client cannot tell whether its request was sent.
	// Connection-level: Ops and Prob do not apply.
	Reset
	// Error500 answers 500 InternalError without forwarding.
	Error500
	// Error503 answers 503 ServiceUnavailable without forwarding.
	Error503
	// Conflict409 answers 409 ConditionalRequestConflict without forwarding,
	// as S3 does to one of two concurrent conditional writes.
	Conflict409
	// DropAfterForward forwards the request (a write lands) and then resets
	// the client's connection instead of answering: the ambiguous case.
	DropAfterForward
	// FailAfterForward forwards the request and then answers 500
	// InternalError instead of the server's answer: ambiguous too.
	FailAfterForward
	// SlowAnswer forwards the request (a write lands at once) and holds the
	// server's answer for Fault.Delay, or until the client gives up.
	SlowAnswer
)

var actionNames = map[Action]string{
	Forward: "forward", BlackHole: "blackhole", Refuse: "refuse", Reset: "reset", Error500: "500",
	Error503: "503", Conflict409: "409", DropAfterForward: "drop-after-forward", FailAfterForward: "fail-after-forward",
	SlowAnswer: "slow-answer",
}

func (a Action) String() string {
	if s, ok := actionNames[a]; ok {
		return s
	}
	return fmt.Sprintf("Action(%d)", int(a))
}

// Fault selects requests and says what to do with them.
type Fault struct {
	Action Action
	// Ops limits the fault to these operations; empty means every one.
	Ops []Op
	// Prob is the probability that a matching request gets the action;
	// 0 means 1.
	Prob float64
	// Delay is how long SlowAnswer holds an answer.
	Delay time.Duration
	// Key limits the fault to requests whose URL path ends with it (an
	// object's key: "nodeid/1.json"); empty means every path.
	// Request-level actions only, as Ops.
	Key string
}

func (f Fault) String() string {
	s := f.Action.String()
	if len(f.Ops) > 0 {
		ops := make([]string, len(f.Ops))
		for i, o := range f.Ops {
			ops[i] = string(o)
		}
		s += " on " + strings.Join(ops, ",")
	}
	if f.Prob > 0 && f.Prob < 1 {
		s += fmt.Sprintf(" p=%.2f", f.Prob)
	}
	if f.Delay > 0 {
		s += fmt.Sprintf(" delay=%v", f.Delay)
	}
	if f.Key != "" {
		s += " key=" + f.Key
	}
	return s
}

// Proxy is an HTTP reverse proxy between one client (a broker) and an S3
// server, which injects faults on command. Its methods are safe for
// concurrent use.
type Proxy struct {
	target    *url.URL
	transport *http.Transport
	srv       *http.Server
	addr      string

	mu        sync.Mutex
	ln        net.Listener // nil while refusing
	fault     Fault
	latency   time.Duration
	jitter    time.Duration
	healed    chan struct{} // closed (and replaced) at every Heal and Inject
	conns     map[net.Conn]struct{}
	rng       *rand.Rand
	counts    map[string]int // "OP outcome" -> requests
	held      map[Op]int     // requests a black hole holds now
	heldPaths map[string]int // the same, by "OP path"
	closed    bool
	serveDone chan struct{}
	rec       *recording        // nil: no history is recorded (see Record)
	onWrite   func(LandedWrite) // nil: none (see ObserveWrites)
}

// NewProxy starts a proxy to target (an http:// base URL) on a free port of
// 127.0.0.1. seed seeds its choices for faults with a probability.
func NewProxy(target string, seed uint64) (*Proxy, error) {
	u, err := url.Parse(target)
	if err != nil || u.Scheme != "http" || u.Host == "" {
		return nil, fmt.Errorf("faults: proxy target %q: want http://host:port", target)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	p := &Proxy{
		target: u,
		transport: &http.Transport{
			Proxy:               nil,
			DisableCompression:  true,
			MaxIdleConnsPerHost: 16,
			IdleConnTimeout:     30 * time.Second,
			DialContext:         (&net.Dialer{Timeout: 2 * time.Second}).DialContext,
		},
		addr:      ln.Addr().String(),
		healed:    make(chan struct{}),
		conns:     map[net.Conn]struct{}{},
		rng:       rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15)),
		counts:    map[string]int{},
		held:      map[Op]int{},
		heldPaths: map[string]int{},
	}
	p.srv = &http.Server{
		Handler:           p,
		ReadHeaderTimeout: 10 * time.Second,
		ConnState:         p.connState,
	}
	p.serve(ln)
	return p, nil
}

// URL returns the proxy's endpoint, http://127.0.0.1:PORT.
func (p *Proxy) URL() string { return "http://" + p.addr }

// serve serves on ln; callers hold no lock.
func (p *Proxy) serve(ln net.Listener) {
	done := make(chan struct{})
	p.mu.Lock()
	p.ln, p.serveDone = &resetListener{Listener: ln, p: p}, done
	l := p.ln
	p.mu.Unlock()
	go func() {
		defer close(done)
		_ = p.srv.Serve(l)
	}()
}

// connState tracks open connections, so that Refuse and Reset can cut them.
func (p *Proxy) connState(c net.Conn, s http.ConnState) {
	p.mu.Lock()
	defer p.mu.Unlock()
	switch s {
	case http.StateNew:
		p.conns[c] = struct{}{}
	case http.StateClosed, http.StateHijacked:
		delete(p.conns, c)
	}
}

// SetLatency delays every request by latency plus a uniformly random part of
// jitter before anything else happens to it. Zero turns it off.
func (p *Proxy) SetLatency(latency, jitter time.Duration) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.latency, p.jitter = latency, jitter
}

// Inject replaces the current fault with f (releasing requests a black hole
// held: they are forwarded).
func (p *Proxy) Inject(f Fault) error {
	if f.Action == Refuse {
		return p.refuse(f)
	}
	p.mu.Lock()
	wasRefusing := p.ln == nil
	p.fault = f
	p.release()
	p.mu.Unlock()
	if wasRefusing {
		if err := p.relisten(); err != nil {
			return err
		}
	}
	if f.Action == Reset {
		p.cutConns()
	}
	return nil
}

// Heal removes the fault and the latency: held requests are forwarded, a
// refusing proxy listens again on its port.
func (p *Proxy) Heal() error {
	p.SetLatency(0, 0)
	return p.Inject(Fault{Action: Forward})
}

// release wakes the requests held by a black hole. Callers hold p.mu.
func (p *Proxy) release() {
	close(p.healed)
	p.healed = make(chan struct{})
}

func (p *Proxy) refuse(f Fault) error {
	p.mu.Lock()
	p.fault = f
	p.release()
	ln, done := p.ln, p.serveDone
	p.ln = nil
	p.mu.Unlock()
	if ln != nil {
		_ = ln.Close()
		<-done
	}
	p.cutConns()
	return nil
}

// relisten listens on the proxy's port again after Refuse. The port was free
// a moment ago; another process could take it meanwhile, hence a few tries.
func (p *Proxy) relisten() error {
	var err error
	for range 50 {
		var ln net.Listener
		if ln, err = net.Listen("tcp", p.addr); err == nil {
			p.mu.Lock()
			closed := p.closed
			p.mu.Unlock()
			if closed {
				return ln.Close()
			}
			p.serve(ln)
			return nil
		}
		time.Sleep(20 * time.Millisecond)
	}
	return fmt.Errorf("faults: proxy cannot listen on %s again: %w", p.addr, err)
}

// cutConns resets every open client connection.
func (p *Proxy) cutConns() {
	p.mu.Lock()
	conns := make([]net.Conn, 0, len(p.conns))
	for c := range p.conns {
		conns = append(conns, c)
	}
	p.mu.Unlock()
	for _, c := range conns {
		tcpgate.ResetConn(c)
	}
}

// resetListener resets connections while the proxy's fault is Reset.
type resetListener struct {
	net.Listener
	p *Proxy
}

func (l *resetListener) Accept() (net.Conn, error) {
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		l.p.mu.Lock()
		reset := l.p.fault.Action == Reset
		if reset {
			l.p.counts["CONN reset"]++
		}
		l.p.mu.Unlock()
		if !reset {
			return c, nil
		}
		tcpgate.ResetConn(c)
	}
}

// Close stops the proxy and closes every connection. Held requests end.
func (p *Proxy) Close() error {
	p.mu.Lock()
	p.closed = true
	p.release()
	p.mu.Unlock()
	err := p.srv.Close()
	p.transport.CloseIdleConnections()
	return err
}

// Counts returns how many requests the proxy saw, by "OP outcome": the
// outcome is the server's status code for a forwarded request, or what a
// fault did ("blackhole", "blackhole-abandoned", "500", "drop-after-forward
// 200", ...). "CONN reset" counts connections reset on accept.
func (p *Proxy) Counts() map[string]int {
	p.mu.Lock()
	defer p.mu.Unlock()
	m := make(map[string]int, len(p.counts))
	for k, v := range p.counts {
		m[k] = v
	}
	return m
}

func (p *Proxy) hold(op Op, path string, n int) {
	p.mu.Lock()
	p.held[op] += n
	p.heldPaths[string(op)+" "+path] += n
	p.mu.Unlock()
}

// Held returns how many requests of op a black hole holds now, or how many
// answers SlowAnswer holds.
func (p *Proxy) Held(op Op) int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.held[op]
}

// HeldOn returns how many requests of op on a path containing part a black
// hole holds now, or how many such answers SlowAnswer holds.
func (p *Proxy) HeldOn(op Op, part string) int {
	p.mu.Lock()
	defer p.mu.Unlock()
	n := 0
	for k, v := range p.heldPaths {
		if path, ok := strings.CutPrefix(k, string(op)+" "); ok && strings.Contains(path, part) {
			n += v
		}
	}
	return n
}

func (p *Proxy) count(op Op, outcome string) {
	p.mu.Lock()
	p.counts[string(op)+" "+outcome]++
	p.mu.Unlock()
}

// decide returns the action for a request of op, its delay, and the channel a
// black hole waits on.
func (p *Proxy) decide(op Op, path string) (Fault, time.Duration, <-chan struct{}) {
	p.mu.Lock()
	defer p.mu.Unlock()
	d := p.latency
	if p.jitter > 0 {
		d += time.Duration(p.rng.Int64N(int64(p.jitter)))
	}
	f := p.fault
	if f.Action == Forward || f.Action == Refuse || f.Action == Reset {
		return Fault{}, d, nil
	}
	if len(f.Ops) > 0 && !slices.Contains(f.Ops, op) || !strings.HasSuffix(path, f.Key) {
		return Fault{}, d, nil
	}
	if f.Prob > 0 && f.Prob < 1 && p.rng.Float64() >= f.Prob {
		return Fault{}, d, nil
	}
	return f, d, p.healed
}

// ServeHTTP handles one request from the client.
func (p *Proxy) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	op := s3wire.Classify(r)
	// Read the body first: only then does the server notice a client that
	// hangs up (and cancel r.Context()), which a black hole relies on.
	body, err := io.ReadAll(r.Body)
	if err != nil {
		p.count(op, "client-error")
		return
	}
	f, delay, healed := p.decide(op, r.URL.Path)
	act := f.Action
	ctx := r.Context()
	if delay > 0 {
		t := time.NewTimer(delay)
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			p.count(op, "abandoned-in-latency")
			return
		}
	}
	switch act {
	case BlackHole:
		p.hold(op, r.URL.Path, +1)
		defer p.hold(op, r.URL.Path, -1)
		select {
		case <-healed:
			p.count(op, "blackhole-released")
			p.forward(w, r, body, op, Fault{})
		case <-ctx.Done():
			p.count(op, "blackhole")
		}
	case Error500:
		p.count(op, "500")
		writeS3Error(w, r, http.StatusInternalServerError, "InternalError", "We encountered an internal error. Please try again.")
	case Error503:
		p.count(op, "503")
		writeS3Error(w, r, http.StatusServiceUnavailable, "ServiceUnavailable", "Please reduce your request rate.")
	case Conflict409:
		p.count(op, "409")
		writeS3Error(w, r, http.StatusConflict, "ConditionalRequestConflict",
			"A conflicting conditional operation is currently in progress against this resource. Please try again.")
	default:
		p.forward(w, r, body, op, f)
	}
}

// notSent reports whether a round trip's error shows the request never
// reached the server: the connection could not be made (the server is
// stopped). Recording such a write as of unknown outcome would only widen
// the linearizability check's search (hundreds of them while the server is
// down made it time out).
func notSent(err error) bool {
	var op *net.OpError
	return errors.As(err, &op) && op.Op == "dial"
}

// forward passes r to the server; f's action is Forward, DropAfterForward,
// FailAfterForward or SlowAnswer.
func (p *Proxy) forward(w http.ResponseWriter, r *http.Request, body []byte, op Op, f Fault) {
	out, err := http.NewRequestWithContext(r.Context(), r.Method, p.target.Scheme+"://"+p.target.Host+r.URL.RequestURI(), bytes.NewReader(body))
	if err != nil {
		p.count(op, "proxy-error")
		writeS3Error(w, r, http.StatusBadGateway, "BadGateway", err.Error())
		return
	}
	out.Header = r.Header.Clone()
	for _, h := range hopHeaders {
		out.Header.Del(h)
	}
	out.Host = r.Host // the request is signed for this host
	out.ContentLength = int64(len(body))
	if len(body) == 0 {
		out.Body = http.NoBody
	}
	start := p.recordStart()
	resp, err := p.transport.RoundTrip(out)
	if err != nil {
		if !notSent(err) { // a request the server never got constrains nothing
			p.recordCall(op, r, body, start, 0, nil, nil)
		}
		if errors.Is(err, context.Canceled) || r.Context().Err() != nil {
			p.count(op, "client-gone")
			return
		}
		p.count(op, "upstream-error")
		writeS3Error(w, r, http.StatusBadGateway, "BadGateway", "the proxy could not reach the server: "+err.Error())
		return
	}
	respBody, err := io.ReadAll(resp.Body)
	_ = resp.Body.Close()
	if err != nil {
		p.recordCall(op, r, body, start, 0, nil, nil)
		p.count(op, "upstream-error")
		writeS3Error(w, r, http.StatusBadGateway, "BadGateway", "the proxy could not read the server's answer: "+err.Error())
		return
	}
	p.recordCall(op, r, body, start, resp.StatusCode, resp.Header, respBody)
	p.observeWrite(op, r, body, resp.StatusCode, resp.Header)
	code := fmt.Sprint(resp.StatusCode)
	switch f.Action {
	case SlowAnswer:
		p.count(op, "slow-answer "+code)
		p.hold(op, r.URL.Path, +1)
		t := time.NewTimer(f.Delay)
		select {
		case <-t.C:
		case <-r.Context().Done():
		}
		t.Stop()
		p.hold(op, r.URL.Path, -1)
		if r.Context().Err() != nil {
			return
		}
	case DropAfterForward:
		p.count(op, "drop-after-forward "+code)
		if hj, ok := w.(http.Hijacker); ok {
			if c, _, err := hj.Hijack(); err == nil {
				tcpgate.ResetConn(c)
				return
			}
		}
		panic(http.ErrAbortHandler) // closes the connection without an answer
	case FailAfterForward:
		p.count(op, "fail-after-forward "+code)
		writeS3Error(w, r, http.StatusInternalServerError, "InternalError", "We encountered an internal error. Please try again.")
		return
	}
	if f.Action != SlowAnswer {
		p.count(op, code)
	}
	h := w.Header()
	for k, vs := range resp.Header {
		if slices.Contains(hopHeaders, http.CanonicalHeaderKey(k)) {
			continue
		}
		h[k] = vs
	}
	w.WriteHeader(resp.StatusCode)
	_, _ = w.Write(respBody)
}

// hopHeaders are not passed on by a proxy (RFC 9110, section 7.6.1).
var hopHeaders = []string{
	"Connection", "Keep-Alive", "Proxy-Connection", "Proxy-Authenticate", "Proxy-Authorization",
	"Te", "Trailer", "Transfer-Encoding", "Upgrade", "Expect",
}

// s3Error is the XML body of an S3 error answer.
type s3Error struct {
	XMLName   xml.Name `xml:"Error"`
	Code      string   `xml:"Code"`
	Message   string   `xml:"Message"`
	Resource  string   `xml:"Resource"`
	RequestID string   `xml:"RequestId"`
}

// writeS3Error answers as S3 does: the status, an XML error body (none to a
// HEAD), and a request ID.
func writeS3Error(w http.ResponseWriter, r *http.Request, status int, code, msg string) {
	body, _ := xml.Marshal(s3Error{Code: code, Message: msg, Resource: r.URL.Path, RequestID: "faults-proxy"})
	h := w.Header()
	h.Set("Content-Type", "application/xml")
	h.Set("X-Amz-Request-Id", "faults-proxy")
	if r.Method == http.MethodHead {
		w.WriteHeader(status)
		return
	}
	body = append([]byte(xml.Header), body...)
	h.Set("Content-Length", fmt.Sprint(len(body)))
	w.WriteHeader(status)
	_, _ = w.Write(body)
}
