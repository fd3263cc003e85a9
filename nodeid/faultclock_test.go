package nodeid

import (
	"context"
	"testing"
	"time"

	"github.com/nodeid/nodeid/internal/faultclock"
)

// TestClockRateBound: a holder cut off from its store stops issuing before
// the store can judge its lease expired (LeaseDuration of real time after
// its last write was sent) while its clock's rate is above 1 -
// SafetyMargin/LeaseDuration (docs/evidence/design.md section 6); below it, it still
// issues then. At the local defaults (3 s lease, 0.5 s margin, 2 s renew
// deadline) the bound is 0.833: the renewal loop gives up at 2 s and the
// fence falls at 2.5 s, on the holder's clock.
func TestClockRateBound(t *testing.T) {
	for _, tt := range []struct {
		rate          float64
		validAtExpiry bool
	}{
		{1.25, false},
		{1, false},
		{0.9, false},
		{0.85, false},
		{0.5, true}, // beyond: it issues until 4 s of real time
	} {
		e := newEnv(t)
		cfg := e.config("a")
		cfg.Clock, cfg.ClusterSize = faultclock.New(faultclock.Fault{Rate: tt.rate}, e.clk), 1
		c, err := e.provider(cfg).Acquire(context.Background()) // its take is sent now
		if err != nil {
			t.Fatal(err)
		}
		e.store.Kill(nil)
		e.advance(cfg.LeaseDuration-time.Millisecond, c)
		if got := c.Valid(); got != tt.validAtExpiry {
			t.Errorf("rate %v: valid %v at the lease's expiry on the store's clock, want %v", tt.rate, got, tt.validAtExpiry)
		}
		ctx, cancel := context.WithCancel(context.Background())
		cancel() // the store is gone: nothing to release
		_ = c.Close(ctx)
	}
}

// TestStepForwardFencesTheClaim: a step of the real-time clock forward past
// the fence (here an hour) fences the claim at once, as a suspension does
// (docs/evidence/design.md section 4); the next renewal, which lands, recovers it.
// The wall clock, which Snowflake timestamps are read from, does not move.
func TestStepForwardFencesTheClaim(t *testing.T) {
	e := newEnv(t)
	clk := faultclock.New(faultclock.Fault{Steps: []faultclock.Step{{At: 1500 * time.Millisecond, By: time.Hour}}}, e.clk)
	cfg := e.config("a")
	cfg.Clock, cfg.ClusterSize = clk, 1
	c := e.acquire(e.provider(cfg))
	e.advance(1400*time.Millisecond, c)
	wall := clk.Wall()
	if !c.Valid() {
		t.Fatal("not valid before the step")
	}
	e.advance(200*time.Millisecond, c)
	if c.Valid() {
		t.Fatal("still valid after the real-time clock stepped an hour forward")
	}
	if got := clk.Wall().Sub(wall); got != 200*time.Millisecond {
		t.Fatalf("the wall clock moved %v in 200 ms", got)
	}
	e.advance(time.Second, c) // the renewal at 2 s lands
	if !c.Valid() || c.Status().Recoveries != 1 {
		t.Fatalf("valid %v, recoveries %d after a renewal landed: want recovered once", c.Valid(), c.Status().Recoveries)
	}
}

// TestStepBackDoesNotLiftTheFence: a fence that the real-time clock brought
// down stays down when that clock steps back (a strobe; NTP correcting a
// clock after a suspension): only a write that lands lifts a fence. Found by
// the clock faults of TestFaultsEtcd (seed 629954): the broker answered
// /health 503 and then, 100 ms later, 200 with the same recovery count.
func TestStepBackDoesNotLiftTheFence(t *testing.T) {
	e := newEnv(t)
	clk := faultclock.New(faultclock.Fault{Steps: []faultclock.Step{
		{At: 1500 * time.Millisecond, By: time.Hour},
		{At: 1600 * time.Millisecond, By: -time.Hour},
	}}, e.clk)
	cfg := e.config("a")
	cfg.Clock, cfg.ClusterSize = clk, 1
	c := e.acquire(e.provider(cfg))
	e.advance(1550*time.Millisecond, c)
	if c.Valid() {
		t.Fatal("valid after the real-time clock stepped an hour forward")
	}
	e.advance(100*time.Millisecond, c) // 1.65 s: the clock is back
	if c.Valid() {
		t.Fatal("valid again once the real-time clock stepped back, with no write landed")
	}
	e.advance(400*time.Millisecond, c) // the renewal at 2 s lands
	if !c.Valid() || c.Status().Recoveries != 1 {
		t.Fatalf("valid %v, recoveries %d after a renewal landed: want recovered once", c.Valid(), c.Status().Recoveries)
	}
}
