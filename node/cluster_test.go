package node

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/nodeid/nodeid/gossip"
	"github.com/nodeid/nodeid/lease"
	"github.com/nodeid/nodeid/lease/storetest"
)

// scopedNode starts a node of one ID on store, gossiping as cluster (noLabel:
// in metadata only) and joining join, and closes it when the test ends.
func scopedNode(t *testing.T, task string, store lease.Store, cluster string, noLabel bool, key []byte, join ...string) *Node {
	t.Helper()
	gc := gossip.DefaultLocalConfig()
	gc.Cluster, gc.NoLabel, gc.SecretKey, gc.Join = cluster, noLabel, key, join
	return gossipNode(t, task, 1, store, gc)
}

// gossipNode starts a node of a cluster of size on store, gossiping with gc,
// and closes it when the test ends.
func gossipNode(t *testing.T, task string, size int, store lease.Store, gc gossip.Config) *Node {
	t.Helper()
	c := testConfig(task, size)
	c.Gossip = &gc
	n, err := New(store, c)
	if err != nil {
		t.Fatal(err)
	}
	if err := n.Start(context.Background()); err != nil {
		t.Fatalf("%s: Start: %v", task, err)
	}
	t.Cleanup(func() { _ = n.Close(closeCtx(t)) })
	return n
}

// bumped returns a store whose node 0 is free at version v.
func bumped(t *testing.T, v int64) lease.Store {
	store := storetest.NewMemStore()
	for i := int64(0); i < v; i++ {
		n, err := New(store, testConfig(fmt.Sprintf("bump%d", i), 1))
		if err != nil {
			t.Fatal(err)
		}
		if err := n.Start(context.Background()); err != nil {
			t.Fatal(err)
		}
		if err := n.Close(closeCtx(t)); err != nil {
			t.Fatal(err)
		}
	}
	return store
}

// TestForeignClusterNeverObeyed: two clusters with their own stores share one
// gossip pool by mistake, in either order and with the higher version on
// either side. Neither fences, skips or recreates anything: both hold node 0
// of their own store and serve. Labelled clusters never hear each other;
// unlabelled ones (metadata only) see each other as foreign, in /status and
// the metric.
func TestForeignClusterNeverObeyed(t *testing.T) {
	key := []byte("0123456789abcdef")
	for _, labelled := range []bool{false, true} {
		for _, k := range [][]byte{nil, key} {
			for _, first := range []string{"a", "b"} {
				for _, vb := range []int64{0, 2} { // b's store bumped: b's version higher
					name := fmt.Sprintf("labelled=%v/key=%v/%s_first/b_bumped=%v", labelled, k != nil, first, vb > 0)
					t.Run(name, func(t *testing.T) {
						var sa, sb lease.Store = storetest.NewMemStore(), bumped(t, vb)
						if vb == 0 {
							sb = bumped(t, 0)
							sa = bumped(t, 2) // a's version higher
						}
						wantA, wantB := int64(3), int64(1)
						if vb > 0 {
							wantA, wantB = 1, 3
						}
						ca, cb := "s3://bucket-a/ids", "s3://bucket-b/ids"
						var na, nb *Node
						if first == "a" {
							na = scopedNode(t, "a", sa, ca, !labelled, k)
							nb = scopedNode(t, "b", sb, cb, !labelled, k, na.gossip.Load().Addr())
						} else {
							nb = scopedNode(t, "b", sb, cb, !labelled, k)
							na = scopedNode(t, "a", sa, ca, !labelled, k, nb.gossip.Load().Addr())
						}
						if !labelled {
							deadline := time.Now().Add(10 * time.Second)
							for len(na.Status().ForeignMembers) == 0 || len(nb.Status().ForeignMembers) == 0 {
								if time.Now().After(deadline) {
									t.Fatal("the clusters never saw each other as foreign")
								}
								time.Sleep(10 * time.Millisecond)
							}
						}
						for _, x := range []struct {
							n     *Node
							store lease.Store
							want  int64
							other string
						}{{na, sa, wantA, cb}, {nb, sb, wantB, ca}} {
							st := x.n.Status()
							if st.State != StateHeld || !st.Ready || st.NodeID != 0 || st.Version != x.want {
								t.Errorf("%s status %+v, want held node 0 version %d", st.Task, st, x.want)
							}
							if len(st.KnownNodes) != 1 || st.KnownNodes["0"] != x.want {
								t.Errorf("%s KnownNodes %v", st.Task, st.KnownNodes)
							}
							if rec := readRecord(t, x.store, 0); rec.Holder != st.Task || rec.Version != x.want {
								t.Errorf("%s record %+v", st.Task, rec)
							}
							wantForeign := 0
							if !labelled {
								wantForeign = 1
								if f := st.ForeignMembers; len(f) != 1 || f[0].Cluster != x.other {
									t.Errorf("%s foreignMembers %+v, want one of %s", st.Task, f, x.other)
								}
							} else if len(st.ForeignMembers) != 0 {
								t.Errorf("%s foreignMembers %+v with labels", st.Task, st.ForeignMembers)
							}
							if _, body := get(x.n.Handler(), "/metrics"); !strings.Contains(body, fmt.Sprintf("nodeid_gossip_foreign_members %d", wantForeign)) {
								t.Errorf("%s metric: want nodeid_gossip_foreign_members %d", st.Task, wantForeign)
							}
							if code, _ := get(x.n.Handler(), "/ids"); code != http.StatusOK {
								t.Errorf("%s /ids: %d", st.Task, code)
							}
							if err := x.n.Err(); err != nil {
								t.Errorf("%s Err: %v", st.Task, err)
							}
						}
					})
				}
			}
		}
	}
}
