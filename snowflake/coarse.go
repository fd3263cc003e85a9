package snowflake

import (
	"fmt"
	"sync"
	"sync/atomic"
	"time"
)

// A CoarseClock is a Clock that a goroutine of its own reads once every
// resolution, so that reading it costs one atomic load instead of a monotonic
// clock read. Where a clock read is slow (25 ns under the KVM hypervisor of
// the benchmarks, most of what an ID costs) this makes Next about three times
// cheaper; see the README's figures.
//
// What it costs: its timestamps lag real time by up to the resolution, plus
// the goroutine's wake-up latency (about 0.1 ms on Linux with nanosleep),
// plus however long the goroutine waits for a processor: when every
// GOMAXPROCS thread is busy, up to the Go scheduler's 10 ms time slice. A
// Generator bounds the last case for its own busy callers by reading the
// precise clock at every 64th sequence number; a caller issuing few IDs in
// a process whose processors are all busy with other work may still see
// the lag. While in use the goroutine wakes once per resolution (3 to 4 % of
// a core at 1 ms on the benchmark VM); after 100 ms without a
// read it parks and costs nothing, reads are then precise, and the first
// one wakes it. Uniqueness depends on none of this: a lagging clock only
// makes timestamps lower, and the generator's own last ID, the floor and
// the reservation bound them as for any clock.
//
// A Generator given a CoarseClock reads it on the way to an ID and reads the
// precise clock underneath for its first ID, at every 64th sequence number
// and whenever it must wait (the millisecond's sequence is used up, the clock
// is behind, the reservation is reached), so a saturated generator still
// moves to the next millisecond on time.
//
// Like NewSystemClock's clock it is the wall clock read once plus the
// monotonic clock since then, and never steps. Stop ends the goroutine; a
// stopped CoarseClock reads the monotonic clock at every call, like the
// system clock, so a generator that outlives it keeps working.
type CoarseClock struct {
	cached atomic.Int64 // base's reading at the last tick, Unix ns; 0 while parked or stopped
	used   atomic.Bool  // cached was used since the last tick
	base   Clock        // the precise clock it samples: a *systemClock but in tests

	wake     chan struct{} // buffered (1): a read of a parked clock wakes the goroutine
	stopOnce sync.Once
	stop     chan struct{} // closed by Stop
	done     chan struct{} // closed when the goroutine has returned
}

// parkAfter is how long a CoarseClock ticks without being read before its
// goroutine parks.
const parkAfter = 100 * time.Millisecond

// NewCoarseClock starts a CoarseClock that is read every resolution, on
// multiples of resolution since the Unix epoch (so at 1 ms, just after each
// millisecond starts). The resolution must be positive; 1 ms, the unit of a
// timestamp, is the natural choice. Call Stop when done with it.
func NewCoarseClock(resolution time.Duration) *CoarseClock {
	if resolution <= 0 {
		panic(fmt.Sprintf("snowflake: NewCoarseClock: resolution %v is not positive", resolution))
	}
	c := &CoarseClock{
		base: newSystemClock(),
		wake: make(chan struct{}, 1),
		stop: make(chan struct{}),
		done: make(chan struct{}),
	}
	c.cached.Store(c.base.Now().UnixNano())
	go c.run(resolution)
	return c
}

// run stores a fresh reading at every tick until Stop, and parks while the
// clock is not read.
func (c *CoarseClock) run(resolution time.Duration) {
	defer close(c.done)
	lastUsed := c.base.Now()
	for {
		now := c.base.Now()
		if c.used.Swap(false) {
			lastUsed = now
		} else if now.Sub(lastUsed) >= parkAfter {
			if !c.park() {
				return
			}
			lastUsed = c.base.Now()
			continue
		}
		c.cached.Store(now.UnixNano())
		next := now.Truncate(resolution).Add(resolution) // in the base's time
		if c.sleepUntil(time.Now().Add(next.Sub(now))) {
			return
		}
	}
}

// park makes reads precise and waits for one to wake the clock (true) or for
// Stop (false). A read that saw the clock parked just before it is woken
// leaves a stale wake-up behind, which only costs one idle spell of ticks.
func (c *CoarseClock) park() bool {
	c.cached.Store(0)
	select {
	case <-c.wake:
		return true
	case <-c.stop:
		return false
	}
}

// sleepUntil sleeps until end or until Stop, and reports whether Stop came:
// the bulk of a long sleep on a timer that Stop interrupts, the last few
// milliseconds (all of a 1 ms tick) precisely.
func (c *CoarseClock) sleepUntil(end time.Time) (stopped bool) {
	if d := time.Until(end); d > 2*coarseSleepMargin {
		t := time.NewTimer(d - coarseSleepMargin)
		select {
		case <-c.stop:
			t.Stop()
			return true
		case <-t.C:
		}
	}
	tickSleepUntil(end)
	select {
	case <-c.stop:
		return true
	default:
		return false
	}
}

// nowNs returns reading and marks the clock used.
func (c *CoarseClock) nowNs() int64 {
	ns := c.reading()
	c.markUsed()
	return ns
}

// reading returns the cached reading in Unix nanoseconds, or, while the
// clock is parked (which it wakes) or stopped, a precise one. It does not
// mark the clock used: a Generator does that once per millisecond it starts.
func (c *CoarseClock) reading() int64 {
	if ns := c.cached.Load(); ns != 0 {
		return ns
	}
	return c.wakeAndRead()
}

// markUsed notes that the cached reading was used, which keeps the clock
// ticking. A Generator calls it once per millisecond it starts, not per read.
func (c *CoarseClock) markUsed() {
	if !c.used.Load() { // one write per tick, not per read
		c.used.Store(true)
	}
}

// wakeAndRead asks a parked clock's goroutine to tick again and returns a
// precise reading.
func (c *CoarseClock) wakeAndRead() int64 {
	select {
	case c.wake <- struct{}{}:
	default: // already asked, or stopped
	}
	return c.base.Now().UnixNano()
}

// Now implements Clock: the time at the last tick (while parked or
// stopped, now).
func (c *CoarseClock) Now() time.Time { return time.Unix(0, c.nowNs()) }

// Sleep implements Clock, as the system clock's Sleep does.
func (c *CoarseClock) Sleep(d time.Duration) { c.base.Sleep(d) }

// Stop ends the clock's goroutine and returns once it has (within a few
// milliseconds). Later reads are precise. Stop may be called more than once.
func (c *CoarseClock) Stop() {
	c.stopOnce.Do(func() {
		close(c.stop)
		<-c.done
		c.cached.Store(0)
	})
}
