package snowflake

import (
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// tiny is a layout with 4 IDs per millisecond, to use sequences up quickly.
var tiny = Layout{TimestampBits: 51, NodeBits: 10, SequenceBits: 2, EpochMs: DefaultEpochMs}

// newGen returns a generator for node 7 on clk with DefaultConfig, changed by
// mod.
func newGen(t *testing.T, clk Clock, mod func(*Config)) *Generator {
	t.Helper()
	cfg := DefaultConfig()
	cfg.NodeID = 7
	cfg.Clock = clk
	if mod != nil {
		mod(&cfg)
	}
	g, err := New(cfg)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	return g
}

func withLayout(l Layout) func(*Config) { return func(c *Config) { c.Layout = l } }

func mustNext(t *testing.T, g *Generator) ID {
	t.Helper()
	id, err := g.Next()
	if err != nil {
		t.Fatalf("Next: %v", err)
	}
	return id
}

func TestNextEncodesClockNodeAndSequence(t *testing.T) {
	clk := newFakeClock(t0)
	clk.advance(300 * time.Microsecond) // within the millisecond
	g := newGen(t, clk, nil)
	for seq := int64(0); seq < 3; seq++ {
		id := mustNext(t, g)
		if got, want := mustDecode(t, DefaultLayout(), id), (Parts{TimeMs: t0, NodeID: 7, Seq: seq}); got != want {
			t.Fatalf("ID %d = %+v, want %+v", seq, got, want)
		}
	}
	clk.advance(time.Millisecond)
	if got := mustDecode(t, DefaultLayout(), mustNext(t, g)); got.TimeMs != t0+1 || got.Seq != 0 {
		t.Fatalf("after 1 ms: %+v, want time %d seq 0", got, t0+1)
	}
	if got := g.LastIssuedMs(); got != t0+1 {
		t.Fatalf("LastIssuedMs = %d, want %d", got, t0+1)
	}
	if clk.sleptTotal() != 0 {
		t.Fatalf("slept %v, want no wait", clk.sleptTotal())
	}
}

func TestSequenceExhaustedWaitsForNextMillisecond(t *testing.T) {
	clk := newFakeClock(t0)
	clk.advance(400 * time.Microsecond)
	g := newGen(t, clk, withLayout(tiny))
	var last ID
	for i := range 4 {
		id := mustNext(t, g)
		if id <= last && i > 0 {
			t.Fatalf("IDs not increasing: %d after %d", id, last)
		}
		last = id
	}
	if clk.sleptTotal() != 0 {
		t.Fatalf("slept %v before the sequence ran out", clk.sleptTotal())
	}
	id := mustNext(t, g) // the fifth: the sequence is used up
	if p := mustDecode(t, tiny, id); p.TimeMs != t0+1 || p.Seq != 0 {
		t.Fatalf("fifth ID %+v, want time %d seq 0", p, t0+1)
	}
	if got, want := clk.sleptTotal(), 600*time.Microsecond; got != want {
		t.Fatalf("waited %v, want exactly the rest of the millisecond, %v", got, want)
	}
}

func TestClockSteppedBackNeverGoesBackwards(t *testing.T) {
	clk := newFakeClock(t0)
	g := newGen(t, clk, withLayout(tiny))
	first := mustNext(t, g)
	clk.set(t0-3, 0) // three ms back, within MaxClockWait
	var ids []ID
	for range 8 {
		ids = append(ids, mustNext(t, g))
	}
	prev := first
	for _, id := range ids {
		if id <= prev {
			t.Fatalf("ID %d not above %d", id, prev)
		}
		if p := mustDecode(t, tiny, id); p.TimeMs < t0 {
			t.Fatalf("timestamp %d below one already issued (%d)", p.TimeMs, t0)
		}
		prev = id
	}
	// Three IDs were left at t0; then the generator waited out the clock to
	// t0+1 (4 ms), issued four, and waited one more ms for the last.
	if got, want := clk.sleptTotal(), 5*time.Millisecond; got != want {
		t.Fatalf("waited %v, want %v", got, want)
	}
}

func TestClockBehindMoreThanMaxFailsAtOnce(t *testing.T) {
	clk := newFakeClock(t0)
	g := newGen(t, clk, func(c *Config) {
		c.Layout = tiny
		c.MaxClockWait = 5 * time.Second
	})
	for range 4 {
		mustNext(t, g)
	}
	clk.set(t0-10_000, 0) // stepped back 10 s
	_, err := g.Next()
	if !errors.Is(err, ErrClockBackwards) {
		t.Fatalf("Next = %v, want ErrClockBackwards", err)
	}
	if !strings.HasPrefix(err.Error(), "snowflake: ") || !strings.Contains(err.Error(), "by 10s") ||
		!strings.Contains(err.Error(), "MaxClockWait is 5s") {
		t.Fatalf("message %q should name the amount (10s) and MaxClockWait", err)
	}
	if clk.sleptTotal() != 0 {
		t.Fatalf("slept %v before failing, want a failure at once", clk.sleptTotal())
	}
	// Once the clock has come back within reach, the wait is bounded by it.
	clk.set(t0-4_000, 0)
	id := mustNext(t, g)
	if p := mustDecode(t, tiny, id); p.TimeMs != t0+1 {
		t.Fatalf("after the wait: time %d, want %d", p.TimeMs, t0+1)
	}
	if got, want := clk.sleptTotal(), 4001*time.Millisecond; got != want {
		t.Fatalf("waited %v, want %v", got, want)
	}
}

func TestFloorIsWaitedOut(t *testing.T) {
	for _, tc := range []struct {
		name    string
		ahead   time.Duration // floor ahead of the clock
		maxWait time.Duration
		wantErr bool
	}{
		{"floor behind clock", -time.Hour, 5 * time.Second, false},
		{"floor is now", 0, 0, false},
		{"floor 2s ahead", 2 * time.Second, 5 * time.Second, false},
		{"floor exactly MaxClockWait ahead", 5 * time.Second, 5 * time.Second, false},
		{"floor 1ms past MaxClockWait", 5*time.Second + time.Millisecond, 5 * time.Second, true},
		{"floor 6s ahead", 6 * time.Second, 5 * time.Second, true},
		{"no waiting allowed", 2 * time.Millisecond, 0, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			clk := newFakeClock(t0)
			floor := t0 + tc.ahead.Milliseconds()
			g := newGen(t, clk, func(c *Config) {
				c.FloorMs = floor
				c.MaxClockWait = tc.maxWait
			})
			if got := g.LastIssuedMs(); got != floor {
				t.Fatalf("LastIssuedMs before any ID = %d, want the floor %d", got, floor)
			}
			id, err := g.Next()
			if tc.wantErr {
				if !errors.Is(err, ErrClockBackwards) {
					t.Fatalf("Next = %v, want ErrClockBackwards", err)
				}
				return
			}
			if err != nil {
				t.Fatalf("Next: %v", err)
			}
			p := mustDecode(t, DefaultLayout(), id)
			if p.TimeMs <= floor {
				t.Fatalf("timestamp %d not above the floor %d", p.TimeMs, floor)
			}
			if want := max(floor+1, t0); p.TimeMs != want {
				t.Fatalf("timestamp %d, want %d (the first above the floor)", p.TimeMs, want)
			}
		})
	}
}

func TestReservationIsNeverPassed(t *testing.T) {
	clk := newFakeClock(t0)
	var res atomic.Int64
	res.Store(t0 + 2)
	renewals := 0
	clk.onSleep = func(time.Duration) {
		// A renewal lands after the generator has waited 3 ms.
		if renewals++; renewals == 3 {
			res.Store(t0 + 100)
		}
	}
	g := newGen(t, clk, func(c *Config) {
		c.Layout = tiny
		c.Reservation = res.Load
	})
	var maxTs int64
	for range 40 { // 10 ms worth
		id := mustNext(t, g)
		p := mustDecode(t, tiny, id)
		if r := res.Load(); p.TimeMs > r {
			t.Fatalf("timestamp %d above the reservation %d", p.TimeMs, r)
		}
		maxTs = max(maxTs, p.TimeMs)
		clk.advance(250 * time.Microsecond)
	}
	if renewals < 3 || maxTs <= t0+2 {
		t.Fatalf("renewals %d, last timestamp %d: the generator should have waited for the renewal and gone on", renewals, maxTs)
	}
}

func TestReservationExhausted(t *testing.T) {
	clk := newFakeClock(t0)
	g := newGen(t, clk, func(c *Config) {
		c.Reservation = func() int64 { return t0 }
		c.MaxReservationWait = 50 * time.Millisecond
	})
	mustNext(t, g)
	clk.advance(time.Millisecond)
	_, err := g.Next()
	if !errors.Is(err, ErrReservationExhausted) {
		t.Fatalf("Next = %v, want ErrReservationExhausted", err)
	}
	if !strings.Contains(err.Error(), "did not move for 50ms") {
		t.Fatalf("message %q should say how long it waited", err)
	}
	if got := clk.sleptTotal(); got != 50*time.Millisecond {
		t.Fatalf("waited %v, want MaxReservationWait (50ms)", got)
	}
	if got := g.LastIssuedMs(); got != t0 {
		t.Fatalf("LastIssuedMs = %d, want %d", got, t0)
	}
}

func TestFenceDownFailsAtOnce(t *testing.T) {
	clk := newFakeClock(t0)
	var up atomic.Bool
	up.Store(true)
	g := newGen(t, clk, func(c *Config) { c.Fence = FenceFunc(up.Load) })
	mustNext(t, g)
	up.Store(false)
	if _, err := g.Next(); !errors.Is(err, ErrFenced) {
		t.Fatalf("Next = %v, want ErrFenced", err)
	}
	if _, err := g.NextN(10); !errors.Is(err, ErrFenced) {
		t.Fatalf("NextN = %v, want ErrFenced", err)
	}
	up.Store(true) // a fence that comes back up (a test fence can)
	mustNext(t, g)
}

func TestFenceDownWhileWaiting(t *testing.T) {
	clk := newFakeClock(t0)
	var up atomic.Bool
	up.Store(true)
	clk.onSleep = func(time.Duration) {
		if clk.sleptTotal() >= 10*time.Millisecond {
			up.Store(false)
		}
	}
	g := newGen(t, clk, func(c *Config) {
		c.Fence = FenceFunc(up.Load)
		c.Reservation = func() int64 { return t0 - 1 } // never reached by renewal
		c.MaxReservationWait = time.Hour
	})
	if _, err := g.Next(); !errors.Is(err, ErrFenced) {
		t.Fatalf("Next = %v, want ErrFenced", err)
	}
	if got := clk.sleptTotal(); got > 11*time.Millisecond {
		t.Fatalf("waited %v after the fence went down at 10ms: the fence must stop a wait within one poll", got)
	}
}

func TestTimeOverflow(t *testing.T) {
	l := Layout{TimestampBits: 32, NodeBits: 10, SequenceBits: 21, EpochMs: DefaultEpochMs}
	clk := newFakeClock(l.MaxTimeMs())
	g := newGen(t, clk, withLayout(l))
	id := mustNext(t, g)
	if p := mustDecode(t, l, id); p.TimeMs != l.MaxTimeMs() {
		t.Fatalf("last ID time %d, want %d", p.TimeMs, l.MaxTimeMs())
	}
	clk.advance(time.Millisecond)
	if _, err := g.Next(); !errors.Is(err, ErrTimeOverflow) {
		t.Fatalf("Next past the layout = %v, want ErrTimeOverflow", err)
	}
}

func TestNextN(t *testing.T) {
	clk := newFakeClock(t0)
	g := newGen(t, clk, nil)
	r, err := g.NextN(1000)
	if err != nil {
		t.Fatal(err)
	}
	if r.N != 1000 {
		t.Fatalf("N = %d, want 1000", r.N)
	}
	for i, id := range r.AppendTo(nil) {
		if p := mustDecode(t, DefaultLayout(), id); p != (Parts{TimeMs: t0, NodeID: 7, Seq: int64(i)}) {
			t.Fatalf("ID %d of the range: %+v", i, p)
		}
	}
	// The millisecond has 3096 left: a request for 4000 is short.
	r2, err := g.NextN(4000)
	if err != nil {
		t.Fatal(err)
	}
	if r2.N != 3096 || r2.First != r.Last()+1 {
		t.Fatalf("second range %+v, want 3096 IDs right after %d", r2, r.Last())
	}
	// The next call waits for the next millisecond and gets a full one.
	r3, err := g.NextN(5000)
	if err != nil {
		t.Fatal(err)
	}
	if p := mustDecode(t, DefaultLayout(), r3.First); r3.N != 4096 || p.TimeMs != t0+1 || p.Seq != 0 {
		t.Fatalf("third range %+v (%+v), want 4096 IDs from ms %d", r3, p, t0+1)
	}
	if id := mustNext(t, g); id <= r3.Last() {
		t.Fatalf("Next after NextN gave %d, not above %d", id, r3.Last())
	}
	for _, n := range []int{0, -1} {
		if _, err := g.NextN(n); err == nil {
			t.Fatalf("NextN(%d) succeeded", n)
		}
	}
}

func TestStop(t *testing.T) {
	clk := newFakeClock(t0)
	g := newGen(t, clk, func(c *Config) { c.FloorMs = t0 - 50 })
	if got := g.LastIssuedMs(); got != t0-50 {
		t.Fatalf("LastIssuedMs = %d, want the floor %d", got, t0-50)
	}
	mustNext(t, g)
	clk.advance(2 * time.Millisecond)
	mustNext(t, g)
	if got := g.Stop(); got != t0+2 {
		t.Fatalf("Stop = %d, want %d", got, t0+2)
	}
	if got := g.Stop(); got != t0+2 {
		t.Fatalf("second Stop = %d, want %d", got, t0+2)
	}
	if got := g.LastIssuedMs(); got != t0+2 {
		t.Fatalf("LastIssuedMs after Stop = %d, want %d", got, t0+2)
	}
	if _, err := g.Next(); !errors.Is(err, ErrFenced) {
		t.Fatalf("Next after Stop = %v, want ErrFenced", err)
	}
	if _, err := g.NextN(3); !errors.Is(err, ErrFenced) {
		t.Fatalf("NextN after Stop = %v, want ErrFenced", err)
	}

	unused := newGen(t, clk, func(c *Config) { c.FloorMs = t0 - 50 })
	if got := unused.Stop(); got != t0-50 {
		t.Fatalf("Stop before any ID = %d, want the floor %d", got, t0-50)
	}
}

func TestSystemClockDefault(t *testing.T) {
	cfg := DefaultConfig()
	cfg.NodeID = 3
	g, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	before := time.Now().UnixMilli()
	id := mustNext(t, g)
	after := time.Now().UnixMilli()
	// Both read the wall clock within this test; only a wall clock step
	// between New and here could separate them by more than a second.
	if ms := id.Time().UnixMilli(); ms < before-1000 || ms > after+1000 {
		t.Fatalf("ID time %d, wall clock %d..%d", ms, before, after)
	}
	if id.NodeID() != 3 {
		t.Fatalf("NodeID = %d, want 3", id.NodeID())
	}
}

func TestSystemClockSleepsAtLeast(t *testing.T) {
	c := NewSystemClock()
	for _, d := range []time.Duration{0, 50 * time.Microsecond, 700 * time.Microsecond, 4 * time.Millisecond} {
		start := c.Now()
		c.Sleep(d)
		if got := c.Now().Sub(start); got < d {
			t.Fatalf("Sleep(%v) returned after %v", d, got)
		}
	}
}

// clockedFence is a ClockedFence whose reading runs ahead of the
// generator's Clock by ahead, and which counts the calls of each kind.
type clockedFence struct {
	up              atomic.Bool
	clk             *fakeClock
	ahead           time.Duration
	valids, readers atomic.Int64
}

func (f *clockedFence) Valid() bool { f.valids.Add(1); return f.up.Load() }

func (f *clockedFence) ValidNow() (int64, bool) {
	f.readers.Add(1)
	return f.clk.Now().Add(f.ahead).UnixNano(), f.up.Load()
}

// TestClockedFenceStampsWithItsReading: with a ClockedFence the generator
// asks ValidNow alone on its way to an ID (not Valid, not its Clock) and
// stamps the ID with the reading it returns; a fence that says no fails the
// call at once. On a CoarseClock it asks Valid, and stamps from the clock.
func TestClockedFenceStampsWithItsReading(t *testing.T) {
	clk := newFakeClock(t0)
	f := &clockedFence{clk: clk, ahead: 5 * time.Millisecond}
	f.up.Store(true)
	g := newGen(t, clk, func(c *Config) { c.Fence = f })
	if p := mustDecode(t, DefaultLayout(), mustNext(t, g)); p.TimeMs != t0+5 {
		t.Fatalf("ID stamped %d, want the fence's reading %d (the clock reads %d)", p.TimeMs, t0+5, t0)
	}
	if r, err := g.NextN(3); err != nil || mustDecode(t, DefaultLayout(), r.First).TimeMs != t0+5 {
		t.Fatalf("NextN = %v, %v: want a range stamped %d", r, err, t0+5)
	}
	if f.valids.Load() != 0 || f.readers.Load() != 2 {
		t.Fatalf("Valid called %d times, ValidNow %d: want 0 and 2", f.valids.Load(), f.readers.Load())
	}
	f.up.Store(false)
	if _, err := g.Next(); !errors.Is(err, ErrFenced) {
		t.Fatalf("Next with the fence down = %v, want ErrFenced", err)
	}

	coarse := NewCoarseClock(time.Millisecond)
	defer coarse.Stop()
	f = &clockedFence{clk: clk, ahead: time.Hour}
	f.up.Store(true)
	g = newGen(t, coarse, func(c *Config) { c.Fence = f })
	if p := mustDecode(t, DefaultLayout(), mustNext(t, g)); p.TimeMs > time.Now().UnixMilli()+1 {
		t.Fatalf("ID on a CoarseClock stamped %d, an hour ahead: want the clock's reading", p.TimeMs)
	}
	if f.valids.Load() != 1 || f.readers.Load() != 0 {
		t.Fatalf("on a CoarseClock Valid called %d times, ValidNow %d: want 1 and 0", f.valids.Load(), f.readers.Load())
	}
}
