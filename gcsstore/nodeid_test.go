package gcsstore_test

import (
	"context"
	"testing"
	"time"

	"github.com/nodeid/nodeid/nodeid"
)

// TestNodeIDOnFakeGCS runs the lease protocol on fake-gcs-server: two tasks
// take distinct IDs, renew for a few seconds at the fastest interval Cloud
// Storage sustains (1 s), release, and a third task takes a released ID with
// a higher version.
func TestNodeIDOnFakeGCS(t *testing.T) {
	base := fakeGCSURL(t)
	name := newBucket(t, base)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cfg := func(task string) nodeid.Config {
		c := nodeid.DefaultLocalConfig()
		c.TaskID, c.ClusterSize = task, 2
		// Renewals every second, with room for slow requests under -race.
		c.LeaseDuration, c.RenewInterval, c.RenewDeadline, c.SafetyMargin = 6*time.Second, time.Second, 4*time.Second, time.Second
		return c
	}
	acquire := func(task string) *nodeid.Claim {
		t.Helper()
		p, err := nodeid.New(fakeStore(t, base, name, "nodeid/"), cfg(task))
		if err != nil {
			t.Fatal(err)
		}
		c, err := p.Acquire(ctx)
		if err != nil {
			t.Fatalf("%s: acquire: %v", task, err)
		}
		return c
	}
	a, b := acquire("a"), acquire("b")
	if a.NodeID() == b.NodeID() {
		t.Fatalf("two tasks hold node ID %d", a.NodeID())
	}
	time.Sleep(3500 * time.Millisecond) // three renewals each
	for _, c := range []*nodeid.Claim{a, b} {
		if !c.Valid() || c.Err() != nil {
			t.Fatalf("claim of node ID %d after renewals: valid %v, err %v", c.NodeID(), c.Valid(), c.Err())
		}
	}
	id, version := a.NodeID(), a.Version()
	if err := a.Close(ctx); err != nil {
		t.Fatalf("release: %v", err)
	}
	c := acquire("c")
	defer func() { _ = c.Close(ctx) }()
	defer func() { _ = b.Close(ctx) }()
	if c.NodeID() != id || c.Version() <= version {
		t.Fatalf("the third task took node ID %d version %d, want the released %d above version %d", c.NodeID(), c.Version(), id, version)
	}
}
