package ctl

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/nodeid/nodeid/etcdstore"
	"github.com/nodeid/nodeid/lease"
	"github.com/nodeid/nodeid/lease/storetest"
)

// plantCluster plants a filled manifest of size 7 and one object in each state:
// 0 free, 1 held (written just now), 2 held 30s ago with a 15s lease (expired on
// the store's clock), 3 garbage, 4 missing, 5 stating a 2-minute lease (above
// the 60s maximum), 6 a record under another ID's key; plus 9 above the size
// and a foreign key.
func plantCluster(h *harness) {
	h.putFilledManifest(7)
	h.put(held(2, "task-old", 4))
	h.clk.Advance(30 * time.Second)
	h.put(lease.Record{NodeID: 0, Version: 2, LeaseMillis: 15000, ReservedUntilMs: 1_800_000_000_000})
	h.put(held(1, "task-a", 3))
	h.mem.Put(lease.RecordKey(3), []byte(`{"schema":1,"nodeId":3,"version":5,"reservedUntilMs":1234,"writeId":"nothex"}`))
	long := held(5, "task-long", 1)
	long.LeaseMillis = 120000
	h.put(long)
	other := held(8, "task-b", 1)
	other.WriteID = lease.NewWriteID()
	body, _ := other.Encode()
	h.mem.Put(lease.RecordKey(6), body)
	h.put(lease.Record{NodeID: 9, Version: 1})
	h.mem.Put("notes.txt", []byte("hello"))
	h.clk.Advance(1200 * time.Millisecond)
}

func TestStatusStatesOnStoreClock(t *testing.T) {
	h := newHarness(t)
	plantCluster(h)
	before := h.writes()
	s := h.status()
	if h.writes() != before {
		t.Fatalf("status wrote %d times", h.writes()-before)
	}
	want := []struct {
		id    int
		state State
		extra bool
	}{
		{0, StateFree, false}, {1, StateHeld, false}, {2, StateExpired, false}, {3, StateCorrupt, false},
		{4, StateMissing, false}, {5, StateCorrupt, false}, {6, StateCorrupt, false}, {9, StateFree, true},
	}
	if len(s.Leases) != len(want) {
		t.Fatalf("got %d leases, want %d: %+v", len(s.Leases), len(want), s.Leases)
	}
	for i, w := range want {
		l := s.Leases[i]
		if l.NodeID != w.id || l.State != w.state || l.Extra != w.extra {
			t.Errorf("lease %d = {id %d, %s, extra %v}, want {id %d, %s, extra %v}", i, l.NodeID, l.State, l.Extra, w.id, w.state, w.extra)
		}
	}
	wantCounts := map[State]int{StateFree: 2, StateHeld: 1, StateExpired: 1, StateCorrupt: 3, StateMissing: 1}
	for st, n := range wantCounts {
		if s.Counts[st] != n {
			t.Errorf("counts[%s] = %d, want %d (%v)", st, s.Counts[st], n, s.Counts)
		}
	}
	if l := s.Leases[1]; *l.AgeMs != 1000 || *l.Holder != "task-a" || *l.Version != 3 || *l.LeaseMillis != 15000 || *l.ReservedUntilMs != 1_900_000_000_000 {
		t.Errorf("held lease = %+v (age %d)", l, *l.AgeMs)
	}
	if age := *s.Leases[2].AgeMs; age != 31000 {
		t.Errorf("expired lease age = %d ms, want 31000 (store clock, whole seconds)", age)
	}
	contains(t, "lease 3 error", s.Leases[3].Error, "writeId")
	contains(t, "lease 5 error", s.Leases[5].Error, "above the maximum lease")
	contains(t, "lease 6 error", s.Leases[6].Error, "does not match")
	if !slices.Equal(s.ForeignKeys, []string{"notes.txt"}) {
		t.Errorf("foreignKeys = %v", s.ForeignKeys)
	}
	if m := s.Manifest; m.State != "ok" || m.ClusterSize != 7 || m.Filled == nil || !*m.Filled || m.NodeBits != 10 || *m.EpochMs != 1735689600000 || !m.CreatedAt.Equal(storeStart) {
		t.Errorf("manifest = %+v", m)
	}

	// A wider margin keeps the 31s-old lease of 15s live: 31 <= 15 + 1 + 20.
	if l := h.status("--clock-margin", "20s").Leases[2]; l.State != StateHeld {
		t.Errorf("with --clock-margin 20s lease 2 is %s, want held", l.State)
	}
	// A wider maximum lease makes the 2-minute lease valid (and held).
	if l := h.status("--max-lease-duration", "5m").Leases[5]; l.State != StateHeld {
		t.Errorf("with --max-lease-duration 5m lease 5 is %s, want held", l.State)
	}
}

// TestStatusJSONShape pins the documented JSON field names per state.
func TestStatusJSONShape(t *testing.T) {
	h := newHarness(t)
	plantCluster(h)
	stdout, _ := h.mustRun(ExitOK, "status", "--json")
	var doc map[string]json.RawMessage
	if err := json.Unmarshal([]byte(stdout), &doc); err != nil {
		t.Fatal(err)
	}
	if got := sortedKeys(doc); !slices.Equal(got, []string{"bucket", "counts", "foreignKeys", "leases", "manifest", "prefix"}) {
		t.Errorf("top-level keys = %v", got)
	}
	var manifest map[string]json.RawMessage
	_ = json.Unmarshal(doc["manifest"], &manifest)
	if got := sortedKeys(manifest); !slices.Equal(got, []string{"ageMs", "clusterSize", "createdAt", "epochMs", "filled", "firstNodeId", "keepAlive", "nodeBits", "sequenceBits", "state", "timestampBits"}) {
		t.Errorf("manifest keys = %v", got)
	}
	var leases []map[string]json.RawMessage
	_ = json.Unmarshal(doc["leases"], &leases)
	decoded := []string{"ageMs", "holder", "leaseMillis", "nodeId", "reservedUntilMs", "state", "version"}
	for i, want := range [][]string{
		decoded, append(slices.Clone(decoded), "expiresInMs"), // free, held
		append(slices.Clone(decoded), "floorAheadMs"), // expired, its reservation months ahead of the store's clock
		{"ageMs", "error", "nodeId", "state"},         // corrupt
		{"nodeId", "state"},                           // missing
		{"ageMs", "error", "nodeId", "state"},
		{"ageMs", "error", "nodeId", "state"},
		append(slices.Clone(decoded), "extra"),
	} {
		slices.Sort(want)
		if got := sortedKeys(leases[i]); !slices.Equal(got, want) {
			t.Errorf("lease %d keys = %v, want %v", i, got, want)
		}
	}
	if string(manifest["filled"]) != "true" {
		t.Errorf("manifest.filled = %s, want true", manifest["filled"])
	}
	if string(leases[0]["holder"]) != `""` || string(leases[0]["state"]) != `"free"` {
		t.Errorf("free lease = %s", leases[0])
	}
}

func sortedKeys[V any](m map[string]V) []string {
	var ks []string
	for k := range m {
		ks = append(ks, k)
	}
	slices.Sort(ks)
	return ks
}

func TestStatusText(t *testing.T) {
	h := newHarness(t)
	plantCluster(h)
	stdout, stderr := h.mustRun(ExitOK, "status")
	contains(t, "status", stdout,
		"cluster size  7", "layout        41/10/12 bits", "filled        yes",
		"ID  STATE    VERSION  AGE", "task-a", "expired", "error: lease: corrupt object",
		"outside the cluster's node IDs 0..6", "8 lease objects: 2 free, 1 held, 1 expired, 3 corrupt, 1 missing",
		"nodeidctl repair", "missing objects were deleted (the cluster is filled, or a version of them was seen)")
	contains(t, "stderr", stderr, "1 other object(s) under the prefix", "notes.txt")
	if i, j := strings.Index(stdout, "\n9 "), strings.Index(stdout, "at or above"); i < j {
		t.Errorf("extra ID 9 is not listed apart:\n%s", stdout)
	}
}

// TestStatusUnusedVersusMissing: an ID without a lease object is unused (never
// created, free) while the manifest is not filled, and missing (deleted) once it
// is; an object above the size never shows either way.
func TestStatusUnusedVersusMissing(t *testing.T) {
	tests := []struct {
		name       string
		filled     bool
		state      State  // of IDs 1 and 3, which have no object
		filledJSON string // manifest.filled in JSON
		text       []string
	}{
		{name: "not filled", filled: false, state: StateUnused, filledJSON: "false",
			text: []string{"filled        no", "1   unused", "4 lease objects: 1 free, 2 unused, 1 held",
				"unused IDs were never created: they are free, and a task takes one by creating its lease object"}},
		{name: "filled", filled: true, state: StateMissing, filledJSON: "true",
			text: []string{"filled        yes", "1   missing", "4 lease objects: 1 free, 1 held, 2 missing",
				"missing objects were deleted (the cluster is filled, or a version of them was seen)"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t)
			h.plantManifest(4, tc.filled)
			h.put(lease.Record{NodeID: 0})
			h.put(held(2, "task-a", 1)) // taken by create
			s := h.status()
			if got := *s.Manifest.Filled; got != tc.filled {
				t.Errorf("manifest filled = %v, want %v", got, tc.filled)
			}
			for _, id := range []int{1, 3} {
				if l := s.Leases[id]; l.State != tc.state || l.AgeMs != nil || l.Holder != nil {
					t.Errorf("lease %d = %+v, want state %s and nothing else", id, l, tc.state)
				}
			}
			if n := s.Counts[tc.state]; n != 2 {
				t.Errorf("counts[%s] = %d, want 2 (%v)", tc.state, n, s.Counts)
			}
			stdout, _ := h.mustRun(ExitOK, "status", "--json")
			contains(t, "status --json", stdout, `"filled": `+tc.filledJSON, `"state": "`+string(tc.state)+`"`)
			stdout, _ = h.mustRun(ExitOK, "status")
			contains(t, "status", stdout, tc.text...)
		})
	}
}

// TestStatusMissingWhenAGossipMapKnowsIt: in a cluster that is not filled, an
// ID without an object that a record's gossip map has seen a version of was
// deleted: missing, not unused.
func TestStatusMissingWhenAGossipMapKnowsIt(t *testing.T) {
	h := newHarness(t)
	h.plantManifest(4, false)
	r := held(2, "task-a", 1)
	r.KnownNodes = map[int]int64{2: 1, 3: 5}
	h.put(r)
	s := h.status()
	for id, want := range map[int]State{0: StateUnused, 1: StateUnused, 3: StateMissing} {
		if got := s.Leases[id].State; got != want {
			t.Errorf("lease %d is %s, want %s", id, got, want)
		}
	}
}

func TestStatusWithoutManifest(t *testing.T) {
	h := newHarness(t)
	h.put(lease.Record{NodeID: 2, Version: 1})
	s := h.status()
	if s.Manifest.State != StateMissing || s.Manifest.Filled != nil || len(s.Leases) != 1 || s.Leases[0].NodeID != 2 || s.Leases[0].Extra {
		t.Fatalf("status = %+v", s)
	}
	stdout, _ := h.mustRun(ExitOK, "status")
	contains(t, "status", stdout, "missing (create it with nodeidctl init)")
}

func TestStatusUnreadableObject(t *testing.T) {
	h := newHarness(t)
	h.putManifest(2)
	h.put(lease.Record{NodeID: 0})
	h.put(lease.Record{NodeID: 1})
	h.fault.SetInjector(func(op storetest.Op, key string) storetest.Fault {
		if op == "get" && key == "1.json" {
			return storetest.Fault{Err: errors.New("boom")}
		}
		return storetest.Fault{}
	})
	code, stdout, stderr := h.run("status", "--json")
	if code != ExitFailed {
		t.Fatalf("exit %d, want 1; stderr %s", code, stderr)
	}
	contains(t, "status", stdout, `"state": "unknown"`, "boom")
	contains(t, "stderr", stderr, "could not be read")
}

// A free lease whose floor is far ahead of the store's clock (its last
// holder's clock was ahead) is shown as such: tasks skip it.
func TestStatusShowsAFarFloor(t *testing.T) {
	h := newHarness(t)
	h.putFilledManifest(2)
	far := storeStart.Add(time.Hour).UnixMilli()
	h.put(lease.Record{NodeID: 0, Version: 3, LeaseMillis: 15000, ReservedUntilMs: far})
	h.put(lease.Record{NodeID: 1, Version: 1, LeaseMillis: 15000, ReservedUntilMs: storeStart.UnixMilli()})
	s := h.status()
	// Date has whole seconds: the floor is 1 h and up to 1 s ahead of it.
	if l := s.Leases[0]; l.State != StateFree || l.FloorAheadMs == nil || *l.FloorAheadMs < time.Hour.Milliseconds() || *l.FloorAheadMs > (time.Hour+time.Second).Milliseconds() {
		t.Fatalf("node 0: %+v (floorAheadMs %v), want free with floorAheadMs about 1 h", l, l.FloorAheadMs)
	}
	if l := s.Leases[1]; l.FloorAheadMs != nil {
		t.Fatalf("node 1: floorAheadMs %d for a floor at the store's clock", *l.FloorAheadMs)
	}
	stdout, _ := h.mustRun(ExitOK, "status")
	contains(t, "status", stdout, "floor (reservation) is more than 5s ahead of the store's clock: 0 (1h ahead)", "tasks skip them")
}

// TestStatusSummaryFiltersAndAnomalies: the summary line counts every ID and
// names the anomalies; --state lists only the IDs in those states (the
// counts stay whole); a held lease shows when it expires unless renewed, on
// the store's clock; --fail-on-anomalies exits 1 on them.
func TestStatusSummaryFiltersAndAnomalies(t *testing.T) {
	h := newHarness(t)
	plantCluster(h)
	stdout, _ := h.mustRun(ExitOK, "status")
	contains(t, "status", stdout,
		"summary: 7 node IDs: 2 free, 1 held, 1 expired, 3 corrupt, 1 missing; 5 anomalies (2 floor ",
		"3 corrupt, 4 missing, 5 corrupt, 6 corrupt): see below",
		"ID  STATE    VERSION  AGE  EXPIRES IN  LEASE")
	if i, j := strings.Index(stdout, "summary: "), strings.Index(stdout, "ID  STATE"); i < 0 || j < i {
		t.Errorf("the summary line is not above the table:\n%s", stdout)
	}

	// Lease 1 was written 1.2 s before the GET, whose Date is whole seconds:
	// age 1 s; a task may judge it expired at the first whole second past
	// Last-Modified + 15 s + 1 s + the 1 s clock margin.
	s := h.status()
	lm := storeStart.Add(30 * time.Second)
	date := lm.Add(1200 * time.Millisecond).Truncate(time.Second)
	want := lease.FirstExpiredDate(lm, 15*time.Second, time.Second).Sub(date).Milliseconds()
	if l := s.Leases[1]; l.ExpiresInMs == nil || *l.ExpiresInMs != want || want < 16000 || want > 18000 {
		t.Errorf("held lease expiresInMs %v, want %d", l.ExpiresInMs, want)
	}
	if s.Leases[2].ExpiresInMs != nil || s.Leases[0].ExpiresInMs != nil {
		t.Errorf("expiresInMs on a lease that is not held: %+v %+v", s.Leases[0], s.Leases[2])
	}

	s = h.status("--state", "held,expired")
	if len(s.Leases) != 2 || s.Leases[0].NodeID != 1 || s.Leases[1].NodeID != 2 || s.Counts[StateCorrupt] != 3 {
		t.Errorf("--state held,expired: leases %+v counts %v, want 1 and 2 listed and the counts whole", s.Leases, s.Counts)
	}
	stdout, _ = h.mustRun(ExitOK, "status", "--state", "corrupt")
	if strings.Contains(stdout, "task-a") || !strings.Contains(stdout, "summary: 7 node IDs:") || strings.Count(stdout, " corrupt ") < 3 {
		t.Errorf("status --state corrupt:\n%s", stdout)
	}

	_, stderr := h.mustRun(ExitFailed, "status", "--fail-on-anomalies")
	contains(t, "stderr", stderr, "5 anomalies: 2 floor ", "3 corrupt, 4 missing")
	h.mustRun(ExitUsage, "status", "--state", "held,lost")

	clean := newHarness(t)
	clean.putFilledManifest(2)
	clean.put(lease.Record{NodeID: 0})
	clean.put(held(1, "task-a", 1))
	stdout, _ = clean.mustRun(ExitOK, "status", "--fail-on-anomalies")
	contains(t, "status", stdout, "summary: 2 node IDs: 1 free, 1 held; no anomalies")
}

// TestStatusNoCluster: a prefix with neither a cluster manifest nor a lease
// object (a mistyped --prefix, most often) holds no cluster: status says so
// plainly, naming the bucket and the prefix and where the prefix came from,
// exits 0 as for any status it could read, and 1 with --fail-on-anomalies.
func TestStatusNoCluster(t *testing.T) {
	// The harness sets the bucket by its variable.
	const msg = `no cluster in bucket test-bucket under prefix "ndoeid/": no cluster manifest ndoeid/cluster.json and no lease object there; check --prefix and NODEID_BUCKET (--bucket), or create the cluster with nodeidctl init`
	for _, tc := range []struct {
		name           string
		env            map[string]string
		args           []string
		plant          func(h *harness)
		code           int
		stdout, stderr string // exact; stdout "" with --json: decoded instead
	}{
		{name: "text", args: []string{"--prefix", "ndoeid/"}, code: ExitOK, stdout: msg + "\n"},
		{name: "flags only", args: []string{"--prefix", "ndoeid/", "--bucket", "ids-prod"}, code: ExitOK,
			stdout: `no cluster in bucket ids-prod under prefix "ndoeid/": no cluster manifest ndoeid/cluster.json and no lease object there; check --prefix and --bucket, or create the cluster with nodeidctl init` + "\n"},
		{name: "fail on anomalies", args: []string{"--prefix", "ndoeid/", "--fail-on-anomalies"}, code: ExitFailed,
			stdout: msg + "\n", stderr: "nodeidctl status: " + msg + "\n"},
		{name: "json", args: []string{"--prefix", "ndoeid/", "--json"}, code: ExitOK, stderr: "note: " + msg + "\n"},
		{name: "json, fail on anomalies", args: []string{"--prefix", "ndoeid/", "--json", "--fail-on-anomalies"}, code: ExitFailed,
			stderr: "nodeidctl status: " + msg + "\n"},
		{name: "prefix from the environment", env: map[string]string{"NODEID_PREFIX": "ndoeid/"}, args: []string{"--fail-on-anomalies"}, code: ExitFailed,
			stdout: strings.Replace(msg, "check --prefix", "check NODEID_PREFIX (--prefix)", 1) + "\n",
			stderr: "nodeidctl status: " + strings.Replace(msg, "check --prefix", "check NODEID_PREFIX (--prefix)", 1) + "\n"},
		{name: "root of the bucket", args: []string{"--fail-on-anomalies"}, code: ExitFailed,
			stdout: "no cluster at the root of bucket test-bucket (prefix \"\"): no cluster manifest cluster.json and no lease object there; check NODEID_PREFIX (--prefix) and NODEID_BUCKET (--bucket), or create the cluster with nodeidctl init\n",
			stderr: "nodeidctl status: no cluster at the root of bucket test-bucket (prefix \"\"): no cluster manifest cluster.json and no lease object there; check NODEID_PREFIX (--prefix) and NODEID_BUCKET (--bucket), or create the cluster with nodeidctl init\n"},
		{name: "other objects only", args: []string{"--prefix", "ndoeid/", "--fail-on-anomalies"}, code: ExitFailed,
			plant:  func(h *harness) { h.mem.Put("notes.txt", []byte("x")); h.mem.Put(lease.ProbeKey, []byte("x")) },
			stdout: msg + "\n", stderr: "note: 1 other object(s) under the prefix, ignored by nodeid: notes.txt\nnodeidctl status: " + msg + "\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t)
			for k, v := range tc.env {
				h.env[k] = v
			}
			if tc.plant != nil {
				tc.plant(h)
			}
			code, stdout, stderr := h.run(append([]string{"status"}, tc.args...)...)
			if code != tc.code || stderr != tc.stderr {
				t.Errorf("exit %d, want %d\nstderr: %q\nwant:   %q", code, tc.code, stderr, tc.stderr)
			}
			if !slices.Contains(tc.args, "--json") {
				if stdout != tc.stdout {
					t.Errorf("stdout: %q\nwant:   %q", stdout, tc.stdout)
				}
				return
			}
			var s StatusJSON
			if err := json.Unmarshal([]byte(stdout), &s); err != nil {
				t.Fatalf("status --json: %v\n%s", err, stdout)
			}
			if s.Manifest.State != StateMissing || len(s.Leases) != 0 || s.Prefix != "ndoeid/" || s.Bucket != "test-bucket" {
				t.Errorf("status --json = %+v", s)
			}
		})
	}
}

// TestStatusAClusterIsFound: a manifest without lease objects (none created
// yet), or lease objects without a manifest, is a cluster: no "no cluster".
func TestStatusAClusterIsFound(t *testing.T) {
	h := newHarness(t)
	h.putManifest(4)
	stdout, stderr := h.mustRun(ExitOK, "status", "--fail-on-anomalies")
	contains(t, "status", stdout, "summary: 4 node IDs: 4 unused; no anomalies")
	if strings.Contains(stdout+stderr, "no cluster") {
		t.Errorf("a manifest without lease objects is reported as no cluster:\n%s%s", stdout, stderr)
	}
	h = newHarness(t)
	h.put(lease.Record{NodeID: 2, Version: 1})
	stdout, stderr = h.mustRun(ExitOK, "status", "--fail-on-anomalies")
	if strings.Contains(stdout+stderr, "no cluster") {
		t.Errorf("lease objects without a manifest are reported as no cluster:\n%s%s", stdout, stderr)
	}
}

// TestStatusNoClusterOnEtcd: on etcd, "no cluster" names etcd's prefix and
// its endpoints flag, not a bucket.
func TestStatusNoClusterOnEtcd(t *testing.T) {
	h := newHarness(t)
	delete(h.env, "NODEID_BUCKET")
	env := h.Env()
	env.OpenEtcd = func(context.Context, etcdstore.Config) (lease.Store, error) { return h.fault, nil }
	var out, errb bytes.Buffer
	code := Run(context.Background(), []string{"status", "--store", "etcd", "--etcd-endpoints", "127.0.0.1:2379", "--prefix", "ndoeid/", "--fail-on-anomalies"}, &out, &errb, env)
	want := `no cluster in etcd under prefix "ndoeid/": no cluster manifest ndoeid/cluster.json and no lease object there; check --prefix and --etcd-endpoints, or create the cluster with nodeidctl init`
	if code != ExitFailed || errb.String() != "nodeidctl status: "+want+"\n" || out.String() != want+"\n" {
		t.Errorf("exit %d, want %d\nstdout: %q\nstderr: %q\nwant:   %q", code, ExitFailed, out.String(), errb.String(), want)
	}
}
