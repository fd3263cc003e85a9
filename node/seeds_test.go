package node

import (
	"testing"
	"time"

	"github.com/nodeid/nodeid/gossip"
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
