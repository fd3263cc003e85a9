package gossip

import (
	"testing"
	"time"
)

// closedWithin reports whether ch is closed within d (a bound that only a
// broken signal reaches; the happy path returns as soon as gossip delivers).
func closedWithin(ch <-chan struct{}, d time.Duration) bool {
	select {
	case <-ch:
		return true
	case <-time.After(d):
		return false
	}
}

// isClosed reports whether ch is closed now.
func isClosed(ch <-chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}

// TestFreedFiresWhenAPeerDropsItsID: Freed's channel closes when a peer that
// advertised a node ID advertises none, and again when a peer holding one
// leaves; not when a peer takes one, nor for this member's own changes.
func TestFreedFiresWhenAPeerDropsItsID(t *testing.T) {
	nodes := cluster(t, names(3)...)
	a, b, c := nodes[0], nodes[1], nodes[2]
	if err := b.SetClaim(1, 1); err != nil {
		t.Fatal(err)
	}
	if err := c.SetClaim(2, 1); err != nil {
		t.Fatal(err)
	}
	eventually(t, "a knows IDs 1 and 2", func() bool { return mapsEqual(a.KnownNodes(), map[int]int64{1: 1, 2: 1}) })

	freed := a.Freed()
	if err := a.SetClaim(0, 1); err != nil { // a's own claim: no peer freed anything
		t.Fatal(err)
	}
	if err := a.ClearClaim(); err != nil {
		t.Fatal(err)
	}
	if err := b.SetClaim(1, 2); err != nil { // b renews its ID at a new version: not freed
		t.Fatal(err)
	}
	eventually(t, "a sees b's version 2", func() bool { return a.KnownNodes()[1] == 2 })
	if isClosed(freed) {
		t.Fatal("Freed closed without a peer dropping its ID")
	}

	if err := b.ClearClaim(); err != nil {
		t.Fatal(err)
	}
	if !closedWithin(freed, 10*time.Second) {
		t.Fatal("Freed not closed after b advertised no ID")
	}
	if _, ok := a.KnownNodes()[1]; ok {
		t.Fatalf("KnownNodes = %v after the release, still with ID 1", a.KnownNodes())
	}

	freed = a.Freed()
	if isClosed(freed) {
		t.Fatal("a new Freed channel is closed before any change")
	}
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	if !closedWithin(freed, 10*time.Second) {
		t.Fatal("Freed not closed after c, holding ID 2, left")
	}

	if err := a.Close(); err != nil {
		t.Fatal(err)
	}
	if !isClosed(a.Freed()) {
		t.Fatal("Freed after Close is not closed")
	}
}

// TestRankAmongWaitingMembers: members that hold no node ID get distinct
// ranks by name; a member holding one has none, and taking one moves the
// others up.
func TestRankAmongWaitingMembers(t *testing.T) {
	nodes := cluster(t, names(3)...)
	for i, n := range nodes {
		if r, of := n.Rank(); r != i || of != 3 {
			t.Errorf("%s: Rank() = %d of %d, want %d of 3", n.Name(), r, of, i)
		}
	}
	if err := nodes[0].SetClaim(5, 1); err != nil {
		t.Fatal(err)
	}
	if r, of := nodes[0].Rank(); r != 0 || of != 0 {
		t.Errorf("a holds an ID: Rank() = %d of %d, want 0 of 0", r, of)
	}
	for i, n := range nodes[1:] {
		eventually(t, n.Name()+" sees a holding ID 5", func() bool { return n.KnownNodes()[5] == 1 })
		if r, of := n.Rank(); r != i || of != 2 {
			t.Errorf("%s: Rank() = %d of %d, want %d of 2", n.Name(), r, of, i)
		}
	}
}
