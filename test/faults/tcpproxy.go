package faults

import (
	"errors"
	"fmt"
	"io"
	"net"
	"sync"
	"time"
)

// TCPProxy stands between one broker and etcd (gRPC over HTTP/2, which the
// S3 proxy cannot read): it forwards bytes, and its faults act on the
// connections: BlackHole stops every byte both ways, the connections left
// open (a partition); Refuse closes them and refuses new ones; Reset resets
// them and every new one. Other actions are refused: etcd's answers cannot be
// rewritten here.
type TCPProxy struct {
	target string
	addr   string

	mu     sync.Mutex
	ln     net.Listener
	action Action
	conns  map[net.Conn]bool
	heal   chan struct{} // closed by Heal: held copies go on
	counts map[string]int
	closed bool
}

// NewTCPProxy listens on a free port of 127.0.0.1 and forwards to target
// (host:port).
func NewTCPProxy(target string) (*TCPProxy, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	p := &TCPProxy{target: target, addr: ln.Addr().String(), ln: ln, conns: map[net.Conn]bool{},
		heal: make(chan struct{}), counts: map[string]int{}}
	go p.serve(ln)
	return p, nil
}

// URL returns the proxy's address, host:port (an etcd endpoint).
func (p *TCPProxy) URL() string { return p.addr }

func (p *TCPProxy) serve(ln net.Listener) {
	for {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		p.mu.Lock()
		action := p.action
		p.counts["CONN accepted"]++
		if action == Reset || p.closed {
			p.counts["CONN reset"]++
			p.mu.Unlock()
			resetConn(c)
			continue
		}
		p.conns[c] = true
		p.mu.Unlock()
		go p.pipe(c)
	}
}

// pipe forwards one client connection to the target.
func (p *TCPProxy) pipe(c net.Conn) {
	up, err := net.DialTimeout("tcp", p.target, 5*time.Second)
	if err != nil {
		p.drop(c)
		_ = c.Close()
		return
	}
	p.mu.Lock()
	p.conns[up] = true
	p.mu.Unlock()
	var wg sync.WaitGroup
	wg.Add(2)
	go func() { defer wg.Done(); p.copy(up, c) }()
	go func() { defer wg.Done(); p.copy(c, up) }()
	wg.Wait()
	p.drop(c)
	p.drop(up)
}

// copy forwards src to dst, holding every chunk while a black hole is on.
func (p *TCPProxy) copy(dst, src net.Conn) {
	defer dst.Close()
	defer src.Close()
	buf := make([]byte, 32<<10)
	for {
		n, err := src.Read(buf)
		if n > 0 {
			if !p.wait() {
				return
			}
			if _, werr := dst.Write(buf[:n]); werr != nil {
				return
			}
		}
		if err != nil {
			return
		}
	}
}

// wait holds while a black hole is on; false when the proxy closed meanwhile.
func (p *TCPProxy) wait() bool {
	for {
		p.mu.Lock()
		action, heal, closed := p.action, p.heal, p.closed
		p.mu.Unlock()
		if closed {
			return false
		}
		if action != BlackHole {
			return true
		}
		<-heal
	}
}

func (p *TCPProxy) drop(c net.Conn) {
	p.mu.Lock()
	delete(p.conns, c)
	p.mu.Unlock()
}

// Inject turns a fault on: BlackHole, Refuse or Reset.
func (p *TCPProxy) Inject(f Fault) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	switch f.Action {
	case BlackHole:
		p.counts["blackhole"]++
	case Refuse, Reset:
		p.counts[f.Action.String()]++
		for c := range p.conns {
			resetConn(c)
		}
		if f.Action == Refuse && p.ln != nil {
			_ = p.ln.Close()
			p.ln = nil
		}
	default:
		return fmt.Errorf("tcp proxy: %v is not a fault on etcd's connections", f.Action)
	}
	p.action = f.Action
	return nil
}

// Heal ends the fault: held bytes flow again, and a refusing proxy listens
// again on its address.
func (p *TCPProxy) Heal() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.action = Forward
	close(p.heal)
	p.heal = make(chan struct{})
	if p.ln == nil && !p.closed {
		var err error
		for i := 0; i < 50; i++ { // the port may linger for a moment
			var ln net.Listener
			if ln, err = net.Listen("tcp", p.addr); err == nil {
				p.ln = ln
				go p.serve(ln)
				return nil
			}
			time.Sleep(20 * time.Millisecond)
		}
		return fmt.Errorf("tcp proxy: listen again on %s: %w", p.addr, err)
	}
	return nil
}

// Held is zero: the proxy does not see requests.
func (p *TCPProxy) Held(Op) int { return 0 }

// SetLatency does nothing: no latency faults on etcd.
func (p *TCPProxy) SetLatency(time.Duration, time.Duration) {}

// Counts returns what the proxy did, by "CONN outcome" or fault.
func (p *TCPProxy) Counts() map[string]int {
	p.mu.Lock()
	defer p.mu.Unlock()
	m := make(map[string]int, len(p.counts))
	for k, v := range p.counts {
		m[k] = v
	}
	return m
}

// Close stops the proxy and closes every connection.
func (p *TCPProxy) Close() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return nil
	}
	p.closed = true
	close(p.heal)
	p.heal = make(chan struct{})
	var err error
	if p.ln != nil {
		err = p.ln.Close()
	}
	for c := range p.conns {
		_ = c.Close()
	}
	if errors.Is(err, net.ErrClosed) {
		err = nil
	}
	return err
}

var _ io.Closer = (*TCPProxy)(nil)
