package gossip

import (
	"context"
	"errors"
	"testing"
	"time"
)

func TestWaitSeenAloneOpensAtOnce(t *testing.T) {
	n := start(t, testConfig("alone"))
	if err := n.SetClaim(1, 3); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := n.WaitSeen(ctx, 1, 3, 0); err != nil {
		t.Fatalf("WaitSeen alone = %v", err)
	}
	g := n.StartGate(1, 3, 0, 5*time.Second)
	select {
	case <-g.Done():
	case <-time.After(5 * time.Second):
		t.Fatal("gate of a lone member did not open")
	}
	if g.Check() != nil || g.Err() != nil {
		t.Errorf("Check = %v, Err = %v, want nil", g.Check(), g.Err())
	}
}

// heard returns what the peers reported to the WaitSeen in progress on n
// (nil when none is).
func heard(n *Node) map[string]int64 {
	n.gates.mu.Lock()
	defer n.gates.mu.Unlock()
	for w := range n.gates.set {
		out := map[string]int64{}
		for k, v := range w.heard {
			out[k] = v
		}
		return out
	}
	return nil
}

func TestWaitSeenOpensOnlyWhenPeersSeeTheVersion(t *testing.T) {
	nodes := cluster(t, names(3)...)
	a, b, c := nodes[0], nodes[1], nodes[2]
	if err := a.SetClaim(7, 1); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	res := make(chan error, 1)
	go func() { res <- a.WaitSeen(ctx, 7, 2, 0) }()

	// Both peers answer with the old version: the gate stays shut.
	eventually(t, "b and c answer version 1", func() bool {
		h := heard(a)
		return h["b"] == 1 && h["c"] == 1
	})
	select {
	case err := <-res:
		t.Fatalf("WaitSeen returned %v before the version was advertised", err)
	default:
	}

	if err := a.SetClaim(7, 2); err != nil {
		t.Fatal(err)
	}
	if err := <-res; err != nil {
		t.Fatalf("WaitSeen = %v", err)
	}
	// The gate opened only once every peer's own view shows the version.
	for _, p := range []*Node{b, c} {
		if v := p.KnownNodes()[7]; v < 2 {
			t.Errorf("%s knows version %d of ID 7 after the gate opened", p.Name(), v)
		}
	}
}

func TestWaitSeenMinPeers(t *testing.T) {
	nodes := cluster(t, names(3)...)
	if err := nodes[0].SetClaim(2, 4); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := nodes[0].WaitSeen(ctx, 2, 4, 1); err != nil {
		t.Fatalf("WaitSeen(minPeers 1) = %v", err)
	}
	if err := nodes[0].WaitSeen(ctx, 2, 4, 5); err != nil {
		t.Fatalf("WaitSeen(minPeers 5 of 2 live) = %v", err)
	}
}

func TestWaitSeenTimesOut(t *testing.T) {
	nodes := cluster(t, names(2)...)
	a := nodes[0]
	if err := a.SetClaim(7, 1); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	err := a.WaitSeen(ctx, 7, 99, 0)
	if !errors.Is(err, ErrNotSeen) || !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("WaitSeen of an unseen version = %v, want ErrNotSeen and DeadlineExceeded", err)
	}

	g := a.StartGate(7, 99, 0, 500*time.Millisecond)
	if err := g.Check(); !errors.Is(err, ErrWaiting) {
		t.Errorf("Check of a fresh gate = %v, want ErrWaiting", err)
	}
	if g.Err() != nil {
		t.Errorf("Err of a closed gate = %v, want nil", g.Err())
	}
	<-g.Done()
	if err := g.Check(); err != nil {
		t.Errorf("Check after the timeout = %v, want nil (the gate is bounded)", err)
	}
	if !errors.Is(g.Err(), ErrNotSeen) {
		t.Errorf("Err after the timeout = %v, want ErrNotSeen", g.Err())
	}
}

func TestGateOnClose(t *testing.T) {
	nodes := cluster(t, names(2)...)
	a := nodes[0]
	g := a.StartGate(7, 99, 0, 0)
	res := make(chan error, 1)
	go func() { res <- a.WaitSeen(context.Background(), 7, 99, 0) }()
	if err := a.Close(); err != nil {
		t.Fatal(err)
	}
	<-g.Done()
	if !errors.Is(g.Check(), ErrClosed) || !errors.Is(g.Err(), ErrClosed) {
		t.Errorf("gate after Close: Check %v, Err %v, want ErrClosed", g.Check(), g.Err())
	}
	if err := <-res; !errors.Is(err, ErrClosed) {
		t.Errorf("WaitSeen after Close = %v, want ErrClosed", err)
	}
	if g := a.StartGate(1, 1, 0, time.Second); !errors.Is(g.Check(), ErrClosed) {
		t.Errorf("gate started after Close: Check = %v, want ErrClosed", g.Check())
	}
}
