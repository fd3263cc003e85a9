package node

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nodeid/nodeid/gossip"
	"github.com/nodeid/nodeid/internal/testkit/fakeclock"
	"github.com/nodeid/nodeid/lease"
	"github.com/nodeid/nodeid/lease/storetest"
)

// TestNodesWithNoJoinFindEachOtherFromTheBucket: three nodes gossip with no
// Join at all. Each publishes its gossip address in the lease it holds, and
// each finds the others from the bucket: one pool, where each sees every
// node ID.
func TestNodesWithNoJoinFindEachOtherFromTheBucket(t *testing.T) {
	store := storetest.NewMemStore()
	var nodes []*Node
	for _, task := range []string{"a", "b", "c"} {
		nodes = append(nodes, gossipNode(t, task, 3, store, gossip.DefaultLocalConfig()))
	}
	for _, n := range nodes {
		id := n.claim.Load().NodeID()
		if rec := readRecord(t, store, id); rec.Gossip != n.gossip.Load().Addr() {
			t.Errorf("node %d's record publishes gossip %q, want %q", id, rec.Gossip, n.gossip.Load().Addr())
		}
	}
	deadline := time.Now().Add(15 * time.Second)
	for _, n := range nodes {
		for len(n.gossip.Load().KnownNodes()) != 3 {
			if time.Now().After(deadline) {
				t.Fatalf("%s sees %v, want all 3 node IDs", n.cfg.Provider.TaskID, n.gossip.Load().Members())
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
}

// countingLists is a store that counts its listings.
type countingLists struct {
	lease.Store
	lists atomic.Int64
}

func (c *countingLists) List(ctx context.Context) (lease.Listing, error) {
	c.lists.Add(1)
	return c.Store.List(ctx)
}

// TestSeedLookupsOfALoneNodeArePaced: lookups that have found no other
// holder's gossip address for seedIdleAfter list the store at most every
// seedIdlePace, so a broker alone does not list at every try of gossip's
// rejoin loop; before that, each lookup lists.
func TestSeedLookupsOfALoneNodeArePaced(t *testing.T) {
	store := &countingLists{Store: storetest.NewMemStore()}
	clk := fakeclock.New(time.Now().Round(time.Second))
	cfg := testConfig("a", 1)
	cfg.Provider.Clock = clk
	n, err := New(store, cfg)
	if err != nil {
		t.Fatal(err)
	}
	lookup := func(wantLists int64) {
		t.Helper()
		if got := n.gossipSeeds(context.Background()); len(got) != 0 {
			t.Fatalf("seeds %v from an empty store", got)
		}
		if got := store.lists.Load(); got != wantLists {
			t.Fatalf("at %v: %d listings, want %d", clk.Now(), got, wantLists)
		}
	}
	for i := range int64(4) { // every 30 s until 2 min: each lists
		lookup(i + 1)
		clk.Advance(seedIdleAfter / 4)
	}
	lookup(4) // 2 min without an address: paced
	clk.Advance(seedIdlePace)
	lookup(5)
	lookup(5)
}
