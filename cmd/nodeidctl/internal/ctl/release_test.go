package ctl

import (
	"testing"
	"time"

	"github.com/nodeid/nodeid/lease"
	"github.com/nodeid/nodeid/lease/storetest"
)

func TestRelease(t *testing.T) {
	tests := []struct {
		name     string
		plant    func(h *harness) // plants node 3 (and advances the store clock)
		args     []string
		unfilled bool             // the manifest is not filled (default: filled)
		fault    *storetest.Fault // on the update, if any
		code     int
		wrote    bool   // whether node 3 must have changed
		freed    bool   // whether node 3 must now be free
		stdout   string // substrings
		stderr   string
	}{
		{name: "free is a no-op", plant: func(h *harness) { h.put(lease.Record{NodeID: 3, Version: 2, ReservedUntilMs: 77}) },
			code: ExitOK, stdout: "node 3 is already free (version 2, reservedUntilMs 77): nothing to do"},
		{name: "live refused", plant: func(h *harness) { h.put(held(3, "task-a", 5)); h.clk.Advance(16 * time.Second) },
			code: ExitFailed, stderr: `node 3 is held by "task-a" (version 5) and live on the store's clock: last written 16s ago with a 15s lease (+1s resolution +1s margin), expires in about 1s; pass --force`},
		{name: "live at the bound", plant: func(h *harness) { h.put(held(3, "task-a", 5)); h.clk.Advance(17 * time.Second) },
			code: ExitFailed, stderr: "last written 17s ago with a 15s lease (+1s resolution +1s margin), expires within a second"},
		{name: "live with force", plant: func(h *harness) { h.put(held(3, "task-a", 5)) }, args: []string{"--force"},
			code: ExitOK, wrote: true, freed: true, stdout: `released node 3 (was held, held by "task-a"): version 5 and reservedUntilMs 1900000000000 kept`,
			stderr: "its reservation 1900000000000 stays the next holder's floor"},
		{name: "expired without force", plant: func(h *harness) { h.put(held(3, "task-a", 5)); h.clk.Advance(18 * time.Second) },
			code: ExitOK, wrote: true, freed: true, stdout: "released node 3 (was expired"},
		{name: "margin keeps it live", plant: func(h *harness) { h.put(held(3, "task-a", 5)); h.clk.Advance(18 * time.Second) },
			args: []string{"--clock-margin", "5s"}, code: ExitFailed, stderr: "live on the store's clock"},
		{name: "corrupt refused", plant: func(h *harness) { h.mem.Put(lease.RecordKey(3), []byte(`{"nodeId":3}`)) },
			code: ExitFailed, stderr: "lease object 3.json is corrupt (lease: corrupt object: schema missing): release only frees a record that decodes; rewrite it with nodeidctl repair --id 3"},
		{name: "lease above maximum refused", plant: func(h *harness) { r := held(3, "t", 1); r.LeaseMillis = 61000; h.put(r) },
			args: []string{"--force"}, code: ExitFailed, stderr: "above the maximum lease"},
		{name: "missing refused", plant: func(h *harness) {}, code: ExitFailed,
			stderr: "there is no lease object 3.json: nothing to release (it was deleted: restore it with nodeidctl repair --id 3 --floor MS)"},
		{name: "unused refused", plant: func(h *harness) {}, unfilled: true, code: ExitFailed,
			stderr: "there is no lease object 3.json: it was never created (unused: the cluster manifest is not filled), so node 3 is free already"},
		{name: "changed meanwhile", plant: func(h *harness) { h.put(held(3, "task-a", 5)) }, args: []string{"--force"},
			fault: &storetest.Fault{Err: lease.ErrPreconditionFailed}, code: ExitFailed,
			stderr: "node 3 was not released: nodeidctl: the object changed meanwhile"},
		{name: "unknown outcome that landed", plant: func(h *harness) { h.put(held(3, "task-a", 5)) }, args: []string{"--force"},
			fault: &storetest.Fault{Landed: true}, code: ExitOK, wrote: true, freed: true, stdout: "released node 3"},
		{name: "unknown outcome that did not land", plant: func(h *harness) { h.put(held(3, "task-a", 5)) }, args: []string{"--force"},
			fault: &storetest.Fault{Err: storetest.Unknown(storetest.OpUpdate, "3.json")}, code: ExitFailed,
			stderr: "the write was not applied: the answer was lost"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t)
			h.plantManifest(4, !tc.unfilled)
			tc.plant(h)
			before := h.raw(lease.RecordKey(3))
			if tc.fault != nil {
				h.fault.Queue(storetest.OpUpdate, *tc.fault)
			}
			code, stdout, stderr := h.run(append([]string{"release", "--id", "3"}, tc.args...)...)
			if code != tc.code {
				t.Fatalf("exit %d, want %d\nstdout: %s\nstderr: %s", code, tc.code, stdout, stderr)
			}
			contains(t, "stdout", stdout, tc.stdout)
			contains(t, "stderr", stderr, tc.stderr)
			after := h.raw(lease.RecordKey(3))
			if (after != before) != tc.wrote {
				t.Fatalf("node 3 changed = %v, want %v:\n%s\n%s", after != before, tc.wrote, before, after)
			}
			if h.mem.Count(storetest.OpUpdate) > 1 {
				t.Errorf("%d updates: a write was retried", h.mem.Count(storetest.OpUpdate))
			}
			if !tc.freed {
				return
			}
			prev, err := lease.DecodeRecord([]byte(before), 3)
			if err != nil {
				t.Fatal(err)
			}
			r := h.record(3)
			want := prev
			want.Holder, want.RenewedAt, want.ExpiresAt, want.WriteID = "", time.Time{}, time.Time{}, r.WriteID
			if r.WriteID == prev.WriteID || r.Holder != "" || r.Version != prev.Version ||
				r.ReservedUntilMs != prev.ReservedUntilMs || r.LeaseMillis != prev.LeaseMillis || !r.RenewedAt.IsZero() {
				t.Fatalf("released record = %+v, want %+v", r, want)
			}
		})
	}
}

func TestReleaseAboveClusterSize(t *testing.T) {
	h := newHarness(t)
	h.putManifest(2)
	h.put(held(3, "task-a", 1))
	h.clk.Advance(time.Minute)
	_, stderr := h.mustRun(ExitOK, "release", "--id", "3")
	contains(t, "stderr", stderr, "ID 3 is outside the cluster's node IDs 0..1")
}

// TestReleaseOutsideTheCluster: an ID at or above the manifest's cluster size
// with no lease object is refused as outside the cluster's range, not as a
// deleted object; without a manifest, release says that there is no cluster
// there. Nothing is written.
func TestReleaseOutsideTheCluster(t *testing.T) {
	for _, tc := range []struct {
		name   string
		plant  func(h *harness)
		args   []string
		stderr string // exact
	}{
		{name: "far above", plant: func(h *harness) { h.putFilledManifest(1024) }, args: []string{"--id", "5000"},
			stderr: "nodeidctl release: --id 5000 is outside the cluster's range 0..1023 (cluster size 1024 in the manifest cluster.json): there is no lease object 5000.json to release\n"},
		{name: "at the size", plant: func(h *harness) { h.putFilledManifest(1024) }, args: []string{"--id", "1024"},
			stderr: "nodeidctl release: --id 1024 is outside the cluster's range 0..1023 (cluster size 1024 in the manifest cluster.json): there is no lease object 1024.json to release\n"},
		{name: "not filled", plant: func(h *harness) { h.putManifest(4) }, args: []string{"--id", "4"},
			stderr: "nodeidctl release: --id 4 is outside the cluster's range 0..3 (cluster size 4 in the manifest cluster.json): there is no lease object 4.json to release\n"},
		{name: "size 1", plant: func(h *harness) { h.putFilledManifest(1) }, args: []string{"--id", "1"},
			stderr: "nodeidctl release: --id 1 is outside the cluster's range 0..0 (cluster size 1 in the manifest cluster.json): there is no lease object 1.json to release\n"},
		{name: "no cluster", plant: func(h *harness) {}, args: []string{"--id", "5", "--prefix", "ndoeid/"},
			stderr: `nodeidctl release: there is no lease object 5.json and no cluster manifest in bucket test-bucket under prefix "ndoeid/": nothing to release; check --prefix and NODEID_BUCKET (--bucket), or create the cluster with nodeidctl init` + "\n"},
		{name: "no manifest", plant: func(h *harness) { h.put(lease.Record{NodeID: 0}) }, args: []string{"--id", "5"},
			stderr: `nodeidctl release: there is no lease object 5.json and no cluster manifest at the root of bucket test-bucket (prefix ""): nothing to release; check NODEID_PREFIX (--prefix) and NODEID_BUCKET (--bucket), or create the cluster with nodeidctl init` + "\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t)
			tc.plant(h)
			before := h.writes()
			code, stdout, stderr := h.run(append([]string{"release"}, tc.args...)...)
			if code != ExitFailed || stderr != tc.stderr || stdout != "" {
				t.Errorf("exit %d, want %d\nstderr: %q\nwant:   %q\nstdout: %s", code, ExitFailed, stderr, tc.stderr, stdout)
			}
			if h.writes() != before {
				t.Errorf("release wrote %d times", h.writes()-before)
			}
		})
	}
}
