package snowflake

import (
	"errors"
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
	mustNext(t, g)
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
	parked := 0
	for c.base.Now().Before(end) {
		mustNext(t, g)
		if c.cached.Load() == 0 {
			parked++
		}
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

// TestCoarseClockFastPathCachedSlowPathPrecise: the generator stamps IDs with
// the cached reading, however stale, and when the sequence is used up it
// reads the precise clock instead of waiting for a tick.
func TestCoarseClockFastPathCachedSlowPathPrecise(t *testing.T) {
	base := newFakeClock(t0 + 5)
	g := newGen(t, frozenCoarse(base, t0), withLayout(tiny))
	var got []Parts
	for range 6 {
		got = append(got, mustDecode(t, tiny, mustNext(t, g)))
	}
	// tiny has 4 IDs per millisecond: 4 stamped t0 (cached), then the
	// precise t0+5, whose sequence the next call continues from the cached
	// reading, which is behind it.
	want := []int64{t0, t0, t0, t0, t0 + 5, t0 + 5}
	for i, p := range got {
		if p.TimeMs != want[i] {
			t.Fatalf("ID %d: time %d, want %d (all: %+v)", i, p.TimeMs, want[i], got)
		}
	}
	if s := base.sleptTotal(); s != 0 {
		t.Fatalf("slept %v; the precise clock was already past t0", s)
	}
}

// TestCoarseClockWaitsAreTimedOnThePreciseClock: a cached reading that lags
// by more than MaxClockWait must not count as time already waited, or a
// floor within MaxClockWait would fail at once.
func TestCoarseClockWaitsAreTimedOnThePreciseClock(t *testing.T) {
	base := newFakeClock(t0)
	g := newGen(t, frozenCoarse(base, t0-10_000), func(c *Config) {
		c.FloorMs = t0 + 3000
		c.MaxClockWait = 5 * time.Second
	})
	p := mustDecode(t, DefaultLayout(), mustNext(t, g))
	if p.TimeMs != t0+3001 {
		t.Fatalf("time %d, want %d (just above the floor)", p.TimeMs, t0+3001)
	}
	if s := base.sleptTotal(); s < 3*time.Second || s > 3*time.Second+2*time.Millisecond {
		t.Fatalf("slept %v, want about 3 s", s)
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
