package ctl

import (
	"reflect"
	"testing"
	"time"

	"github.com/nodeid/nodeid/lease"
	"github.com/nodeid/nodeid/lease/storetest"
	"github.com/nodeid/nodeid/nodeid"
)

func TestInitCreatesWhatTheProviderCreates(t *testing.T) {
	h := newHarness(t)
	stdout, _ := h.mustRun(ExitOK, "init", "--cluster-size", "8")
	contains(t, "init", stdout, "created cluster manifest cluster.json: cluster size 8, layout 41/10/12 epoch 1735689600000",
		"created 8 lease object(s), free: IDs 0-7")
	m, err := lease.DecodeManifest([]byte(h.raw(lease.ManifestKey)))
	if err != nil {
		t.Fatal(err)
	}
	l := nodeid.DefaultLayout
	want := lease.Manifest{ClusterSize: 8, TimestampBits: l.TimestampBits, NodeBits: l.NodeBits, SequenceBits: l.SequenceBits,
		EpochMs: l.EpochMs, CreatedAt: h.wall, WriteID: m.WriteID}
	if !reflect.DeepEqual(m, want) {
		t.Errorf("manifest = %+v, want %+v", m, want)
	}
	for id := range 8 {
		r := h.record(id)
		if want := (lease.Record{NodeID: id, WriteID: r.WriteID}); !reflect.DeepEqual(r, want) {
			t.Errorf("record %d = %+v, want %+v", id, r, want)
		}
	}

	// Idempotent: a second run reads and lists, and writes nothing.
	before := h.writes()
	stdout, _ = h.mustRun(ExitOK, "init", "--cluster-size", "8")
	contains(t, "second init", stdout, "cluster manifest exists", "all lease objects 0-7 exist: nothing to create")
	if h.writes() != before {
		t.Errorf("a second init wrote %d times", h.writes()-before)
	}
}

func TestInitLayoutFlags(t *testing.T) {
	h := newHarness(t)
	h.env["NODEID_CLUSTER_SIZE"] = "4"
	h.mustRun(ExitOK, "init", "--node-bits", "8", "--timestamp-bits", "43", "--epoch-ms", "1000")
	m, _ := lease.DecodeManifest([]byte(h.raw(lease.ManifestKey)))
	if m.ClusterSize != 4 || m.NodeBits != 8 || m.TimestampBits != 43 || m.SequenceBits != 12 || m.EpochMs != 1000 {
		t.Fatalf("manifest = %+v", m)
	}
	if h.raw(lease.RecordKey(3)) == "" || h.raw(lease.RecordKey(4)) != "" {
		t.Fatalf("want lease objects 0..3 exactly")
	}
}

func TestInitExistingManifest(t *testing.T) {
	tests := []struct {
		name   string
		args   []string
		code   int
		stdout string
		stderr string
	}{
		{"defaults match", nil, ExitOK, "cluster manifest exists: cluster size 4", ""},
		{"other size is a note", []string{"--cluster-size", "16"}, ExitOK, "all lease objects 0-3 exist",
			"--cluster-size 16 differs from the manifest's 4, which wins; change it with nodeidctl resize"},
		{"other epoch refused", []string{"--epoch-ms", "5"}, ExitFailed, "",
			"the cluster manifest has layout 41/10/12 epoch 1735689600000, not what was asked (--epoch-ms 5, manifest 1735689600000)"},
		{"other bits refused", []string{"--node-bits", "12", "--timestamp-bits", "39"}, ExitFailed, "",
			"--timestamp-bits 39, manifest 41; --node-bits 12, manifest 10"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t)
			h.mustRun(ExitOK, "init", "--cluster-size", "4")
			before := h.writes()
			code, stdout, stderr := h.run(append([]string{"init"}, tc.args...)...)
			if code != tc.code {
				t.Fatalf("exit %d, want %d\n%s%s", code, tc.code, stdout, stderr)
			}
			contains(t, "stdout", stdout, tc.stdout)
			contains(t, "stderr", stderr, tc.stderr)
			if h.writes() != before {
				t.Errorf("wrote %d times", h.writes()-before)
			}
		})
	}
}

func TestInitCorruptManifest(t *testing.T) {
	h := newHarness(t)
	h.mem.Put(lease.ManifestKey, []byte(`{"schema":1}`))
	_, stderr := h.mustRun(ExitFailed, "init")
	contains(t, "stderr", stderr, "is corrupt", "never overwrites a manifest")
	if h.raw(lease.ManifestKey) != `{"schema":1}` {
		t.Fatal("the manifest was overwritten")
	}
}

// TestInitMissingObjects: like the provider, an object missing while the
// manifest is new is created free; missing from an older cluster it was
// deleted, and is recreated held by nodeid.RecreatedHolder for the maximum lease
// with the highest version gossip recorded for it.
func TestInitMissingObjects(t *testing.T) {
	h := newHarness(t)
	h.mustRun(ExitOK, "init", "--cluster-size", "4")
	h.mem.Delete(lease.RecordKey(1))
	h.clk.Advance(5 * time.Second) // within the provider's BootstrapWindow (10s)
	stdout, _ := h.mustRun(ExitOK, "init")
	contains(t, "init", stdout, "created 1 lease object(s), free: IDs 1")
	if r := h.record(1); !r.Free() || r.Version != 0 {
		t.Fatalf("record 1 = %+v, want free", r)
	}

	h.clk.Advance(time.Minute)
	h.mem.Delete(lease.RecordKey(2))
	h.mem.Delete(lease.RecordKey(3))
	gossip := held(0, "task-a", 1)
	gossip.KnownNodes = map[int]int64{0: 1, 2: 7}
	h.put(gossip)
	stdout, stderr := h.mustRun(ExitOK, "init", "--max-lease-duration", "45s")
	contains(t, "init", stdout, `recreated 2 deleted lease object(s) held by "nodeid:recreated": IDs 2-3`)
	contains(t, "stderr", stderr, "deleted by someone", "45s")
	for id, version := range map[int]int64{2: 7, 3: 0} {
		r := h.record(id)
		if r.Holder != nodeid.RecreatedHolder || r.Version != version || r.LeaseMillis != 45000 ||
			r.ReservedUntilMs != h.wall.UnixMilli()+45000 {
			t.Errorf("record %d = %+v, want recreated with version %d", id, r, version)
		}
	}
	// Recreated objects are held on the store's clock, then expire like any lease.
	if l := h.status().Leases[2]; l.State != StateHeld {
		t.Errorf("recreated lease 2 is %s, want held", l.State)
	}
}

func TestInitRacesAndUnknownOutcomes(t *testing.T) {
	h := newHarness(t)
	// The manifest's create lands but its answer is lost; the first lease
	// create too; the second one is refused as if someone else had created it.
	h.fault.Queue(storetest.OpCreate, storetest.Fault{Landed: true}, storetest.Fault{Landed: true},
		storetest.Fault{Err: lease.ErrPreconditionFailed})
	stdout, stderr := h.mustRun(ExitOK, "init", "--cluster-size", "3")
	contains(t, "init", stdout, "created cluster manifest", "created 2 lease object(s)", "1 lease object(s) were created by someone else meanwhile")
	if stderr != "" {
		t.Errorf("stderr: %s", stderr)
	}
	// A lost create that did not land is reported, not retried.
	h2 := newHarness(t)
	h2.fault.Queue(storetest.OpCreate, storetest.Fault{Err: storetest.Unknown(storetest.OpCreate, lease.ManifestKey)})
	_, stderr = h2.mustRun(ExitFailed, "init")
	contains(t, "stderr", stderr, "the write was not applied", "still absent")
	if h2.mem.Count(storetest.OpCreate) != 0 {
		t.Errorf("the lost create was retried")
	}
}
