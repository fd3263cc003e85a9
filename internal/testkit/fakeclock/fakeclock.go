// Package fakeclock is a manually advanced clock for tests: time moves only when
// the test calls Advance, and sleepers wake in deadline order.
package fakeclock

import (
	"context"
	"sort"
	"sync"
	"time"
)

// Clock is a fake clock. Now and Wall move together; Wall is Now plus an offset
// (clock skew). It is safe for concurrent use.
type Clock struct {
	mu      sync.Mutex
	now     time.Time
	offset  time.Duration
	sleeper []*sleeper
	changed chan struct{} // closed and replaced whenever the sleepers change
}

type sleeper struct {
	at   time.Time
	wake chan struct{}
}

// New returns a clock at start.
func New(start time.Time) *Clock { return &Clock{now: start, changed: make(chan struct{})} }

// Now returns the fake time.
func (c *Clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

// Wall returns the fake time plus the wall offset.
func (c *Clock) Wall() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now.Add(c.offset)
}

// SetWallOffset shifts the wall clock (not Now) by d from the fake time.
func (c *Clock) SetWallOffset(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.offset = d
}

// Sleep blocks until the clock is advanced by d or ctx is done.
func (c *Clock) Sleep(ctx context.Context, d time.Duration) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	c.mu.Lock()
	if d <= 0 {
		c.mu.Unlock()
		return nil
	}
	s := &sleeper{at: c.now.Add(d), wake: make(chan struct{})}
	c.sleeper = append(c.sleeper, s)
	c.notifyLocked()
	c.mu.Unlock()
	select {
	case <-s.wake:
		return nil
	case <-ctx.Done():
		c.mu.Lock()
		c.removeLocked(s)
		c.mu.Unlock()
		return ctx.Err()
	}
}

// Advance moves the clock forward by d, waking every sleeper due by then in
// deadline order.
func (c *Clock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	target := c.now.Add(d)
	sort.SliceStable(c.sleeper, func(i, j int) bool { return c.sleeper[i].at.Before(c.sleeper[j].at) })
	for len(c.sleeper) > 0 && !c.sleeper[0].at.After(target) {
		s := c.sleeper[0]
		c.sleeper = c.sleeper[1:]
		c.now = s.at
		close(s.wake)
	}
	c.now = target
	c.notifyLocked()
}

// Sleepers returns how many goroutines are sleeping.
func (c *Clock) Sleepers() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.sleeper)
}

// WaitForSleepers blocks until at least n goroutines sleep, or ctx is done.
func (c *Clock) WaitForSleepers(ctx context.Context, n int) error {
	for {
		c.mu.Lock()
		count, changed := len(c.sleeper), c.changed
		c.mu.Unlock()
		if count >= n {
			return nil
		}
		select {
		case <-changed:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// NextWake returns the earliest sleeper deadline, and false if none sleeps.
func (c *Clock) NextWake() (time.Time, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.sleeper) == 0 {
		return time.Time{}, false
	}
	min := c.sleeper[0].at
	for _, s := range c.sleeper[1:] {
		if s.at.Before(min) {
			min = s.at
		}
	}
	return min, true
}

func (c *Clock) removeLocked(s *sleeper) {
	for i, x := range c.sleeper {
		if x == s {
			c.sleeper = append(c.sleeper[:i], c.sleeper[i+1:]...)
			c.notifyLocked()
			return
		}
	}
}

func (c *Clock) notifyLocked() {
	close(c.changed)
	c.changed = make(chan struct{})
}
