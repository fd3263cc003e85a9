package ctl

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/nodeid/nodeid/election"
	"github.com/nodeid/nodeid/lease"
)

// plantElection plants the lease object of election name.
func (h *harness) plantElection(name string, r lease.Record) {
	h.t.Helper()
	r.WriteID = lease.NewWriteID()
	body, err := r.Encode()
	if err != nil {
		h.t.Fatal(err)
	}
	h.mem.Put(election.Dir+name+"/"+lease.RecordKey(0), body)
}

// TestLeaders: leaders lists each election with its state on the store's
// clock; status counts neither their objects as node IDs nor as foreign.
func TestLeaders(t *testing.T) {
	h := newHarness(t)
	h.putFilledManifest(2)
	h.plantElection("old", held(0, "task-old", 4))
	h.clk.Advance(30 * time.Second)
	leader := held(0, "task-a", 7)
	leader.Value = "http://10.0.0.7:8080"
	h.plantElection("jobs", leader)
	h.mem.Put(election.Dir+"jobs/"+lease.ManifestKey, []byte("{}"))
	out, _ := h.mustRun(ExitOK, "leaders", "--json")
	var infos []election.Info
	if err := json.Unmarshal([]byte(out), &infos); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	if len(infos) != 2 || infos[0].Name != "jobs" || !infos[0].Live || infos[0].Term != 7 || infos[0].Leader != "task-a" ||
		infos[0].Value != "http://10.0.0.7:8080" || infos[1].Value != "" ||
		infos[1].Name != "old" || infos[1].Live || infos[1].State != "expired" || infos[1].Term != 4 {
		t.Fatalf("leaders = %+v", infos)
	}
	out, _ = h.mustRun(ExitOK, "leaders")
	contains(t, "leaders", out, "VALUE", "jobs", "held", "task-a", "http://10.0.0.7:8080", "old", "expired")
	s := h.status()
	if len(s.ForeignKeys) != 0 {
		t.Fatalf("status names election objects as foreign: %v", s.ForeignKeys)
	}
}
