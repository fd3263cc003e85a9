package nodeid

import (
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nodeid/nodeid/internal/fakeclock"
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
// clock says no time passed, and the next renewal, even if it lands, does not
// revive the claim. Before the fence counted suspended time, Valid stayed
// true until the next failed renewal.
func TestFenceFallsAfterSuspend(t *testing.T) {
	e := newEnv(t)
	clk := &suspendingClock{Clock: e.clk}
	cfg := e.config("a")
	cfg.Clock = clk
	c := e.acquire(e.provider(cfg))
	e.advance(500*time.Millisecond, c)
	if !c.Valid() {
		t.Fatal("not valid before the suspend")
	}
	clk.suspend(time.Hour)
	if c.Valid() {
		t.Fatal("still valid on resume after an hour suspended")
	}
	e.advance(5*time.Second, c) // the renewal runs (and may land: nobody took the lease)
	waitDone(t, c)
	if c.Valid() || !errors.Is(c.Err(), ErrLeaseLost) {
		t.Fatalf("valid %v, err %v: want lost, never valid again", c.Valid(), c.Err())
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
