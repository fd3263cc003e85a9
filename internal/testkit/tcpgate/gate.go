// Package tcpgate is a byte-forwarding TCP proxy for tests, in front of one
// address, whose faults act on its connections: it can hold every byte both
// ways (a partition), reset its connections, or refuse new ones.
package tcpgate

import (
	"errors"
	"fmt"
	"io"
	"net"
	"sync"
	"time"
)

// Gate forwards the connections made to its address to a target, byte for
// byte, until a fault is set: Block, Reset or Refuse, each in force until
// Heal (a later one replaces an earlier).
type Gate struct {
	target string
	addr   string

	mu       sync.Mutex
	ln       net.Listener // nil while refusing
	mode     mode
	open     chan struct{} // closed by Heal and Close: held bytes go on
	conns    map[net.Conn]bool
	accepted int
	reset    int
	closed   bool
}

// mode is the fault a gate is in.
type mode int

const (
	forward mode = iota
	block
	reset
	refuse
)

// dialTimeout bounds the dial to the target; a connection whose dial fails
// is closed, as the target's closed port would close it.
const dialTimeout = 5 * time.Second

// New listens on a free port of 127.0.0.1 and forwards to target
// (host:port).
func New(target string) (*Gate, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	g := &Gate{target: target, addr: ln.Addr().String(), ln: ln,
		open: make(chan struct{}), conns: map[net.Conn]bool{}}
	go g.serve(ln)
	return g, nil
}

// Addr returns the gate's address, host:port. It stays the same through
// Refuse and Heal.
func (g *Gate) Addr() string { return g.addr }

// Block holds every byte both ways from now on, on open and new
// connections, the connections left open: a network partition as a client
// sees it, the far end silent rather than refusing. New connections are
// still accepted (as a kernel queues SYNs that never get an answer, a
// client's dial does not fail) and reach the target only after Heal.
func (g *Gate) Block() {
	g.mu.Lock()
	g.mode = block
	g.mu.Unlock()
}

// Reset resets (RST) every open connection, and every new one as soon as it
// is accepted.
func (g *Gate) Reset() {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.mode = reset
	g.resetConns()
}

// Refuse resets every open connection and stops listening: a new
// connection is refused.
func (g *Gate) Refuse() {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.mode = refuse
	g.resetConns()
	if g.ln != nil {
		_ = g.ln.Close()
		g.ln = nil
	}
}

// resetConns resets every open connection; g.mu is held.
func (g *Gate) resetConns() {
	for c := range g.conns {
		ResetConn(c)
	}
}

// Heal ends the fault: held bytes flow again, and a gate that refused
// listens again on its address (an error if it cannot within a second).
func (g *Gate) Heal() error {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.mode = forward
	close(g.open)
	g.open = make(chan struct{})
	if g.ln != nil || g.closed {
		return nil
	}
	var err error
	for range 50 { // the port may linger for a moment
		var ln net.Listener
		if ln, err = net.Listen("tcp", g.addr); err == nil {
			g.ln = ln
			go g.serve(ln)
			return nil
		}
		time.Sleep(20 * time.Millisecond)
	}
	return fmt.Errorf("tcpgate: listen again on %s: %w", g.addr, err)
}

// Stats counts what a gate did with the connections made to it.
type Stats struct {
	// Accepted is the number of connections accepted, Reset included.
	Accepted int
	// Reset is the number of connections reset as they were accepted,
	// during Reset or after Close.
	Reset int
}

// Stats returns what the gate did so far.
func (g *Gate) Stats() Stats {
	g.mu.Lock()
	defer g.mu.Unlock()
	return Stats{Accepted: g.accepted, Reset: g.reset}
}

// Close stops the gate and closes every connection; held bytes are dropped.
func (g *Gate) Close() error {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.closed {
		return nil
	}
	g.closed = true
	close(g.open)
	g.open = make(chan struct{})
	var err error
	if g.ln != nil {
		err = g.ln.Close()
	}
	for c := range g.conns {
		_ = c.Close()
	}
	if errors.Is(err, net.ErrClosed) {
		err = nil
	}
	return err
}

var _ io.Closer = (*Gate)(nil)
