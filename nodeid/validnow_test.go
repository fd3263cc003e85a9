package nodeid

import (
	"math"
	"sync"
	"testing"
	"time"
)

// TestValidNowIsValid: ValidNow, the fence that hands a generator its clock
// reading, says what Valid says at every turn: up with the Wall of that
// instant; down at the fence's instant on the monotonic clock; down at once on resume after a suspension longer than the time left.
func TestValidNowIsValid(t *testing.T) {
	check := func(t *testing.T, c *Claim, clk interface{ Wall() time.Time }, want bool, when string) {
		t.Helper()
		ns, valid := c.ValidNow()
		if valid != want || c.Valid() != want {
			t.Fatalf("%s: ValidNow %v, Valid %v: want both %v", when, valid, c.Valid(), want)
		}
		if valid && ns != clk.Wall().UnixNano() {
			t.Fatalf("%s: ValidNow's time %d, want the Wall %d", when, ns, clk.Wall().UnixNano())
		}
	}
	t.Run("at the fence", func(t *testing.T) {
		e := newEnv(t)
		clk := &suspendingClock{Clock: e.clk}
		cfg := e.config("a")
		cfg.Clock, cfg.ClusterSize = clk, 1
		e.clk.SetWallOffset(time.Minute) // the Wall is not Now
		c := e.acquire(e.provider(cfg))
		check(t, c, clk, true, "at the take")
		e.advance(200*time.Millisecond, c)
		// Bring the monotonic fence to 100 ms from now, before the first
		// renewal (at 1 s) and the suspend-counting fence (at 2.5 s).
		at := int64(e.clk.Now().Sub(c.p.base) + 100*time.Millisecond)
		c.setFence(func(s snapshot) snapshot { s.until = at; return s })
		e.advance(100*time.Millisecond-time.Nanosecond, c)
		check(t, c, clk, true, "a nanosecond before the fence")
		e.advance(time.Nanosecond, c)
		check(t, c, clk, false, "at the fence")
	})
	t.Run("suspended", func(t *testing.T) {
		e := newEnv(t)
		clk := &suspendingClock{Clock: e.clk}
		cfg := e.config("a")
		cfg.Clock, cfg.ClusterSize = clk, 1
		c := e.acquire(e.provider(cfg))
		e.advance(500*time.Millisecond, c)
		check(t, c, clk, true, "before the suspension")
		clk.suspend(2 * time.Second) // past the fence, on the suspend-counting reading only
		check(t, c, clk, false, "on resume")
	})
}

// TestWallAtIsWall: on the system clock the Wall of a reading, which
// ValidNow hands a generator, is the Wall read at that instant, without a
// second reading: between a Wall read before it and one read after.
func TestWallAtIsWall(t *testing.T) {
	for _, offset := range []time.Duration{0, time.Hour, -time.Minute} {
		sc := SystemClock(offset).(*systemClock)
		for range 1000 {
			before := sc.Wall().UnixNano()
			ns := sc.wallNsAt(sc.Now())
			after := sc.Wall().UnixNano()
			if ns < before || ns > after {
				t.Fatalf("offset %v: wallNsAt %d outside the Walls around it, %d and %d", offset, ns, before, after)
			}
		}
	}
}

// TestFenceForGoodWinsARace: a fence dropped for good (Close, a loss) and a
// write that lands at the same moment, in either order, and a Valid folding
// meanwhile: the fence stays down, on both readings, whichever replaced the
// fence state first.
func TestFenceForGoodWinsARace(t *testing.T) {
	e := newEnv(t)
	clk := &suspendingClock{Clock: e.clk}
	cfg := e.config("a")
	cfg.Clock, cfg.ClusterSize = clk, 1
	c := e.acquire(e.provider(cfg))
	// The real-time deadline 5 ms nearer than the monotonic one: a Valid
	// folds it.
	sus := clk.SuspendReading(c.p.base) + int64(time.Hour-5*time.Millisecond)
	for i := range 200 {
		c.snap.Store(&snapshot{until: int64(time.Hour), suspendUntil: sus}) // up, far out
		var wg sync.WaitGroup
		wg.Add(3)
		go func() { defer wg.Done(); c.fence() }()
		go func() {
			defer wg.Done()
			c.arm(int64(time.Hour)+int64(i), sus, func(*snapshot) {})
		}()
		go func() { defer wg.Done(); c.Valid() }()
		wg.Wait()
		if s := c.snap.Load(); c.Valid() || s.until != math.MinInt64 || s.suspendUntil != math.MinInt64 {
			t.Fatalf("round %d: valid %v, fence %+v after fence and a landing write: want down for good", i, c.Valid(), *s)
		}
	}
}
