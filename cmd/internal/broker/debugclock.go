package broker

import (
	"fmt"
	"strings"
	"time"

	"github.com/nodeid/nodeid/cmd/internal/envflag"
	"github.com/nodeid/nodeid/internal/faultclock"
	"github.com/nodeid/nodeid/node"
	"github.com/nodeid/nodeid/nodeid"
)

// The broker's fault clock counts suspended time as the system clock does:
// its real-time steps reach the claim's fence.
var _ nodeid.SuspendClock = (*faultclock.Clock)(nil)

// debugClock is what the --debug-clock-* flags say: a faulty clock for
// fault tests (internal/faultclock). The zero value is the system clock.
type debugClock struct {
	offset time.Duration
	rate   float64
	steps  string
}

// bind defines the flags on f.
func (d *debugClock) bind(f *envflag.Set) {
	f.DurationVar(&d.offset, "debug-clock-offset", 0, "testing only: shift this broker's clocks (its wall clock: Snowflake timestamps and reservations; and the host's clock it assumes a supervised child or id-file reader stamps IDs with) by this much, to simulate a machine whose clock is off")
	f.Float64Var(&d.rate, "debug-clock-rate", 1, "testing only: run this broker's clocks (the monotonic clock its fence is kept on, its sleeps, its wall clock) at this rate against real time, to simulate a machine whose clock runs fast or slow (0.8: 20% slow). Safe while above 1 - safety-margin/lease-duration (docs/evidence/design.md section 6)")
	f.StringVar(&d.steps, "debug-clock-steps", "", "testing only: step this broker's host real-time clock (which its suspension check and a supervised child or id-file reader read; not its wall clock) by BY at AT after start, on its own clock: a comma-separated list of AT:BY, e.g. 5s:+2s,9s:-2s")
}

// apply sets the node's clocks from the flags (the system clock when none is
// set); src names a flag as the user set it.
func (d *debugClock) apply(c *node.Config, src func(string) string) error {
	steps, err := parseClockSteps(d.steps)
	if err != nil {
		return envflag.Usagef("%s %q: %v", src("debug-clock-steps"), d.steps, err)
	}
	fault := faultclock.Fault{Offset: d.offset, Rate: d.rate, Steps: steps}
	if err := fault.Validate(); err != nil || d.rate == 0 {
		return envflag.Usagef("%s %v: want a positive rate (1: a correct clock)", src("debug-clock-rate"), d.rate)
	}
	if d.rate == 1 && len(steps) == 0 {
		c.Provider.Clock = nodeid.SystemClock(d.offset)
		if off := d.offset; off != 0 {
			c.HostClock = func() time.Time { return time.Now().Add(off) } // the machine's clock, as a child reads it
		}
		return nil
	}
	fc := faultclock.New(fault, nodeid.SystemClock(0))
	c.Provider.Clock, c.HostClock = fc, fc.Host
	return nil
}

// parseClockSteps parses "AT:BY,AT:BY" (Go durations; BY may be negative).
func parseClockSteps(s string) ([]faultclock.Step, error) {
	var steps []faultclock.Step
	if s == "" {
		return nil, nil
	}
	for _, item := range strings.Split(s, ",") {
		at, by, ok := strings.Cut(strings.TrimSpace(item), ":")
		if !ok {
			return nil, fmt.Errorf("step %q: want AT:BY, e.g. 5s:+2s", item)
		}
		a, err := time.ParseDuration(at)
		if err != nil || a < 0 {
			return nil, fmt.Errorf("step %q: AT %q: want a duration since start, e.g. 5s", item, at)
		}
		b, err := time.ParseDuration(strings.TrimPrefix(by, "+"))
		if err != nil {
			return nil, fmt.Errorf("step %q: BY %q: want a duration, e.g. +2s or -500ms", item, by)
		}
		steps = append(steps, faultclock.Step{At: a, By: b})
	}
	return steps, nil
}
