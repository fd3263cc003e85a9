package node

import (
	"context"
	"testing"
	"time"

	"github.com/nodeid/nodeid/internal/testkit/fakeclock"
	"github.com/nodeid/nodeid/lease/storetest"
	"github.com/nodeid/nodeid/snowflake"
)

// TestClustersWithDisjointRanges: two clusters, each on a store of its own (a
// bucket per region), own the node IDs 0..1 and 2..3. Their four nodes run
// side by side on one stopped clock, so that every ID is issued in the same
// millisecond; no ID repeats, and every ID's node bits carry its node's
// absolute node ID, in its cluster's range. The control runs the same
// clusters both on 0..1, as two regions that forgot the ranges: their IDs
// collide, which is what the ranges are for.
func TestClustersWithDisjointRanges(t *testing.T) {
	run := func(t *testing.T, firsts [2]int) (repeats int) {
		clk := fakeclock.New(time.Now().Round(time.Second))
		var nodes []*Node
		for region, first := range firsts {
			store := storetest.NewMemStore()
			for _, task := range []string{"a", "b"} {
				cfg := testConfig(task, 2)
				cfg.Provider.FirstNodeID, cfg.Provider.Clock, cfg.HostClock = first, clk, clk.Wall
				n, err := New(store, cfg)
				if err != nil {
					t.Fatal(err)
				}
				if err := n.Start(context.Background()); err != nil {
					t.Fatalf("region %d, task %s: %v", region, task, err)
				}
				t.Cleanup(func() { _ = n.Close(closeCtx(t)) })
				if id := n.Status().NodeID; id < first || id > first+1 {
					t.Fatalf("region %d holds node ID %d, outside %d..%d", region, id, first, first+1)
				}
				nodes = append(nodes, n)
			}
		}
		seen := map[snowflake.ID]bool{}
		for round := 0; round < 20; round++ { // 1,000 IDs per node: within a millisecond's 4,096
			for _, n := range nodes {
				r, err := n.NextN(50)
				if err != nil {
					t.Fatal(err)
				}
				if got, want := r.First.NodeID(), int64(n.Status().NodeID); got != want {
					t.Fatalf("an ID of node %d carries node ID %d", want, got)
				}
				for id := range r.All() {
					if seen[id] {
						repeats++
					}
					seen[id] = true
				}
			}
		}
		return repeats
	}
	if n := run(t, [2]int{0, 2}); n != 0 {
		t.Fatalf("clusters on 0..1 and 2..3: %d IDs repeated", n)
	}
	t.Run("control: both on 0..1", func(t *testing.T) {
		if n := run(t, [2]int{0, 0}); n == 0 {
			t.Fatal("clusters sharing their node IDs issued no repeated ID: the test cannot tell ranges from none")
		}
	})
}
