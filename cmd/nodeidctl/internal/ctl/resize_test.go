package ctl

import (
	"errors"
	"testing"

	"github.com/nodeid/nodeid/lease"
	"github.com/nodeid/nodeid/lease/storetest"
)

func TestResize(t *testing.T) {
	tests := []struct {
		name       string
		plant      func(h *harness) // the cluster; default: nodeidctl init --cluster-size 4
		args       []string
		fault      *storetest.Fault // on the manifest update, if any
		code       int
		wantSize   int  // the manifest's size afterwards
		wantFilled bool // the manifest's filled flag afterwards
		objects    int  // lease objects afterwards
		free       []int
		stdout     string
		stderr     string
	}{
		{name: "grow", args: []string{"--cluster-size", "6"}, code: ExitOK, wantSize: 6, wantFilled: true, objects: 6,
			free:   []int{0, 1, 2, 3, 4, 5},
			stdout: "cluster size 4 -> 6: node IDs 0..5\ncreated 2 lease object(s), free: IDs 4-5\nthe cluster manifest is filled again: lease objects 0-5 all exist"},
		{name: "grow a cluster that is not filled", plant: func(h *harness) { h.putManifest(4); h.put(held(1, "task-a", 1)) },
			args: []string{"--cluster-size", "6"}, code: ExitOK, wantSize: 6, wantFilled: true, objects: 6,
			free: []int{0, 2, 3, 4, 5}, stdout: "created 5 lease object(s), free: IDs 0, 2-5"},
		{name: "grow refused while an object is deleted",
			plant: func(h *harness) {
				h.mustRun(ExitOK, "init", "--cluster-size", "4")
				h.mem.Delete(lease.RecordKey(2))
			},
			args: []string{"--cluster-size", "6"}, code: ExitFailed, wantSize: 4, wantFilled: true, objects: 3,
			free:   []int{0, 1, 3},
			stderr: "lease objects 2 were deleted from the filled cluster: restore them with nodeidctl repair"},
		{name: "shrink", args: []string{"--cluster-size", "2"}, code: ExitOK, wantSize: 2, wantFilled: true, objects: 4,
			free:   []int{0, 1, 2, 3},
			stdout: "cluster size 4 -> 2", stderr: "holders of IDs 2..3 keep them until they stop; new tasks will not take them"},
		{name: "shrink keeps not filled", plant: func(h *harness) { h.putManifest(4); h.put(held(3, "task-a", 1)) },
			args: []string{"--cluster-size", "2"}, code: ExitOK, wantSize: 2, wantFilled: false, objects: 1, stdout: "cluster size 4 -> 2"},
		{name: "same", args: []string{"--cluster-size", "4"}, code: ExitOK, wantSize: 4, wantFilled: true, objects: 4,
			free: []int{0, 1, 2, 3}, stdout: "already 4"},
		{name: "above node bits", args: []string{"--cluster-size", "1025"}, code: ExitFailed, wantSize: 4, wantFilled: true, objects: 4,
			stderr: "--cluster-size 1025 is above 2^nodeBits = 1024"},
		{name: "changed meanwhile", args: []string{"--cluster-size", "6"}, fault: &storetest.Fault{Err: lease.ErrPreconditionFailed},
			code: ExitFailed, wantSize: 4, wantFilled: true, objects: 4,
			stderr: "the cluster size was not changed: nodeidctl: the object changed meanwhile"},
		{name: "lost answer, landed", args: []string{"--cluster-size", "5"}, fault: &storetest.Fault{Landed: true},
			code: ExitOK, wantSize: 5, wantFilled: true, objects: 5, free: []int{0, 1, 2, 3, 4}, stdout: "created 1 lease object(s), free: IDs 4"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t)
			if tc.plant != nil {
				tc.plant(h)
			} else {
				h.mustRun(ExitOK, "init", "--cluster-size", "4")
			}
			before := h.manifest()
			if tc.fault != nil {
				h.fault.Queue(storetest.OpUpdate, *tc.fault)
			}
			code, stdout, stderr := h.run(append([]string{"resize"}, tc.args...)...)
			if code != tc.code {
				t.Fatalf("exit %d, want %d\nstdout: %s\nstderr: %s", code, tc.code, stdout, stderr)
			}
			contains(t, "stdout", stdout, tc.stdout)
			contains(t, "stderr", stderr, tc.stderr)
			m := h.manifest()
			if m.ClusterSize != tc.wantSize || m.Filled != tc.wantFilled {
				t.Fatalf("cluster size %d filled %v, want %d, %v", m.ClusterSize, m.Filled, tc.wantSize, tc.wantFilled)
			}
			if tc.wantSize != before.ClusterSize && (m.WriteID == before.WriteID || !m.SameLayout(&before) || !m.CreatedAt.Equal(before.CreatedAt)) {
				t.Errorf("manifest %+v: want a new writeId, the layout and createdAt of %+v", m, before)
			}
			l, _ := h.mem.List(t.Context())
			if len(l.Objects)-1 != tc.objects {
				t.Errorf("%d lease objects, want %d", len(l.Objects)-1, tc.objects)
			}
			for _, id := range tc.free {
				if r := h.record(id); !r.Free() || r.Version != 0 {
					t.Errorf("record %d = %+v, want free", id, r)
				}
			}
		})
	}
}

// TestResizeGrowThenFillFails: the grow's manifest write clears filled; when a
// create of a new object then fails, the manifest stays not filled (the new ID
// is unused, free) and init finishes the job.
func TestResizeGrowThenFillFails(t *testing.T) {
	h := newHarness(t)
	h.mustRun(ExitOK, "init", "--cluster-size", "2")
	h.fault.SetInjector(func(op storetest.Op, key string) storetest.Fault {
		if op == storetest.OpCreate && key == lease.RecordKey(3) {
			return storetest.Fault{Err: errors.New("slow down")}
		}
		return storetest.Fault{}
	})
	stdout, stderr := h.mustRun(ExitFailed, "resize", "--cluster-size", "4")
	contains(t, "stdout", stdout, "cluster size 2 -> 4", "created 1 lease object(s), free: IDs 2")
	contains(t, "stderr", stderr, "slow down", "the cluster size is 4 now, but", "nodeidctl init")
	if m := h.manifest(); m.ClusterSize != 4 || m.Filled {
		t.Fatalf("manifest = %+v, want size 4, not filled", m)
	}
	if l := h.status().Leases[3]; l.State != StateUnused {
		t.Errorf("lease 3 is %s, want unused", l.State)
	}
	h.fault.SetInjector(nil)
	stdout, _ = h.mustRun(ExitOK, "init")
	contains(t, "init", stdout, "created 1 lease object(s), free: IDs 3", "now filled")
}

func TestResizeWithoutManifest(t *testing.T) {
	h := newHarness(t)
	_, stderr := h.mustRun(ExitFailed, "resize", "--cluster-size", "8")
	contains(t, "stderr", stderr, "there is no cluster manifest cluster.json: create the cluster with nodeidctl init --cluster-size 8")
	h.mem.Put(lease.ManifestKey, []byte("{}"))
	_, stderr = h.mustRun(ExitFailed, "resize", "--cluster-size", "8")
	contains(t, "stderr", stderr, "is corrupt", "never overwrites a manifest")
}
