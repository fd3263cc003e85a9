package snowflake

import (
	"runtime"
	"sync"
	"sync/atomic"
	"time"
)

// fakeClock is a Clock whose time moves only when a test sets it or when
// Sleep is called: Sleep(d) advances it by d at once. A generator's waits
// therefore take no real time and their lengths can be checked exactly.
type fakeClock struct {
	mu    sync.Mutex
	now   time.Time
	slept time.Duration // total of all Sleep calls
	naps  int           // number of Sleep calls

	sleeping    atomic.Int32 // Sleep calls in progress
	maxSleeping atomic.Int32 // the most ever in progress at once
	yield       bool         // linger in Sleep, to let other callers pile up

	onSleep func(d time.Duration) // called (without the lock) before advancing
}

func newFakeClock(unixMs int64) *fakeClock {
	return &fakeClock{now: time.UnixMilli(unixMs)}
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *fakeClock) Sleep(d time.Duration) {
	n := c.sleeping.Add(1)
	for {
		m := c.maxSleeping.Load()
		if n <= m || c.maxSleeping.CompareAndSwap(m, n) {
			break
		}
	}
	if c.yield {
		// Widen the window in which a second waiter, if the generator let
		// one through, would be seen sleeping too.
		for range 20 {
			runtime.Gosched()
		}
	}
	if c.onSleep != nil {
		c.onSleep(d)
	}
	c.mu.Lock()
	c.now = c.now.Add(d)
	c.slept += d
	c.naps++
	c.mu.Unlock()
	c.sleeping.Add(-1)
}

// set moves the clock to unixMs plus extra.
func (c *fakeClock) set(unixMs int64, extra time.Duration) {
	c.mu.Lock()
	c.now = time.UnixMilli(unixMs).Add(extra)
	c.mu.Unlock()
}

func (c *fakeClock) advance(d time.Duration) {
	c.mu.Lock()
	c.now = c.now.Add(d)
	c.mu.Unlock()
}

func (c *fakeClock) sleptTotal() time.Duration {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.slept
}
