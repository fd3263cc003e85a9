// Package faultclock is the clock of a host whose clocks are wrong: an
// oscillator that runs fast or slow, and a real-time clock that steps (NTP, a
// manual date, Jepsen's bumps). It serves nodeid-broker's --debug-clock-*
// flags and the fault suites, which need the fault inside the process:
// libfaketime does not reach a Go binary, which reads the clock through the
// vDSO. It is no part of nodeid's API.
package faultclock

import (
	"context"
	"fmt"
	"math"
	"sort"
	"time"
)

// Fault describes a faulty host clock. The zero value is a correct clock.
type Fault struct {
	// Offset shifts the wall clock and the host's real-time clock by a
	// fixed amount. Default 0.
	Offset time.Duration
	// Rate is how fast the host's clocks run against real time: all of
	// them (the monotonic clock a claim's fence is kept on, sleeps, the wall
	// and real-time clocks) advance Rate seconds per real second, so 0.8
	// runs 20 % slow and a sleep of d lasts d/Rate. 0 means 1. A holder is
	// safe while Rate > 1 - SafetyMargin/LeaseDuration
	// (docs/evidence/design.md section 6); a slower clock lets it issue
	// after others may take its ID.
	Rate float64
	// Steps are steps of the host's real-time clock (CLOCK_REALTIME), at
	// instants on this clock since its creation, in any order: seen by a
	// claim's suspension check and by Host, not by the wall clock (read
	// once, as nodeid.SystemClock's). Default none.
	Steps []Step
}

// Step is one step of the real-time clock: at At (on the faulty clock, since
// its creation) it jumps by By (negative: back).
type Step struct {
	At, By time.Duration
}

// Validate reports a Rate that is negative or not a finite number.
func (f Fault) Validate() error {
	if f.Rate < 0 || math.IsNaN(f.Rate) || math.IsInf(f.Rate, 0) {
		return fmt.Errorf("faultclock: clock rate %v: want a positive number (1: a correct clock, 0: the default, 1)", f.Rate)
	}
	return nil
}

// Real is the real time a Clock runs against: nodeid.SystemClock(0) in a
// broker, a fake clock in tests.
type Real interface {
	Now() time.Time
	Sleep(ctx context.Context, d time.Duration) error
}

// Clock is a nodeid.Clock and nodeid.SuspendClock of a host with a faulty
// clock, as its Fault says. Only its readings and sleeps are skewed: store
// requests' timeouts run on real time, which changes how long an attempt may
// take, never when the fence falls. Its methods are safe for concurrent use.
type Clock struct {
	real  Real
	start time.Time // real.Now() at creation
	rate  float64
	wall  time.Time       // start's wall reading plus Offset, without monotonic reading
	steps []Step          // by At
	sums  []time.Duration // sums[i]: the real-time clock's shift once steps[i] passed
}

// New returns a Clock on real that starts now. It panics on a Fault that does
// not validate.
func New(f Fault, real Real) *Clock {
	if err := f.Validate(); err != nil {
		panic(err)
	}
	if f.Rate == 0 {
		f.Rate = 1
	}
	start := real.Now()
	c := &Clock{real: real, start: start, rate: f.Rate, wall: start.Round(0).Add(f.Offset)}
	c.steps = append([]Step(nil), f.Steps...)
	sort.SliceStable(c.steps, func(i, j int) bool { return c.steps[i].At < c.steps[j].At })
	var sum time.Duration
	for _, s := range c.steps {
		sum += s.By
		c.sums = append(c.sums, sum)
	}
	return c
}

// Now returns the monotonic reading: the real time since creation times
// Rate, after the creation's reading.
func (c *Clock) Now() time.Time {
	return c.start.Add(time.Duration(float64(c.real.Now().Sub(c.start)) * c.rate))
}

// Wall returns the wall clock: the creation's wall reading, plus Offset,
// advanced by Now. It does not step.
func (c *Clock) Wall() time.Time { return c.wall.Add(c.Now().Sub(c.start)) }

// Host returns the host's real-time clock: Wall plus the steps passed. It is
// what an application outside the node reads (node.Config.HostClock).
func (c *Clock) Host() time.Time { return c.hostAt(c.Now()) }

// hostAt returns the real-time clock at now, a reading of Now.
func (c *Clock) hostAt(now time.Time) time.Time {
	e := now.Sub(c.start)
	i := sort.Search(len(c.steps), func(i int) bool { return c.steps[i].At > e })
	t := c.wall.Add(e)
	if i > 0 {
		t = t.Add(c.sums[i-1])
	}
	return t
}

// SuspendReading is the real-time reading at now, as the system clock's is
// (nodeid.SuspendClock): a step forward past the fence fences a claim early.
func (c *Clock) SuspendReading(now time.Time) int64 { return c.hostAt(now).UnixNano() }

// realDuration returns the real duration of d on this clock, rounded up:
// a sleep that ends before d has passed on this clock would be one that
// wakes too early, again and again.
func (c *Clock) realDuration(d time.Duration) time.Duration {
	return time.Duration(math.Ceil(float64(d) / c.rate))
}

// Sleep waits for d on this clock (d/Rate of real time) or until ctx is
// done, and then returns ctx.Err().
func (c *Clock) Sleep(ctx context.Context, d time.Duration) error {
	return c.real.Sleep(ctx, c.realDuration(d))
}

// SleepOrWake is Sleep that also ends, returning nil, when wake is closed
// (on a real clock that cannot be woken, it is Sleep).
func (c *Clock) SleepOrWake(ctx context.Context, d time.Duration, wake <-chan struct{}) error {
	type waker interface {
		SleepOrWake(ctx context.Context, d time.Duration, wake <-chan struct{}) error
	}
	if w, ok := c.real.(waker); ok {
		return w.SleepOrWake(ctx, c.realDuration(d), wake)
	}
	return c.Sleep(ctx, d)
}
