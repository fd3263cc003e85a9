package node

import (
	"context"
	"errors"
	"os"
	"testing"
	"time"

	"github.com/nodeid/nodeid/nodeid"
)

// idFileGone waits up to 5 s (real time) for the id file at path to be
// gone, and reports whether it is.
func idFileGone(path string) bool {
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(time.Millisecond) {
		if _, err := os.Stat(path); errors.Is(err, os.ErrNotExist) {
			return true
		} else if time.Now().After(deadline) {
			return false
		}
	}
}

// TestIDFileFollowsTheClaimAlone: the node's id file and health follow a
// claim taken by a bare Provider, one that reports to no observer of the
// node's (the caller's NopObserver: no metrics, no node events), with no
// refresh tick: the file is taken down at a jeopardy, written again at the
// recovery, and removed at the loss, which ends the node; Check says
// ErrJeopardy, then nil, then the loss. What the node must know of its claim
// comes from the claim (Claim.Changed), not from code for metrics.
func TestIDFileFollowsTheClaimAlone(t *testing.T) {
	clk, fs, cut, path, cfg, n := idFileNode(t)
	p, err := nodeid.New(fs, cfg.Provider)
	if err != nil {
		t.Fatal(err)
	}
	c, err := p.Acquire(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	// What Start does after its own Acquire.
	n.provider.Store(p)
	changed := c.Changed()
	n.activate(c)
	go n.watch(c, changed)
	t.Cleanup(func() { _ = n.Close(closeCtx(t)) })
	if err := n.idFile.writeOnceFloorPassed(context.Background(), c, n.host, n.log); err != nil {
		t.Fatal(err)
	}
	if err := idFileUp(path); err != nil || n.Check() != nil {
		t.Fatalf("held: id file %v, Check %v", err, n.Check())
	}

	cut.Store(true)
	stepUntil(t, clk, 5*time.Second, "in jeopardy", func() bool { return c.Status().Jeopardy })
	if !idFileGone(path) || !errors.Is(n.Check(), nodeid.ErrJeopardy) {
		t.Fatalf("in jeopardy: id file still up (%v), Check %v", !idFileGone(path), n.Check())
	}
	cut.Store(false)
	stepUntil(t, clk, 2*time.Second, "recovered", func() bool { return c.Status().Recoveries > 0 && c.Valid() })
	if err := idFileUp(path); err != nil || n.Check() != nil {
		t.Fatalf("recovered: id file %v, Check %v", err, n.Check())
	}

	c.ObserveVersion(c.Version() + 1) // a peer runs the ID: lost
	select {
	case <-n.Done():
	case <-time.After(5 * time.Second):
		t.Fatal("the node did not end at its claim's loss")
	}
	if !idFileGone(path) || !errors.Is(n.Err(), nodeid.ErrLeaseLost) || !errors.Is(n.Check(), nodeid.ErrLeaseLost) {
		t.Fatalf("lost: id file gone %v, node Err %v, Check %v", idFileGone(path), n.Err(), n.Check())
	}
}
