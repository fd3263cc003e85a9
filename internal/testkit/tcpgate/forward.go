package tcpgate

import (
	"net"
	"sync"
)

// serve accepts connections on ln until it is closed (by Refuse or Close).
func (g *Gate) serve(ln net.Listener) {
	for {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		g.mu.Lock()
		g.accepted++
		if g.mode == reset || g.closed {
			g.reset++
			g.mu.Unlock()
			ResetConn(c)
			continue
		}
		g.conns[c] = true
		g.mu.Unlock()
		go g.pipe(c)
	}
}

// pipe forwards one client connection to the target, once the gate lets
// bytes through; an unreachable target closes it.
func (g *Gate) pipe(c net.Conn) {
	if !g.wait() {
		g.untrack(c)
		return
	}
	up, err := net.DialTimeout("tcp", g.target, dialTimeout)
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

// copy forwards src to dst, holding every chunk while the gate is blocked,
// and closes both when either ends.
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
		m, open, closed := g.mode, g.open, g.closed
		g.mu.Unlock()
		if closed {
			return false
		}
		if m != block {
			return true
		}
		<-open
	}
}

// track adds c to the connections that Reset, Refuse and Close act on;
// false (c closed) when the gate is closed.
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

// untrack closes c and forgets it.
func (g *Gate) untrack(c net.Conn) {
	g.mu.Lock()
	delete(g.conns, c)
	g.mu.Unlock()
	_ = c.Close()
}
