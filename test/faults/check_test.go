package faults

import (
	"strings"
	"testing"
	"time"

	"github.com/nodeid/nodeid/snowflake"
)

// t0 is a Unix ms time for the IDs of the synthetic histories.
const t0 = 1_780_000_000_000

func sid(t *testing.T, ms int64, node, seq int) int64 {
	t.Helper()
	id, err := snowflake.DefaultLayout().Compose(snowflake.Parts{TimeMs: ms, NodeID: int64(node), Seq: int64(seq)})
	if err != nil {
		t.Fatal(err)
	}
	return int64(id)
}

func s(x float64) time.Duration { return time.Duration(x * float64(time.Second)) }

// batch is an /ids answer of n IDs in millisecond ms from seq 0.
func batch(t *testing.T, broker, node int, version int64, start, end float64, ms int64, n int) IDBatch {
	ids := make([]int64, n)
	for i := range ids {
		ids[i] = sid(t, ms, node, i)
	}
	return IDBatch{Broker: broker, Start: s(start), End: s(end), Node: node, Version: version, Runs: RunsOf(ids)}
}

// The reasons of the broker's 503s (node.ErrFenced, node.ErrShuttingDown, a
// lost claim, node.ErrStalled), as /health words them.
const (
	reasonFenced   = "health: the lease was not renewed in time: fenced"
	reasonStopping = "health: shutting down: the node ID is being released"
	reasonLost     = "health: nodeid: lease lost: renewal of node 1 failed until the renew deadline (2s after the last write)"
	reasonStalled  = "health: node: the generator cannot issue IDs for 6.1s (see the log for the generator's error)"
)

// clean is a history that breaks no rule: a (node 0 v1) is stopped by
// SIGTERM and releases; b takes node 0 v2 and runs on; c holds node 1, is
// paused past its lease and exits 3.
func clean(t *testing.T) *History {
	h := &History{}
	h.AddBroker(BrokerRecord{Name: "a", Task: "ta", Fate: FateTerminated, FateAt: s(3), Exited: true, ExitedAt: s(3.3), ExitCode: 0})
	h.AddBroker(BrokerRecord{Name: "b", Task: "tb"})
	h.AddBroker(BrokerRecord{Name: "c", Task: "tc", MustLose: true, MustLoseWhy: "paused", MustLoseAt: s(8.4),
		LossLoggedAt: s(8.45), Exited: true, ExitedAt: s(9), ExitCode: 3})
	h.AddIDs(batch(t, 0, 0, 1, 1, 1.01, t0+1000, 100))
	h.AddIDs(batch(t, 0, 0, 1, 2, 2.01, t0+2000, 100))
	h.AddIDs(batch(t, 1, 0, 2, 3.5, 3.51, t0+2001, 100))
	h.AddIDs(batch(t, 1, 0, 2, 4, 4.01, t0+4000, 100))
	h.AddIDs(batch(t, 2, 1, 1, 1, 1.01, t0+1000, 100))
	h.AddIDs(batch(t, 2, 1, 1, 2, 2.01, t0+2000, 100))
	for _, o := range []HealthObs{
		{Broker: 0, Start: s(0.5), End: s(0.51), OK: false}, // acquiring
		{Broker: 0, Start: s(0.9), End: s(0.91), OK: true},
		{Broker: 0, Start: s(3.1), End: s(3.11), OK: false, Reason: reasonStopping},
		{Broker: 1, Start: s(3.4), End: s(3.41), OK: true},
		{Broker: 2, Start: s(1.5), End: s(1.51), OK: true},
		{Broker: 2, Start: s(8.5), End: s(8.51), OK: false, Reason: reasonLost},
	} {
		h.AddHealth(o)
	}
	for _, o := range []LeaseObs{
		{Node: 0, Start: s(1), End: s(1.01), Version: 1, Holder: "ta"},
		{Node: 0, Start: s(3.2), End: s(3.21), Version: 1, Holder: ""},
		{Node: 0, Start: s(3.6), End: s(3.61), Version: 2, Holder: "tb"},
		{Node: 1, Start: s(1), End: s(1.01), Version: 1, Holder: "tc"},
	} {
		h.AddLease(o)
	}
	h.AddRelease(ReleaseObs{Broker: 0, At: s(3.3), Node: 0, Found: true, Version: 1, Holder: ""})
	return h
}

func TestCheckClean(t *testing.T) {
	r := Check(clean(t))
	if r.Failed() {
		t.Fatalf("violations in a clean history:\n%s", r.Details(10))
	}
	if r.IDs != 600 || r.Batches != 6 || r.Duplicates != 0 {
		t.Errorf("report %+v", r)
	}
}

// TestCheckFails: each rule, broken on purpose in a copy of the clean
// history, is reported, and only that one.
func TestCheckFails(t *testing.T) {
	for _, c := range []struct {
		name  string
		check string
		edit  func(t *testing.T, h *History)
		also  []string // other checks the same history rightly breaks
	}{
		{"duplicate within a node ID's versions", CheckDuplicate, func(t *testing.T, h *History) {
			// b (v2) issues in the millisecond a (v1) used: the floor was ignored.
			h.AddIDs(batch(t, 1, 0, 2, 5, 5.01, t0+2000, 10))
		}, []string{CheckTimestampOrder}},
		{"duplicate in one broker", CheckDuplicate, func(t *testing.T, h *History) {
			h.AddIDs(batch(t, 1, 0, 2, 5, 5.01, t0+4000, 1))
		}, nil},
		{"node bits", CheckNodeBits, func(t *testing.T, h *History) {
			b := batch(t, 1, 0, 2, 5, 5.01, t0+5000, 1)
			b.Runs = []Run{{First: sid(t, t0+5000, 7, 0), N: 1}}
			h.AddIDs(b)
		}, nil},
		{"IDs after 503", CheckAfterUnhealthy, func(t *testing.T, h *History) {
			h.AddIDs(batch(t, 2, 1, 1, 8.6, 8.7, t0+8600, 5))
		}, nil},
		{"health flap", CheckHealthFlap, func(t *testing.T, h *History) {
			h.AddHealth(HealthObs{Broker: 2, Start: s(8.6), End: s(8.7), OK: true})
		}, nil},
		{"IDs from a superseded holder", CheckSuperseded, func(t *testing.T, h *History) {
			h.AddLease(LeaseObs{Node: 1, Start: s(6), End: s(6.01), Version: 2, Holder: "td"})
			h.AddIDs(batch(t, 2, 1, 1, 6.5, 6.6, t0+2500, 5))
		}, nil},
		{"health 200 from a superseded holder", CheckSuperseded, func(t *testing.T, h *History) {
			h.AddLease(LeaseObs{Node: 1, Start: s(6), End: s(6.01), Version: 2, Holder: "td"})
			h.AddHealth(HealthObs{Broker: 2, Start: s(6.5), End: s(8.4), OK: true})
		}, nil},
		{"IDs after the release", CheckSuperseded, func(t *testing.T, h *History) {
			h.AddIDs(batch(t, 0, 0, 1, 3.25, 3.26, t0+2001, 1))
		}, []string{CheckAfterUnhealthy, CheckDuplicate, CheckTimestampOrder}},
		{"timestamp below the floor", CheckTimestampOrder, func(t *testing.T, h *History) {
			h.AddIDs(batch(t, 1, 0, 2, 5, 5.01, t0+1500, 3))
		}, nil},
		{"version went down", CheckVersionOrder, func(t *testing.T, h *History) {
			h.AddLease(LeaseObs{Node: 0, Start: s(5), End: s(5.01), Version: 1, Holder: ""})
		}, nil},
		{"taken without a new version", CheckVersionOrder, func(t *testing.T, h *History) {
			h.AddLease(LeaseObs{Node: 1, Start: s(5), End: s(5.01), Version: 1, Holder: "td"})
		}, []string{CheckSharedVersion}},
		{"two brokers answer with one claim", CheckSharedVersion, func(t *testing.T, h *History) {
			i := h.AddBroker(BrokerRecord{Name: "d", Task: "td"})
			h.AddIDs(batch(t, i, 1, 1, 5, 5.01, t0+5000, 1))
		}, nil},
		{"lost but still running", CheckExitCode, func(t *testing.T, h *History) {
			h.Brokers[2].Exited = false
		}, nil},
		{"lost, exit 0", CheckExitCode, func(t *testing.T, h *History) {
			h.Brokers[2].ExitCode = 0
		}, nil},
		{"taken over expired and still running", CheckExitCode, func(t *testing.T, h *History) {
			h.Brokers[2].LossLoggedAt = 0
			h.Brokers[2].Exited = false
			i := h.AddBroker(BrokerRecord{Name: "d", Task: "td"})
			h.AddTakeover(TakeoverObs{Broker: i, At: s(9.5), Node: 1, Version: 2, Expired: true})
		}, nil},
		{"health 200 after it logged its loss", CheckHealthFlap, func(t *testing.T, h *History) {
			h.Health = h.Health[:len(h.Health)-1] // no 503 seen
			h.AddHealth(HealthObs{Broker: 2, Start: s(8.5), End: s(8.51), OK: true})
		}, nil},
		{"SIGTERM, exit 1", CheckExitCode, func(t *testing.T, h *History) {
			h.Brokers[0].ExitCode = 1
		}, nil},
		{"exit 0 on its own", CheckExitCode, func(t *testing.T, h *History) {
			h.Brokers[1].Exited, h.Brokers[1].ExitCode = true, 0
		}, nil},
		{"exit 1 after holding", CheckExitCode, func(t *testing.T, h *History) {
			h.Brokers[1].Exited, h.Brokers[1].ExitCode = true, 1
		}, nil},
		{"SIGTERM, lease still held", CheckRelease, func(t *testing.T, h *History) {
			h.Releases[0].Holder = "ta"
		}, nil},
		{"corrupt object", CheckCorrupt, func(t *testing.T, h *History) {
			h.AddCorrupt("nodeid/3.json: bad JSON")
		}, nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			h := clean(t)
			c.edit(t, h)
			r := Check(h)
			if r.Count(c.check) == 0 {
				t.Fatalf("no %s violation; report: %s\n%s", c.check, r.Summary(), r.Details(5))
			}
			for _, v := range r.Violations {
				if v.Check != c.check && !strings.Contains(strings.Join(c.also, " "), v.Check) {
					t.Errorf("unexpected violation %s: %s", v.Check, v.Msg)
				}
			}
		})
	}
}

func TestCheckCountsDuplicates(t *testing.T) {
	h := &History{}
	h.AddBroker(BrokerRecord{Name: "a", Task: "ta"})
	h.AddBroker(BrokerRecord{Name: "b", Task: "tb"})
	h.AddIDs(batch(t, 0, 3, 1, 1, 1.1, t0, 100))
	h.AddIDs(batch(t, 1, 3, 2, 2, 2.1, t0, 40))  // seq 0-39 twice
	h.AddIDs(batch(t, 1, 3, 2, 3, 3.1, t0, 150)) // seq 0-39 thrice, 40-99 twice, 100-149 once
	r := Check(h)
	if r.Duplicates != 2*40+60 || r.IDs != 290 {
		t.Errorf("duplicates %d of %d IDs, want 140 of 290", r.Duplicates, r.IDs)
	}
}

func TestRunsOf(t *testing.T) {
	got := RunsOf([]int64{5, 6, 7, 9, 10, 3})
	want := []Run{{5, 3}, {9, 2}, {3, 1}}
	if len(got) != len(want) {
		t.Fatalf("%v", got)
	}
	for i := range got {
		if got[i] != want[i] {
			t.Fatalf("%v, want %v", got, want)
		}
	}
}
