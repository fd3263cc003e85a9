package nodeid

import (
	"context"
	"testing"
)

// TestOneBadGossipEntryEndsNoLease: gossip is advisory. A peer advertising a
// node ID no record can carry (above lease.MaxNodeID: a bug, an incompatible
// release) puts an entry into every task's KnownNodes; it is dropped before
// every write instead of making the record invalid, so renewals go on and
// takes succeed. Before the fix every renewal failed encoding the record
// until the holder lost its lease, and every Acquire failed.
func TestOneBadGossipEntryEndsNoLease(t *testing.T) {
	e := newEnv(t)
	cfg := e.config("a")
	peers := &fakeHints{live: map[int]int64{0: 1}}
	cfg.Peers = staticPeersFunc(peers.KnownNodes) // the view alone, no hints
	c := e.acquire(e.provider(cfg))
	peers.mu.Lock()
	peers.live[1<<22] = 1 // node 4194304: above any layout's node bits
	peers.live[2] = -1    // a negative version
	peers.mu.Unlock()
	e.advance(cfg.LeaseDuration, c)
	if isDone(c) {
		t.Fatalf("the holder lost its lease to one bad gossip entry: %v", c.Err())
	}
	rec, _ := e.record(c.NodeID())
	if _, ok := rec.KnownNodes[1<<22]; ok || len(rec.KnownNodes) != 1 {
		t.Errorf("renewed record's knownNodes = %v, want only the valid entry", rec.KnownNodes)
	}
	b := cfg
	b.TaskID = "b"
	bc, err := e.provider(b).Acquire(context.Background())
	if err != nil {
		t.Fatalf("Acquire beside one bad gossip entry: %v", err)
	}
	_ = bc.Close(context.Background())
}
