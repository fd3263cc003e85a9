package etcdtest

import (
	"errors"
	"io"
	"net"
	"sync"
	"time"
)

// Gate is a TCP proxy in front of one address that can hold every byte both
// ways (Block), its connections left open: a network partition as a client
// sees it, the far end silent rather than refusing. While blocked it still
// accepts connections (as a kernel would queue SYNs that never get an
// answer, the client's dial does not fail) and holds their bytes too.
type Gate struct {
	target string
	ln     net.Listener

	mu      sync.Mutex
	blocked bool
	open    chan struct{} // closed by Unblock and Close: held bytes go on
	conns   map[net.Conn]bool
	closed  bool
}

// NewGate listens on a free port of 127.0.0.1 and forwards to target
// (host:port).
func NewGate(target string) (*Gate, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	g := &Gate{target: target, ln: ln, open: make(chan struct{}), conns: map[net.Conn]bool{}}
	go g.serve()
	return g, nil
}

// Addr returns the gate's address, host:port.
func (g *Gate) Addr() string { return g.ln.Addr().String() }

func (g *Gate) serve() {
	for {
		c, err := g.ln.Accept()
		if err != nil {
			return
		}
		go g.pipe(c)
	}
}

// pipe forwards one connection; an unreachable target (a stopped member)
// closes it, as the member's closed port would.
func (g *Gate) pipe(c net.Conn) {
	if !g.track(c) {
		return
	}
	if !g.wait() {
		return
	}
	up, err := net.DialTimeout("tcp", g.target, 5*time.Second)
	if err != nil {
		g.untrack(c)
		return
	}
	if !g.track(up) {
		g.untrack(c)
		return
	}
	var wg sync.WaitGroup
	wg.Add(2)
	go func() { defer wg.Done(); g.copy(up, c) }()
	go func() { defer wg.Done(); g.copy(c, up) }()
	wg.Wait()
	g.untrack(c)
	g.untrack(up)
}

func (g *Gate) copy(dst, src net.Conn) {
	defer dst.Close()
	defer src.Close()
	buf := make([]byte, 32<<10)
	for {
		n, err := src.Read(buf)
		if n > 0 {
			if !g.wait() {
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

// wait holds while the gate is blocked; false once it is closed.
func (g *Gate) wait() bool {
	for {
		g.mu.Lock()
		blocked, open, closed := g.blocked, g.open, g.closed
		g.mu.Unlock()
		if closed {
			return false
		}
		if !blocked {
			return true
		}
		<-open
	}
}

// track adds c to the connections Close closes; false (c closed) when the
// gate is closed.
func (g *Gate) track(c net.Conn) bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.closed {
		_ = c.Close()
		return false
	}
	g.conns[c] = true
	return true
}

func (g *Gate) untrack(c net.Conn) {
	g.mu.Lock()
	delete(g.conns, c)
	g.mu.Unlock()
	_ = c.Close()
}

// Block holds every byte both ways from now on, on open and new connections.
func (g *Gate) Block() {
	g.mu.Lock()
	g.blocked = true
	g.mu.Unlock()
}

// Unblock lets the held bytes and every later one through.
func (g *Gate) Unblock() {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.blocked && !g.closed {
		g.blocked = false
		close(g.open)
		g.open = make(chan struct{})
	}
}

// Close stops the gate and closes its connections.
func (g *Gate) Close() error {
	g.mu.Lock()
	if g.closed {
		g.mu.Unlock()
		return nil
	}
	g.closed = true
	close(g.open)
	for c := range g.conns {
		_ = c.Close()
	}
	g.mu.Unlock()
	if err := g.ln.Close(); err != nil && !errors.Is(err, net.ErrClosed) {
		return err
	}
	return nil
}

var _ io.Closer = (*Gate)(nil)
