package nodeid

import (
	"context"
	"fmt"
	"math"
	"sort"
	"time"
)

// ClockFault describes a faulty host clock: an oscillator that runs fast or
// slow (Rate), and a real-time clock that steps (Steps: NTP, a manual date,
// Jepsen's bumps). The zero value is a correct clock. Not for embedders: it,
// ClockStep and FaultClock serve nodeid-broker's --debug-clock-* flags and the
// fault suites, here because FaultClock implements suspendClock.
type ClockFault struct {
	// Offset shifts the wall clock and the host's real-time clock by a
	// fixed amount. Default 0.
	Offset time.Duration
	// Rate is how fast the host's clocks run against real time: all of
	// them (the monotonic clock the fence is kept on, sleeps, the wall and
	// real-time clocks) advance Rate seconds per real second, so 0.8 runs
	// 20 % slow and a sleep of d lasts d/Rate. 0 means 1. A holder is safe
	// while Rate > 1 - SafetyMargin/LeaseDuration (docs/evidence/design.md
	// section 6); a slower clock lets it issue after others may take its ID.
	Rate float64
	// Steps are steps of the host's real-time clock (CLOCK_REALTIME), at
	// instants on this clock since its creation, in any order: seen by a
	// claim's suspension check and by Host, not by the wall clock (read
	// once, as SystemClock's). Default none.
	Steps []ClockStep
}

// ClockStep is one step of the real-time clock: at At (on the faulty clock,
// since its creation) it jumps by By (negative: back). Not for embedders.
type ClockStep struct {
	At, By time.Duration
}

// Validate reports a Rate that is negative or not a finite number.
func (f ClockFault) Validate() error {
	if f.Rate < 0 || math.IsNaN(f.Rate) || math.IsInf(f.Rate, 0) {
		return fmt.Errorf("nodeid: clock rate %v: want a positive number (1: a correct clock, 0: the default, 1)", f.Rate)
	}
	return nil
}

// FaultClock is the system clock of a host with a faulty clock, as ClockFault
// says, for fault tests. Only its readings and sleeps are skewed: store
// requests' timeouts run on real time, which changes how long an attempt may
// take, never when the fence falls. Its methods are safe for concurrent use.
type FaultClock struct {
	real  Clock     // real time: its Now and Sleep
	start time.Time // real.Now() at creation
	rate  float64
	wall  time.Time       // start's wall reading plus Offset, without monotonic reading
	steps []ClockStep     // by At
	sums  []time.Duration // sums[i]: the real-time clock's shift once steps[i] passed
}

// NewFaultClock returns a FaultClock that starts now. It panics on a
// ClockFault that does not validate.
func NewFaultClock(f ClockFault) *FaultClock { return newFaultClock(f, SystemClock(0)) }

// newFaultClock returns a FaultClock on real, whose Now and Sleep are real
// time (tests pass a fake clock).
func newFaultClock(f ClockFault, real Clock) *FaultClock {
	if err := f.Validate(); err != nil {
		panic(err)
	}
	if f.Rate == 0 {
		f.Rate = 1
	}
	start := real.Now()
	c := &FaultClock{real: real, start: start, rate: f.Rate, wall: start.Round(0).Add(f.Offset)}
	c.steps = append([]ClockStep(nil), f.Steps...)
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
func (c *FaultClock) Now() time.Time {
	return c.start.Add(time.Duration(float64(c.real.Now().Sub(c.start)) * c.rate))
}

// Wall returns the wall clock: the creation's wall reading, plus Offset,
// advanced by Now. It does not step.
func (c *FaultClock) Wall() time.Time { return c.wall.Add(c.Now().Sub(c.start)) }

// Host returns the host's real-time clock: Wall plus the steps passed. It is
// what an application outside the node reads (node.Config.HostClock).
func (c *FaultClock) Host() time.Time { return c.hostAt(c.Now()) }

// hostAt returns the real-time clock at now, a reading of Now.
func (c *FaultClock) hostAt(now time.Time) time.Time {
	e := now.Sub(c.start)
	i := sort.Search(len(c.steps), func(i int) bool { return c.steps[i].At > e })
	t := c.wall.Add(e)
	if i > 0 {
		t = t.Add(c.sums[i-1])
	}
	return t
}

// suspendReading implements suspendClock with the real-time reading, as the
// system clock does: a step forward past the fence fences the claim early.
func (c *FaultClock) suspendReading(now time.Time) int64 { return c.hostAt(now).UnixNano() }

// realDuration returns the real duration of d on this clock, rounded up:
// a sleep that ends before d has passed on this clock would be one that
// wakes too early, again and again.
func (c *FaultClock) realDuration(d time.Duration) time.Duration {
	return time.Duration(math.Ceil(float64(d) / c.rate))
}

// Sleep waits for d on this clock (d/Rate of real time) or until ctx is
// done, and then returns ctx.Err().
func (c *FaultClock) Sleep(ctx context.Context, d time.Duration) error {
	return c.real.Sleep(ctx, c.realDuration(d))
}

// SleepOrWake is Sleep that also ends, returning nil, when wake is closed
// (on a real clock that cannot be woken, it is Sleep).
func (c *FaultClock) SleepOrWake(ctx context.Context, d time.Duration, wake <-chan struct{}) error {
	if w, ok := c.real.(wakeClock); ok {
		return w.SleepOrWake(ctx, c.realDuration(d), wake)
	}
	return c.Sleep(ctx, d)
}
