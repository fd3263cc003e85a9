package nodeid

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nodeid/nodeid/lease"
	"github.com/nodeid/nodeid/lease/storetest"
)

// TestReview4ReleaseReadBackCountsTheSuspension: freedByOurRelease proves
// that a successor took our *free* record (so our release landed) from the
// read-back's answer arriving less than LeaseDuration - SafetyMargin after
// our last held write was sent, on the monotonic clock alone. A host
// suspended between the release's send and its read-back (the claim's fence
// counts suspensions: Valid reads the real-time clock too) breaks the proof:
// an hour passed in real time, the held record expired on the store's clock
// and another task took it, while our release never landed. Close must then
// report the loss (docs/design.md 7.5: "Past that instant ... Close reports
// ErrLeaseLost"), not a release.
func TestReview4ReleaseReadBackCountsTheSuspension(t *testing.T) {
	e := newEnv(t)
	clk := &suspendingClock{Clock: e.clk}
	cfg := e.config("a")
	cfg.Clock, cfg.ClusterSize = clk, 1
	c := e.acquire(e.provider(cfg))
	id := c.NodeID()

	// The release's write leaves and its answer is lost; it did not land.
	e.store.Queue(storetest.OpUpdate, storetest.Fault{Err: storetest.Unknown(storetest.OpUpdate, lease.RecordKey(id))})
	// Before its read-back the host is suspended for an hour; meanwhile the
	// held record expired on the store's clock and another task took it.
	var once atomic.Bool
	e.store.SetInjector(func(op storetest.Op, key string) storetest.Fault {
		if op == storetest.OpGet && once.CompareAndSwap(false, true) {
			clk.suspend(time.Hour)
			r, m, err := e.mem.Get(context.Background(), key)
			if err != nil {
				t.Error(err)
				return storetest.Fault{}
			}
			rec, _ := lease.DecodeRecord(r, id)
			if rec.Free() {
				t.Error("setup: the release landed")
			}
			rec.Holder, rec.Version, rec.WriteID = "other", rec.Version+1, lease.NewWriteID()
			body, _ := rec.Encode()
			if _, err := e.mem.Update(context.Background(), key, body, m.ETag); err != nil {
				t.Error(err)
			}
		}
		return storetest.Fault{}
	})
	err := c.Close(context.Background())
	if r, _ := e.record(id); r.Free() || r.Holder != "other" {
		t.Fatalf("setup: record %+v", r)
	}
	if !errors.Is(err, ErrLeaseLost) {
		t.Fatalf("Close = %v: reported released, but our release never landed: another task took the held record after it expired during the suspension", err)
	}
}
