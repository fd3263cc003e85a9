package snowflake

import (
	"errors"
	"sync/atomic"
	"testing"
	"time"
)

// frozenCoarse returns a CoarseClock without a goroutine: its cached reading
// stays at cachedMs while base moves as the test says.
func frozenCoarse(base Clock, cachedMs int64) *CoarseClock {
	c := &CoarseClock{base: base}
	c.cached.Store(time.UnixMilli(cachedMs).UnixNano())
	return c
}

func TestCoarseClockTicksAndNeverLeadsThePreciseClock(t *testing.T) {
	c := NewCoarseClock(time.Millisecond)
	defer c.Stop()
	first := c.Now()
	deadline := time.Now().Add(10 * time.Second)
	for ticks := 0; ticks < 3; {
		coarse := c.Now()
		precise := c.base.Now() // read after: never behind the coarse reading
		if coarse.After(precise) {
			t.Fatalf("coarse reading %v is ahead of the precise clock %v", coarse, precise)
		}
		if coarse.After(first) {
			ticks++
			first = coarse
		}
		if time.Now().After(deadline) {
			t.Fatalf("the clock ticked %d times in 10 s; want 3", ticks)
		}
		time.Sleep(200 * time.Microsecond)
	}
}

func TestCoarseClockStopEndsTheGoroutineAndReadsPrecisely(t *testing.T) {
	c := NewCoarseClock(time.Hour) // no tick of its own during the test
	c.Stop()
	select {
	case <-c.done:
	default:
		t.Fatal("Stop returned before the goroutine did")
	}
	c.Stop() // a second Stop is harmless
	before := c.base.Now()
	got := c.Now()
	after := c.base.Now()
	if got.Before(before) || got.After(after) {
		t.Fatalf("after Stop Now = %v, want a fresh reading between %v and %v", got, before, after)
	}
}

// waitFor polls cond until it holds, failing after 10 s.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); !cond(); time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within 10 s", what)
		}
	}
}

func TestCoarseClockParksUnreadAndAGeneratorWakesIt(t *testing.T) {
	c := NewCoarseClock(time.Millisecond)
	defer c.Stop()
	waitFor(t, "the unread clock parks", func() bool { return c.cached.Load() == 0 })

	before := c.base.Now()
	got := c.Now()
	if after := c.base.Now(); got.Before(before) || got.After(after) {
		t.Fatalf("parked Now = %v, want a fresh reading between %v and %v", got, before, after)
	}
	waitFor(t, "a read wakes it", func() bool { return c.cached.Load() != 0 })

	waitFor(t, "it parks again", func() bool { return c.cached.Load() == 0 })
	g := newGen(t, c, nil)
	mustNext(t, g) // a generator's first ID is taken on a precise reading
	mustNext(t, g) // the second reads the parked clock
	waitFor(t, "Next wakes it", func() bool { return c.cached.Load() != 0 })
}

// TestCoarseClockKeepsTickingWhileAGeneratorUsesIt: a generator's calls keep
// the clock from parking (it marks the clock used once per millisecond it
// starts, not at every read).
func TestCoarseClockKeepsTickingWhileAGeneratorUsesIt(t *testing.T) {
	c := NewCoarseClock(time.Millisecond)
	defer c.Stop()
	g := newGen(t, c, nil)
	end := c.base.Now().Add(4 * parkAfter)
	parked, excused := 0, false
	for last := c.base.Now(); last.Before(end); {
		mustNext(t, g)
		now := c.base.Now()
		// A park after this goroutine itself stalled for half of parkAfter
		// (a loaded machine) is not the generator's fault: excuse it until
		// the clock ticks again.
		excused = excused || now.Sub(last) >= parkAfter/2
		if c.cached.Load() != 0 {
			excused = false
		} else if !excused {
			parked++
		}
		last = now
	}
	if parked > 0 {
		t.Fatalf("the clock was parked at %d of the generator's calls", parked)
	}
}

func TestNewCoarseClockRejectsNonPositiveResolution(t *testing.T) {
	defer func() {
		if recover() == nil {
			t.Fatal("NewCoarseClock(0) did not panic")
		}
	}()
	NewCoarseClock(0)
}

// TestCoarseClockCachedReadingWithPreciseEvery64: the generator stamps IDs
// with the cached reading, however stale, except that it reads the precise
// clock for its first ID and then at every 64th sequence number (so a busy
// generator's timestamps do not fall behind while the clock's goroutine
// waits for a processor).
func TestCoarseClockCachedReadingWithPreciseEvery64(t *testing.T) {
	base := newFakeClock(t0 + 5)
	g := newGen(t, frozenCoarse(base, t0), nil)
	if p := mustDecode(t, DefaultLayout(), mustNext(t, g)); p.TimeMs != t0+5 {
		t.Fatalf("first ID: time %d, want the precise %d", p.TimeMs, t0+5)
	}
	base.advance(4 * time.Millisecond)
	for i := 1; i < preciseEvery; i++ {
		// The cached t0 is behind the last issued t0+5: continue its sequence.
		if p := mustDecode(t, DefaultLayout(), mustNext(t, g)); p.TimeMs != t0+5 || p.Seq != int64(i) {
			t.Fatalf("ID %d: %+v, want time %d seq %d", i, p, t0+5, i)
		}
	}
	if p := mustDecode(t, DefaultLayout(), mustNext(t, g)); p.TimeMs != t0+9 || p.Seq != 0 {
		t.Fatalf("ID %d: %+v, want the precise time %d, seq 0", preciseEvery, p, t0+9)
	}
	if s := base.sleptTotal(); s != 0 {
		t.Fatalf("slept %v; no wait was needed", s)
	}
}

// TestCoarseClockWaitsAreTimedOnThePreciseClock: a cached reading that lags
// by more than MaxReservationWait must not count as time already waited, or
// a reservation that a renewal raises within MaxReservationWait would fail.
func TestCoarseClockWaitsAreTimedOnThePreciseClock(t *testing.T) {
	base := newFakeClock(t0 - 20_000)
	clk := frozenCoarse(base, t0-20_000)
	var reserved atomic.Int64
	reserved.Store(t0 - 20_000)
	base.onSleep = func(time.Duration) {
		if base.sleptTotal() >= time.Second { // a renewal, a second in
			reserved.Store(t0 + 15_000)
		}
	}
	g := newGen(t, clk, func(c *Config) {
		c.Reservation = reserved.Load
		c.MaxReservationWait = 5 * time.Second
	})
	mustNext(t, g) // at t0-20s, within the reservation

	// 20 s later by the precise clock; the cached reading lags by 10 s and
	// is past the reservation.
	base.set(t0, 0)
	clk.cached.Store(time.UnixMilli(t0 - 10_000).UnixNano())
	p := mustDecode(t, DefaultLayout(), mustNext(t, g))
	if s := base.sleptTotal(); s < time.Second || s > time.Second+2*time.Millisecond {
		t.Fatalf("slept %v, want about 1 s (until the reservation moved)", s)
	}
	if p.TimeMs < t0+1000 {
		t.Fatalf("time %d, want at least %d (after the wait, on the precise clock)", p.TimeMs, t0+1000)
	}
}

func TestCoarseClockStoppedGeneratorKeepsUp(t *testing.T) {
	base := newFakeClock(t0)
	clk := frozenCoarse(base, t0)
	g := newGen(t, clk, nil)
	mustNext(t, g)
	clk.cached.Store(0) // as Stop leaves it
	base.advance(7 * time.Millisecond)
	if p := mustDecode(t, DefaultLayout(), mustNext(t, g)); p.TimeMs != t0+7 {
		t.Fatalf("time %d after the clock stopped, want the precise %d", p.TimeMs, t0+7)
	}
}

// TestConcurrentNextCoarseClock is TestConcurrentNextSystemClock with a real
// CoarseClock: IDs stay unique and increasing per caller, their times never
// run ahead of the precise clock, and Stop still ends the generator.
func TestConcurrentNextCoarseClock(t *testing.T) {
	clk := NewCoarseClock(time.Millisecond)
	defer clk.Stop()
	cfg := DefaultConfig()
	cfg.NodeID = 1
	cfg.Clock = clk
	g, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	before := clk.base.Now().UnixMilli()
	ids := collect(t, g, 16, 2560)
	checkUnique(t, ids)
	after := clk.base.Now().UnixMilli()
	for _, w := range ids {
		for _, id := range w {
			if ms := id.Time().UnixMilli(); ms > after {
				t.Fatalf("ID time %d is after the test's end %d: the clock ran ahead", ms, after)
			}
		}
	}
	if last := g.Stop(); last < before {
		t.Fatalf("last issued %d is before the test began (%d)", last, before)
	}
	if _, err := g.Next(); !errors.Is(err, ErrFenced) {
		t.Fatalf("Next after Stop = %v, want ErrFenced", err)
	}
}
