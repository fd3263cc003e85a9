package ctl

import (
	"cmp"
	"strconv"
	"testing"

	"github.com/nodeid/nodeid/lease"
	"github.com/nodeid/nodeid/lease/storetest"
)

// corruptBody is a corrupt lease object for node 3 that still says its version
// and reservation.
const corruptBody = `{"schema":1,"nodeId":3,"version":6,"reservedUntilMs":1700000000000,"writeId":"x"}`

func TestRepair(t *testing.T) {
	tests := []struct {
		name     string
		plant    func(h *harness) // plants node 3; the others are planted by the test
		unfilled bool             // the manifest is not filled (default: filled)
		args     []string
		floor    int64            // --floor; 0 = 1800000000000
		fault    *storetest.Fault // on the write, if any
		code     int
		version  int64 // of the repaired record; 0 = must not be written
		stdout   string
		stderr   string
	}{
		{name: "decodable refused", plant: func(h *harness) { h.put(held(3, "task-a", 2)) }, args: []string{"--yes"},
			code: ExitFailed, stderr: `lease object 3.json decodes fine (held, version 2, holder "task-a"): repair only rewrites a corrupt or missing object; use nodeidctl release --id 3`},
		{name: "free refused", plant: func(h *harness) { h.put(lease.Record{NodeID: 3}) }, args: []string{"--yes"},
			code: ExitFailed, stderr: "decodes fine (free"},
		{name: "unconfirmed", plant: corrupt3, code: ExitFailed,
			stdout: `write 3.json with If-Match: "`,
			stderr: "nothing written: check the floor and the version, then run again with --yes"},
		{name: "corrupt, default version", plant: corrupt3, args: []string{"--yes"}, code: ExitOK, version: 10,
			stdout: "the corrupt object states reservedUntilMs 1700000000000"},
		{name: "corrupt, floor below its reservation", plant: corrupt3, args: []string{"--yes"}, floor: 5, code: ExitOK, version: 10,
			stderr: "--floor 5 is below the reservation the corrupt object states"},
		{name: "corrupt, explicit version", plant: corrupt3, args: []string{"--yes", "--version", "9"}, code: ExitOK, version: 9},
		{name: "version below the corrupt object's",
			plant: func(h *harness) {
				h.mem.Put(lease.RecordKey(3), []byte(`{"schema":1,"nodeId":3,"version":12,"writeId":"x"}`))
			},
			args: []string{"--yes", "--version", "11"}, code: ExitFailed,
			stderr: "--version 11 is below version 12 seen for node 3: versions never decrease"},
		{name: "default version above the corrupt object's",
			plant: func(h *harness) {
				h.mem.Put(lease.RecordKey(3), []byte(`{"schema":1,"nodeId":3,"version":12,"writeId":"x"}`))
			},
			args: []string{"--yes"}, code: ExitOK, version: 13},
		{name: "version below gossip's", plant: func(h *harness) {}, args: []string{"--yes", "--version", "8"},
			code: ExitFailed, stderr: "--version 8 is below version 9 seen for node 3"},
		{name: "lease above maximum is corrupt", plant: func(h *harness) { r := held(3, "t", 1); r.LeaseMillis = 3600000; h.put(r) },
			args: []string{"--yes"}, code: ExitOK, version: 10, stdout: "above the maximum lease"},
		{name: "missing created", plant: func(h *harness) {}, args: []string{"--yes"}, code: ExitOK, version: 10,
			stdout: "lease object 3.json is missing\n"},
		{name: "missing created, If-None-Match", plant: func(h *harness) {}, args: []string{"--yes"}, code: ExitOK, version: 10,
			stdout: "write 3.json with If-None-Match: *"},
		{name: "unused refused", plant: func(h *harness) {}, unfilled: true, args: []string{"--yes"}, code: ExitFailed,
			stderr: "lease object 3.json was never created (unused: the cluster manifest is not filled): node 3 is free, and a task takes it by creating its object; there is nothing to repair"},
		{name: "corrupt in a cluster that is not filled", plant: corrupt3, unfilled: true, args: []string{"--yes"}, code: ExitOK, version: 10},
		{name: "missing, lost create that landed", plant: func(h *harness) {}, args: []string{"--yes"},
			fault: &storetest.Fault{Landed: true}, code: ExitOK, version: 10},
		{name: "corrupt, lost update that landed", plant: corrupt3, args: []string{"--yes"},
			fault: &storetest.Fault{Landed: true}, code: ExitOK, version: 10},
		{name: "corrupt, changed meanwhile", plant: corrupt3, args: []string{"--yes"},
			fault: &storetest.Fault{Err: lease.ErrPreconditionFailed}, code: ExitFailed, stderr: "3.json was not repaired: nodeidctl: the object changed meanwhile"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t)
			h.plantManifest(5, !tc.unfilled)
			// Versions elsewhere: 4 on node 0, and node 1's gossip saw node 3 at 9.
			h.put(lease.Record{NodeID: 0, Version: 4})
			gossip := held(1, "task-b", 2)
			gossip.KnownNodes = map[int]int64{1: 2, 3: 9}
			h.put(gossip)
			tc.plant(h)
			before := h.raw(lease.RecordKey(3))
			if tc.fault != nil {
				h.fault.Queue(storetest.OpUpdate, *tc.fault)
				h.fault.Queue(storetest.OpCreate, *tc.fault)
			}
			floor := cmp.Or(tc.floor, 1800000000000)
			args := append([]string{"repair", "--id", "3", "--floor", strconv.FormatInt(floor, 10)}, tc.args...)
			code, stdout, stderr := h.run(args...)
			if code != tc.code {
				t.Fatalf("exit %d, want %d\nstdout: %s\nstderr: %s", code, tc.code, stdout, stderr)
			}
			contains(t, "stdout", stdout, tc.stdout)
			contains(t, "stderr", stderr, tc.stderr)
			if tc.version == 0 {
				if h.raw(lease.RecordKey(3)) != before {
					t.Fatalf("node 3 was written")
				}
				return
			}
			contains(t, "stdout", stdout, "repaired node 3")
			r := h.record(3)
			want := lease.Record{NodeID: 3, Version: tc.version, ReservedUntilMs: floor, WriteID: r.WriteID}
			if r.NodeID != want.NodeID || r.Version != want.Version || r.ReservedUntilMs != want.ReservedUntilMs ||
				!r.Free() || r.LeaseMillis != 0 || r.KnownNodes != nil {
				t.Fatalf("repaired record = %+v, want %+v", r, want)
			}
		})
	}
}

func corrupt3(h *harness) { h.mem.Put(lease.RecordKey(3), []byte(corruptBody)) }
