package faults

import (
	"cmp"
	"fmt"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/nodeid/nodeid/internal/faultclock"
)

// ClockFault is what a broker's clock does wrong (the broker's
// --debug-clock-rate and --debug-clock-steps, faultclock.Fault): its rate
// against real time (0: 1) and the steps of its real-time clock.
type ClockFault struct {
	Rate  float64
	Steps []faultclock.Step
}

// Args returns the broker flags that give it this clock.
func (c ClockFault) Args() []string {
	var args []string
	if c.Rate != 0 && c.Rate != 1 {
		args = append(args, "--debug-clock-rate", strconv.FormatFloat(c.Rate, 'g', -1, 64))
	}
	if len(c.Steps) > 0 {
		items := make([]string, len(c.Steps))
		for i, s := range c.Steps {
			items[i] = fmt.Sprintf("%v:%v", s.At, s.By)
		}
		args = append(args, "--debug-clock-steps", strings.Join(items, ","))
	}
	return args
}

// String says it in a run's notes: "clock rate 0.8, 12 real-time steps
// from 1.2s to 9.8s".
func (c ClockFault) String() string {
	if c.Args() == nil {
		return "a correct clock"
	}
	var b strings.Builder
	fmt.Fprintf(&b, "clock rate %v", max(c.Rate, 0))
	if len(c.Steps) > 0 {
		fmt.Fprintf(&b, ", %d real-time steps from %v to %v", len(c.Steps), c.Steps[0].At, c.Steps[len(c.Steps)-1].At)
	}
	return b.String()
}

// strobe is a strobe's shape: steps of ±by, strobeEvery apart, strobeSteps
// of them (an even number: the clock ends where it started), as Jepsen's
// clock nemesis strobes.
const (
	strobeEvery = 100 * time.Millisecond
	strobeSteps = 10
)

// DrawClockFault draws the clock of the broker started as generation gen of
// slot from seed, on a stream of its own (so BrokerParams' draws do not
// change): a rate from rates, and, within the first d of its life on its own
// clock, a bump forward (0.5 to 4 s), a bump back (the same range) and a
// strobe (±0.5 to 3 s, ten steps 100 ms apart), each at a random instant.
func DrawClockFault(seed uint64, slot, gen int, rates []float64, d time.Duration) ClockFault {
	rng := rand.New(rand.NewPCG(seed^0xc10c, uint64(slot)<<32|uint64(gen)))
	c := ClockFault{Rate: rates[rng.IntN(len(rates))]}
	amount := func(lo, hi time.Duration) time.Duration {
		return (lo + time.Duration(rng.Int64N(int64(hi-lo)))).Round(time.Millisecond)
	}
	at := func() time.Duration { return time.Duration(rng.Int64N(int64(d))).Round(time.Millisecond) }
	c.Steps = append(c.Steps,
		faultclock.Step{At: at(), By: amount(500*time.Millisecond, 4*time.Second)},
		faultclock.Step{At: at(), By: -amount(500*time.Millisecond, 4*time.Second)})
	strobeAt, by := at(), amount(500*time.Millisecond, 3*time.Second)
	for i := range strobeSteps {
		c.Steps = append(c.Steps, faultclock.Step{At: strobeAt + time.Duration(i)*strobeEvery, By: by})
		by = -by
	}
	slices.SortStableFunc(c.Steps, func(a, b faultclock.Step) int { return cmp.Compare(a.At, b.At) })
	return c
}
