package ctl

import (
	"testing"

	"github.com/nodeid/nodeid/lease"
	"github.com/nodeid/nodeid/lease/storetest"
)

func TestResize(t *testing.T) {
	tests := []struct {
		name     string
		args     []string
		fault    *storetest.Fault // on the manifest update, if any
		code     int
		wantSize int // the manifest's size afterwards
		objects  int // lease objects afterwards
		stdout   string
		stderr   string
	}{
		{name: "grow", args: []string{"--cluster-size", "6"}, code: ExitOK, wantSize: 6, objects: 6,
			stdout: "cluster size 4 -> 6\ncreated 2 lease object(s), free: IDs 4-5"},
		{name: "shrink", args: []string{"--cluster-size", "2"}, code: ExitOK, wantSize: 2, objects: 4,
			stdout: "cluster size 4 -> 2", stderr: "holders of IDs 2..3 keep them until they stop; new tasks will not take them"},
		{name: "same", args: []string{"--cluster-size", "4"}, code: ExitOK, wantSize: 4, objects: 4, stdout: "already 4"},
		{name: "above node bits", args: []string{"--cluster-size", "1025"}, code: ExitFailed, wantSize: 4, objects: 4,
			stderr: "--cluster-size 1025 is above 2^nodeBits = 1024"},
		{name: "changed meanwhile", args: []string{"--cluster-size", "6"}, fault: &storetest.Fault{Err: lease.ErrPreconditionFailed},
			code: ExitFailed, wantSize: 4, objects: 4, stderr: "the cluster size was not changed: nodeidctl: the object changed meanwhile"},
		{name: "lost answer, landed", args: []string{"--cluster-size", "5"}, fault: &storetest.Fault{Landed: true},
			code: ExitOK, wantSize: 5, objects: 5, stdout: "created 1 lease object(s), free: IDs 4"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t)
			h.mustRun(ExitOK, "init", "--cluster-size", "4")
			before, _ := lease.DecodeManifest([]byte(h.raw(lease.ManifestKey)))
			if tc.fault != nil {
				h.fault.Queue(storetest.OpUpdate, *tc.fault)
			}
			code, stdout, stderr := h.run(append([]string{"resize"}, tc.args...)...)
			if code != tc.code {
				t.Fatalf("exit %d, want %d\nstdout: %s\nstderr: %s", code, tc.code, stdout, stderr)
			}
			contains(t, "stdout", stdout, tc.stdout)
			contains(t, "stderr", stderr, tc.stderr)
			m, err := lease.DecodeManifest([]byte(h.raw(lease.ManifestKey)))
			if err != nil {
				t.Fatal(err)
			}
			if m.ClusterSize != tc.wantSize {
				t.Fatalf("cluster size %d, want %d", m.ClusterSize, tc.wantSize)
			}
			if tc.wantSize != 4 && (m.WriteID == before.WriteID || !m.SameLayout(&before) || !m.CreatedAt.Equal(before.CreatedAt)) {
				t.Errorf("manifest %+v: want a new writeId, the layout and createdAt of %+v", m, before)
			}
			l, _ := h.mem.List(t.Context())
			if len(l.Objects)-1 != tc.objects {
				t.Errorf("%d lease objects, want %d", len(l.Objects)-1, tc.objects)
			}
			for id := range tc.objects {
				if r := h.record(id); !r.Free() || r.Version != 0 {
					t.Errorf("record %d = %+v, want free", id, r)
				}
			}
		})
	}
}

func TestResizeWithoutManifest(t *testing.T) {
	h := newHarness(t)
	_, stderr := h.mustRun(ExitFailed, "resize", "--cluster-size", "8")
	contains(t, "stderr", stderr, "there is no cluster manifest cluster.json: create the cluster with nodeidctl init --cluster-size 8")
	h.mem.Put(lease.ManifestKey, []byte("{}"))
	_, stderr = h.mustRun(ExitFailed, "resize", "--cluster-size", "8")
	contains(t, "stderr", stderr, "is corrupt", "never overwrites a manifest")
}
