package nodeid

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nodeid/nodeid/internal/fakeclock"
	"github.com/nodeid/nodeid/lease"
)

// suspendingClock is a fake clock whose monotonic readings stand still while
// the "host" is suspended, as Go's monotonic clock does on Linux, and whose
// suspend-counting reading does not.
type suspendingClock struct {
	*fakeclock.Clock
	suspended atomic.Int64 // ns spent suspended
}

func (c *suspendingClock) suspendReading(now time.Time) int64 {
	return now.UnixNano() + c.suspended.Load()
}

// suspend suspends the host for d: only the suspend-counting reading moves.
func (c *suspendingClock) suspend(d time.Duration) { c.suspended.Add(int64(d)) }

// TestFenceFallsAfterSuspend: a host suspended for longer than the time left
// on the fence stops issuing the moment it resumes, although its monotonic
// clock says no time passed. Before the fence counted suspended time, Valid
// stayed true until the next failed renewal. Then the claim is in jeopardy:
// with LossGrace NoLossGrace the next renewal, even if it lands, does not
// revive it; with the default, a renewal on its own last ETag that lands
// (nobody took the lease meanwhile) recovers it, and one refused (another
// task took it) ends it lost.
func TestFenceFallsAfterSuspend(t *testing.T) {
	for _, tt := range []struct {
		name      string
		grace     time.Duration
		taken     bool // another task takes the lease during the suspension
		recovered bool
	}{
		{"no loss grace", NoLossGrace, false, false},
		{"nobody took it", 0, false, true},
		{"another took it", 0, true, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			e := newEnv(t)
			clk := &suspendingClock{Clock: e.clk}
			cfg := e.config("a")
			cfg.Clock, cfg.LossGrace, cfg.ClusterSize = clk, tt.grace, 1
			c := e.acquire(e.provider(cfg))
			e.advance(500*time.Millisecond, c)
			if !c.Valid() {
				t.Fatal("not valid before the suspend")
			}
			clk.suspend(time.Hour)
			if c.Valid() {
				t.Fatal("still valid on resume after an hour suspended")
			}
			if tt.taken { // the record, rewritten by another task while this host slept
				r, m := e.record(c.NodeID())
				r.Holder, r.Version, r.WriteID = "other", r.Version+1, lease.NewWriteID()
				body, _ := r.Encode()
				if _, err := e.mem.Update(context.Background(), lease.RecordKey(c.NodeID()), body, m.ETag); err != nil {
					t.Fatal(err)
				}
			}
			e.advance(5*time.Second, c) // the renewal runs
			switch {
			case tt.recovered && (!c.Valid() || isDone(c)):
				t.Fatalf("valid %v, err %v: want recovered by the renewal that landed", c.Valid(), c.Err())
			case !tt.recovered:
				waitDone(t, c)
				if c.Valid() || !errors.Is(c.Err(), ErrLeaseLost) {
					t.Fatalf("valid %v, err %v: want lost, never valid again", c.Valid(), c.Err())
				}
			}
		})
	}
}

// TestShortSuspendKeepsTheClaim: a suspension shorter than the time left on
// the fence changes nothing.
func TestShortSuspendKeepsTheClaim(t *testing.T) {
	e := newEnv(t)
	clk := &suspendingClock{Clock: e.clk}
	cfg := e.config("a")
	cfg.Clock = clk
	c := e.acquire(e.provider(cfg))
	clk.suspend(100 * time.Millisecond)
	e.advance(5*time.Second, c)
	if !c.Valid() || c.Err() != nil {
		t.Fatalf("valid %v, err %v after a short suspend and renewals", c.Valid(), c.Err())
	}
}

// TestStepBackAfterSuspendKeepsTheSuspension: a suspension shorter than the
// time left on the fence brings the fence nearer by its length (the
// real-time deadline comes first); a step back of the real-time clock after
// the resume (NTP correcting it) must not put the fence off again, though
// the monotonic clock never saw the suspension. Cut off from its store, the
// claim must stop at t0 + LeaseDuration - SafetyMargin of real time.
func TestStepBackAfterSuspendKeepsTheSuspension(t *testing.T) {
	e := newEnv(t)
	clk := &suspendingClock{Clock: e.clk}
	cfg := e.config("a")
	cfg.Clock, cfg.ClusterSize = clk, 1
	c := e.acquire(e.provider(cfg)) // sent at 0: the fence at 2.5 s of real time
	e.advance(500*time.Millisecond, c)
	e.store.Kill(nil) // no renewal lands from here on
	clk.suspend(time.Second)
	if !c.Valid() {
		t.Fatal("not valid after 1.5 s of real time")
	}
	clk.suspend(-time.Second) // the real-time clock steps back by the suspension
	e.advance(900*time.Millisecond, c)
	if !c.Valid() {
		t.Fatal("not valid after 2.4 s of real time")
	}
	e.advance(200*time.Millisecond, c)
	if c.Valid() {
		t.Fatal("valid after 2.6 s of real time, past the fence: the step back put it off")
	}
}
