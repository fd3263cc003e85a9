package main

import (
	"context"
	"net/http"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/nodeid/nodeid/lease"
	"github.com/nodeid/nodeid/node"
	"github.com/nodeid/nodeid/s3store"
)

// TestServeSkipsAFarFloor seeds a free lease object for node 0 whose
// reservation is an hour ahead (its last holder's clock was ahead, then it
// crashed) and starts a broker in lowest-first order: it skips node 0 as an
// anomaly (log and metric), without writing it, takes node 1 and serves IDs, instead of failing
// with "wall clock behind the lease's floor" (and, restarted, failing again on
// the same ID and bumping its version each time).
func TestServeSkipsAFarFloor(t *testing.T) {
	t.Parallel()
	srv := startFakeS3(t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	st, err := s3store.New(ctx, srv.StoreConfig("nodeid/"))
	if err != nil {
		t.Fatal(err)
	}
	far := time.Now().Add(time.Hour).UnixMilli()
	seed := lease.Record{NodeID: 0, Version: 7, LeaseMillis: 2000, ReservedUntilMs: far, WriteID: lease.NewWriteID()}
	body, err := seed.Encode()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := st.Create(ctx, lease.RecordKey(0), body); err != nil {
		t.Fatal(err)
	}

	args := slices.Concat([]string{"--bucket", srv.Bucket(), "--s3-endpoint", srv.URL(), "--s3-path-style",
		"--cluster-size", "4", "--order", "lowest-first"}, shortLease)
	b := startBroker(t, "b", brokerEnv(t), args...)
	s := b.waitHeld(15 * time.Second)
	if s.NodeID != 1 {
		t.Fatalf("holds node %d, want 1: node 0's floor is an hour ahead, node 1 is the next free ID", s.NodeID)
	}
	var ids idLedger
	fetchIDs(t, b, 1, &ids)
	var r node.IDsResponse
	if code, err := b.getJSON("/ids?n=3", &r); err != nil || code != http.StatusOK || len(r.IDs) != 3 || r.NodeID != 1 {
		t.Fatalf("/ids?n=3: HTTP %d, %+v, %v", code, r, err)
	}
	ids.add(t, "b", 1, r)
	if b.findLog("skipping a lease whose floor is far ahead of this task's wall clock (its last holder's clock was ahead, or this task's is behind)") == nil {
		t.Errorf("no log line reports node 0's far floor")
	}
	if code, m, err := b.get("/metrics"); err != nil || code != http.StatusOK || !strings.Contains(string(m), "nodeid_lease_anomalies_total 1\n") {
		t.Errorf("/metrics: HTTP %d %v; want nodeid_lease_anomalies_total 1 (node 0, skipped once)", code, err)
	}
	if rec := readLease(t, srv.URL(), srv.Bucket(), 0); rec.Version != 7 || rec.ReservedUntilMs != far || rec.Holder != "" || rec.WriteID != seed.WriteID {
		t.Errorf("node 0 was written: %+v; want the seeded free record, version 7", rec)
	}
	b.signal(syscall.SIGTERM)
	if code := b.waitExit(15 * time.Second); code != 0 {
		t.Fatalf("exit %d after SIGTERM, want 0", code)
	}
}
