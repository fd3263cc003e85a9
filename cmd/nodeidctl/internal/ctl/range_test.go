package ctl

import (
	"testing"

	"github.com/nodeid/nodeid/lease"
)

// TestRangeOfItsOwn: init --first-node-id creates a cluster that owns its
// range; status shows it; release, resize and a second init keep to it.
func TestRangeOfItsOwn(t *testing.T) {
	h := newHarness(t)
	stdout, _ := h.mustRun(ExitOK, "init", "--cluster-size", "4", "--first-node-id", "1020")
	contains(t, "init", stdout, "created cluster manifest cluster.json: cluster size 4, node IDs 1020..1023,",
		"created 4 lease object(s), free: IDs 1020-1023")
	if m := h.manifest(); m.FirstNodeID != 1020 || m.ClusterSize != 4 {
		t.Fatalf("manifest = %+v", m)
	}
	if h.raw(lease.RecordKey(0)) != "" {
		t.Fatal("init created a lease object outside the range")
	}
	st := h.status()
	if st.Manifest.FirstNodeID == nil || *st.Manifest.FirstNodeID != 1020 || len(st.Leases) != 4 || st.Leases[0].NodeID != 1020 {
		t.Fatalf("status: manifest %+v, %d leases", st.Manifest, len(st.Leases))
	}
	stdout, _ = h.mustRun(ExitOK, "status")
	contains(t, "status", stdout, "cluster size  4 (node IDs 1020..1023)")

	_, stderr := h.mustRun(ExitFailed, "release", "--id", "3")
	contains(t, "release outside", stderr, "--id 3 is outside the cluster's range 1020..1023")
	_, stderr = h.mustRun(ExitFailed, "resize", "--cluster-size", "5")
	contains(t, "resize past the node bits", stderr,
		"--cluster-size 5 would leave the node IDs 0..1023", "the cluster's range starts at 1020, so it holds at most 4")
	_, stderr = h.mustRun(ExitFailed, "init", "--first-node-id", "0")
	contains(t, "init with another range", stderr, "the cluster owns node IDs 1020..1023, not from --first-node-id 0")
	_, stderr = h.mustRun(ExitUsage, "init", "--prefix", "other/", "--cluster-size", "8", "--first-node-id", "1020")
	contains(t, "init past the node bits", stderr, "--first-node-id 1020 with --cluster-size 8 leaves the node IDs 0..1023")

	stdout, _ = h.mustRun(ExitOK, "resize", "--cluster-size", "2")
	contains(t, "shrink", stdout, "cluster size 4 -> 2: node IDs 1020..1021")
}
