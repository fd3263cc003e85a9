package ctl

import (
	"errors"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/nodeid/nodeid/lease"
	"github.com/nodeid/nodeid/lease/storetest"
	"github.com/nodeid/nodeid/nodeid"
	"github.com/nodeid/nodeid/snowflake"
)

func TestInitCreatesWhatTheProviderCreates(t *testing.T) {
	h := newHarness(t)
	stdout, _ := h.mustRun(ExitOK, "init", "--cluster-size", "8")
	contains(t, "init", stdout, "created cluster manifest cluster.json: cluster size 8, node IDs 0..7, layout 41/10/12 epoch 1735689600000",
		"created 8 lease object(s), free: IDs 0-7", "the cluster manifest is now filled: lease objects 0-7 all exist")
	m := h.manifest()
	want := lease.Manifest{ClusterSize: 8, Layout: nodeid.DefaultLayout, CreatedAt: h.wall, Filled: true, WriteID: m.WriteID}
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
	contains(t, "second init", stdout, "cluster manifest exists: cluster size 8, node IDs 0..7, layout 41/10/12 epoch 1735689600000, filled",
		"all lease objects 0-7 exist: nothing to create")
	if strings.Contains(stdout, "now filled") {
		t.Errorf("a second init says it filled the manifest:\n%s", stdout)
	}
	if h.writes() != before {
		t.Errorf("a second init wrote %d times", h.writes()-before)
	}
}

func TestInitLayoutFlags(t *testing.T) {
	h := newHarness(t)
	h.env["NODEID_CLUSTER_SIZE"] = "4"
	h.mustRun(ExitOK, "init", "--node-bits", "8", "--timestamp-bits", "43", "--epoch-ms", "1000")
	m := h.manifest()
	if !m.Filled || m.ClusterSize != 4 || m.Layout != (snowflake.Layout{TimestampBits: 43, NodeBits: 8, SequenceBits: 12, EpochMs: 1000}) {
		t.Fatalf("manifest = %+v", m)
	}
	if h.raw(lease.RecordKey(3)) == "" || h.raw(lease.RecordKey(4)) != "" {
		t.Fatalf("want lease objects 0..3 exactly")
	}

	// Without layout flags, a later init takes the manifest's layout (the
	// provider's Init would refuse the default one), and fills what is missing.
	h.mem.Delete(lease.RecordKey(2))
	h.env = map[string]string{"NODEID_BUCKET": "test-bucket", "NODEID_PREFIX": ""}
	stdout, _ := h.mustRun(ExitOK, "init")
	contains(t, "init without flags", stdout, "cluster manifest exists: cluster size 4, node IDs 0..3, layout 43/8/12 epoch 1000, filled",
		`found 1 deleted lease object(s), not recreated: IDs 2`)
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

// TestInitBootstraps: nodeid.Init creates what was never created, free, leaves
// what was deleted missing (reporting it), and marks the manifest filled.
func TestInitBootstraps(t *testing.T) {
	tests := []struct {
		name    string
		plant   func(h *harness)
		args    []string
		free    []int // created free
		deleted []int // reported deleted, left missing
		stdout  []string
		stderr  string
	}{
		{name: "empty bucket", args: []string{"--cluster-size", "4"}, free: []int{0, 1, 2, 3},
			stdout: []string{"created cluster manifest", "created 4 lease object(s), free: IDs 0-3",
				"the cluster manifest is now filled: lease objects 0-3 all exist"}},
		{name: "not filled, tasks took some IDs by create",
			plant: func(h *harness) {
				h.putManifest(4)
				h.put(held(1, "task-a", 1))
				h.put(held(3, "task-b", 1))
			},
			free: []int{0, 2},
			stdout: []string{"cluster manifest exists: cluster size 4, node IDs 0..3, layout 41/10/12 epoch 1735689600000, not filled",
				"created 2 lease object(s), free: IDs 0, 2", "the cluster manifest is now filled"}},
		{name: "not filled, an object a gossip map knows is deleted, not created free",
			plant: func(h *harness) {
				h.putManifest(4)
				gossip := held(1, "task-a", 1)
				gossip.KnownNodes = map[int]int64{1: 1, 3: 4}
				h.put(gossip)
			},
			free:    []int{0, 2},
			deleted: []int{3},
			stdout:  []string{"created 2 lease object(s), free: IDs 0, 2", "found 1 deleted lease object(s), not recreated: IDs 3"},
			stderr:  "deleted by someone"},
		{name: "not filled, every ID taken",
			plant: func(h *harness) {
				h.putManifest(2)
				h.put(held(0, "task-a", 1))
				h.put(held(1, "task-b", 1))
			},
			stdout: []string{"not filled", "all lease objects 0-1 exist: nothing to create", "the cluster manifest is now filled"}},
		{name: "filled, deleted objects left missing",
			plant: func(h *harness) {
				h.putFilledManifest(4)
				gossip := held(0, "task-a", 1)
				gossip.KnownNodes = map[int]int64{0: 1, 2: 7}
				h.put(gossip)
				h.put(lease.Record{NodeID: 1, Version: 3})
			},
			deleted: []int{2, 3},
			stdout:  []string{"filled", "found 2 deleted lease object(s), not recreated: IDs 2-3"},
			stderr:  "nodeidctl repair --id N --floor MS"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t)
			if tc.plant != nil {
				tc.plant(h)
			}
			before := map[int]string{}
			for id := range 4 {
				before[id] = h.raw(lease.RecordKey(id))
			}
			stdout, stderr := h.mustRun(ExitOK, append([]string{"init"}, tc.args...)...)
			contains(t, "stdout", stdout, tc.stdout...)
			contains(t, "stderr", stderr, tc.stderr)
			m := h.manifest()
			if !m.Filled {
				t.Errorf("manifest %+v not filled", m)
			}
			for id := range m.ClusterSize {
				switch {
				case slices.Contains(tc.free, id):
					if r := h.record(id); !r.Free() || r.Version != 0 || r.ReservedUntilMs != 0 {
						t.Errorf("record %d = %+v, want created free", id, r)
					}
				case slices.Contains(tc.deleted, id):
					if raw := h.raw(lease.RecordKey(id)); raw != "" {
						t.Errorf("deleted object %d was recreated: %s", id, raw)
					}
				case h.raw(lease.RecordKey(id)) != before[id]:
					t.Errorf("record %d was rewritten: %s", id, h.raw(lease.RecordKey(id)))
				}
			}
		})
	}
}

// TestInitDeletedThenRepaired: a lease object deleted from a filled cluster
// is shown missing and left missing by init; repair restores it free with a
// version above every one the bucket has seen and the floor the operator
// confirms, and a task can then take it.
func TestInitDeletedThenRepaired(t *testing.T) {
	h := newHarness(t)
	h.mustRun(ExitOK, "init", "--cluster-size", "3")
	r := held(2, "task-a", 6)
	h.put(r)
	h.mem.Delete(lease.RecordKey(2))
	h.mustRun(ExitOK, "init")
	if l := h.status().Leases[2]; l.State != StateMissing {
		t.Fatalf("deleted lease 2 is %s after init, want missing", l.State)
	}
	h.mustRun(ExitOK, "repair", "--id", "2", "--floor", "1800000000000", "--version", "6", "--yes")
	if got := h.record(2); !got.Free() || got.Version != 6 || got.ReservedUntilMs != 1800000000000 {
		t.Fatalf("repaired record %+v, want free, version 6, floor 1800000000000", got)
	}
}

func TestInitRacesAndUnknownOutcomes(t *testing.T) {
	h := newHarness(t)
	// The manifest's create lands but its answer is lost; object 0's create
	// too; a task creates object 2 just before init does.
	h.fault.Queue(storetest.OpCreate, storetest.Fault{Landed: true})
	h.fault.SetInjector(func(op storetest.Op, key string) storetest.Fault {
		switch {
		case op != storetest.OpCreate:
		case key == lease.RecordKey(0) && h.raw(key) == "":
			return storetest.Fault{Landed: true}
		case key == lease.RecordKey(2) && h.raw(key) == "":
			r := held(2, "task-a", 1)
			r.WriteID = lease.NewWriteID()
			body, _ := r.Encode()
			h.mem.Put(key, body)
		}
		return storetest.Fault{}
	})
	stdout, stderr := h.mustRun(ExitOK, "init", "--cluster-size", "3")
	contains(t, "init", stdout, "cluster manifest exists (created meanwhile by a task, or by this init when the answer to its create was lost)",
		"the cluster manifest is now filled")
	if stderr != "" {
		t.Errorf("stderr: %s", stderr)
	}
	if r := h.record(2); r.Holder != "task-a" {
		t.Errorf("record 2 = %+v, want the task's", r)
	}
	if !h.manifest().Filled {
		t.Errorf("manifest not filled")
	}

	// A create of the manifest whose answer was lost, and that did not land,
	// is sent again (If-None-Match: *, so it cannot overwrite) rather than
	// read back: S3 answers a GET of a missing key 403 under the shipped
	// least-privilege policy. Lost three times, it is reported.
	h2 := newHarness(t)
	h2.fault.Queue(storetest.OpCreate, storetest.Fault{Err: storetest.Unknown(storetest.OpCreate, lease.ManifestKey)})
	stdout, _ = h2.mustRun(ExitOK, "init", "--cluster-size", "2")
	contains(t, "stdout", stdout, "created cluster manifest cluster.json: cluster size 2")
	h3 := newHarness(t)
	for range 3 {
		h3.fault.Queue(storetest.OpCreate, storetest.Fault{Err: storetest.Unknown(storetest.OpCreate, lease.ManifestKey)})
	}
	_, stderr = h3.mustRun(ExitFailed, "init")
	contains(t, "stderr", stderr, "nodeid: create cluster manifest: lease: create cluster.json: outcome unknown")
	if h3.raw(lease.ManifestKey) != "" {
		t.Errorf("a manifest was created")
	}
}

// TestInitCannotCreateEverything: a create that fails leaves the manifest not
// filled; init says why and fails, and a second run finishes.
func TestInitCannotCreateEverything(t *testing.T) {
	h := newHarness(t)
	h.fault.SetInjector(func(op storetest.Op, key string) storetest.Fault {
		if op == storetest.OpCreate && key == lease.RecordKey(1) {
			return storetest.Fault{Err: errors.New("access denied")}
		}
		return storetest.Fault{}
	})
	stdout, stderr := h.mustRun(ExitFailed, "init", "--cluster-size", "3")
	contains(t, "stdout", stdout, "created cluster manifest", "created 2 lease object(s), free: IDs 0, 2")
	contains(t, "stderr", stderr, "note: nodeid: could not create every lease object yet: nodeid: create 1.json: access denied", "run it again")
	if h.manifest().Filled {
		t.Fatal("manifest filled with an object missing")
	}
	h.fault.SetInjector(nil)
	stdout, _ = h.mustRun(ExitOK, "init")
	contains(t, "second init", stdout, "created 1 lease object(s), free: IDs 1", "now filled")
}
