package tcpgate_test

import (
	"errors"
	"io"
	"net"
	"os"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/nodeid/nodeid/internal/testkit/tcpgate"
)

// echo starts a server that writes back what it reads, and returns its
// address and a count of the connections it accepted.
func echo(t *testing.T) (string, *atomic.Int64) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = ln.Close() })
	var accepted atomic.Int64
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			accepted.Add(1)
			go func() { defer c.Close(); _, _ = io.Copy(c, c) }()
		}
	}()
	return ln.Addr().String(), &accepted
}

// newGate returns a gate in front of a new echo server, closed when t ends.
func newGate(t *testing.T) (*tcpgate.Gate, *atomic.Int64) {
	t.Helper()
	target, accepted := echo(t)
	return gateTo(t, target), accepted
}

// gateTo returns a gate in front of target, closed when t ends.
func gateTo(t *testing.T, target string) *tcpgate.Gate {
	t.Helper()
	g, err := tcpgate.New(target)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = g.Close() })
	return g
}

func dial(t *testing.T, g *tcpgate.Gate) net.Conn {
	t.Helper()
	c, err := net.Dial("tcp", g.Addr())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// roundTrip writes msg on c and reads it back from the echo server.
func roundTrip(t *testing.T, c net.Conn, msg string) {
	t.Helper()
	if _, err := c.Write([]byte(msg)); err != nil {
		t.Fatal(err)
	}
	readBack(t, c, msg)
}

func readBack(t *testing.T, c net.Conn, msg string) {
	t.Helper()
	_ = c.SetReadDeadline(time.Now().Add(10 * time.Second))
	buf := make([]byte, len(msg))
	if _, err := io.ReadFull(c, buf); err != nil {
		t.Fatalf("read back %q: %v", msg, err)
	}
	if string(buf) != msg {
		t.Fatalf("read back %q, want %q", buf, msg)
	}
}

// refused fails t unless a dial to g is refused.
func refused(t *testing.T, g *tcpgate.Gate) {
	t.Helper()
	if c, err := net.Dial("tcp", g.Addr()); err == nil {
		_ = c.Close()
		t.Fatal("dial to the gate succeeded, want it refused")
	}
}

// resetOnDial fails t unless a connection to g is reset: the reset may come
// before the dial returns, or after.
func resetOnDial(t *testing.T, g *tcpgate.Gate) {
	t.Helper()
	c, err := net.Dial("tcp", g.Addr())
	if err != nil {
		if !errors.Is(err, syscall.ECONNRESET) {
			t.Fatalf("dial to a resetting gate: %v, want a connection reset", err)
		}
		return
	}
	defer c.Close()
	ended(t, c)
}

// ended fails t unless c's far end ended it: a read returns an error other
// than the deadline's.
func ended(t *testing.T, c net.Conn) {
	t.Helper()
	_ = c.SetReadDeadline(time.Now().Add(10 * time.Second))
	_, err := c.Read(make([]byte, 1))
	if err == nil || errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("read on a connection the gate ended: %v, want it ended", err)
	}
}

func TestGateForwards(t *testing.T) {
	g, _ := newGate(t)
	c := dial(t, g)
	roundTrip(t, c, "hello")
	roundTrip(t, c, "again")
	if s := g.Stats(); s != (tcpgate.Stats{Accepted: 1}) {
		t.Fatalf("stats %+v, want one accepted", s)
	}
}

func TestGateBlockHoldsBytesUntilHeal(t *testing.T) {
	g, accepted := newGate(t)
	open := dial(t, g)
	roundTrip(t, open, "before")
	g.Block()
	if _, err := open.Write([]byte("held")); err != nil {
		t.Fatal(err)
	}
	late := dial(t, g) // accepted while blocked: the dial does not fail
	if _, err := late.Write([]byte("late")); err != nil {
		t.Fatal(err)
	}
	_ = open.SetReadDeadline(time.Now().Add(50 * time.Millisecond))
	if n, err := open.Read(make([]byte, 8)); !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("read while blocked: %d bytes, %v; want none, the connection open", n, err)
	}
	if n := accepted.Load(); n != 1 {
		t.Fatalf("target accepted %d connections while blocked, want the 1 from before", n)
	}
	if err := g.Heal(); err != nil {
		t.Fatal(err)
	}
	readBack(t, open, "held")
	readBack(t, late, "late")
	roundTrip(t, open, "after")
}

// TestGateResetAndRefuse: both faults end the open connections; a new one
// is reset or refused; after Heal the gate forwards again.
func TestGateResetAndRefuse(t *testing.T) {
	for _, tc := range []struct {
		name    string
		fault   func(*tcpgate.Gate)
		newConn func(*testing.T, *tcpgate.Gate) // checks what a new connection meets
		stats   tcpgate.Stats                   // before Heal
	}{
		{"Reset", (*tcpgate.Gate).Reset, resetOnDial, tcpgate.Stats{Accepted: 2, Reset: 1}},
		{"Refuse", (*tcpgate.Gate).Refuse, refused, tcpgate.Stats{Accepted: 1}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g, _ := newGate(t)
			open := dial(t, g)
			roundTrip(t, open, "before")
			tc.fault(g)
			ended(t, open)
			tc.newConn(t, g)
			if s := g.Stats(); s != tc.stats {
				t.Fatalf("stats %+v, want %+v", s, tc.stats)
			}
			if err := g.Heal(); err != nil {
				t.Fatal(err)
			}
			roundTrip(t, dial(t, g), "after")
		})
	}
}

func TestGateCloseEndsOpenConnections(t *testing.T) {
	g, _ := newGate(t)
	open := dial(t, g)
	roundTrip(t, open, "before")
	blocked := dial(t, g)
	g.Block()
	if _, err := blocked.Write([]byte("held")); err != nil {
		t.Fatal(err)
	}
	if err := g.Close(); err != nil {
		t.Fatal(err)
	}
	ended(t, open)
	ended(t, blocked)
	refused(t, g)
	if err := g.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
}

func TestGateUnreachableTargetClosesConnection(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	target := ln.Addr().String()
	_ = ln.Close()
	ended(t, dial(t, gateTo(t, target)))
}
