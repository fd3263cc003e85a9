package snowflake

import (
	"runtime"
	"time"
)

// A Clock is the generator's source of time. Tests inject a fake one to drive
// time by hand; nodeid's demo shifts one to simulate a skewed host.
type Clock interface {
	// Now returns the current time; the generator uses its Unix
	// milliseconds. It must be safe for concurrent use.
	Now() time.Time
	// Sleep pauses the calling goroutine for at least d. The generator
	// calls it from one goroutine at a time: to wait for the next
	// millisecond when the sequence is used up (d under 1 ms), to wait out a
	// clock behind the floor, and between polls of the reservation.
	Sleep(d time.Duration)
}

// NewSystemClock returns the default Clock: the wall clock read once, now,
// plus the monotonic clock since then. It never steps: NTP corrections and
// manual changes of the wall clock after this call are not seen, and the
// clock only drifts from true time by the monotonic clock's rate error (and
// stands still while the host is suspended). A fresh process reads the wall
// clock again, so a successor's clock can still disagree with its
// predecessor's; the floor (Config.FloorMs) covers that.
//
// Its Sleep is precise to a few microseconds: on Linux it sleeps with
// nanosleep and spins only the last 0.2 ms, so a generator waiting for the
// next millisecond uses about a third of a core at most; elsewhere it spins
// (yielding the processor between clock reads) for the last 1.5 to 3 ms of a
// wait, all of a wait for the next millisecond.
//
// Reading it costs one monotonic clock read. New uses a fresh one when
// Config.Clock is nil, and skips the interface call for it.
func NewSystemClock() Clock { return newSystemClock() }

type systemClock struct {
	start   time.Time // wall and monotonic reading at creation
	startNs int64     // start as Unix nanoseconds
}

func newSystemClock() *systemClock {
	now := time.Now()
	return &systemClock{start: now, startNs: now.UnixNano()}
}

// Now implements Clock.
func (c *systemClock) Now() time.Time { return c.start.Add(time.Since(c.start)) }

// Sleep implements Clock.
func (c *systemClock) Sleep(d time.Duration) { sleepPrecise(d) }

// coarseSleepMargin is how much earlier than the end a time.Sleep must be
// asked to return: the runtime's timers can fire up to about 1.1 ms late
// (epoll waits in whole milliseconds).
const coarseSleepMargin = 1500 * time.Microsecond

// spinMargin is the last stretch of a wait, which is spun (reading the clock,
// yielding the processor) rather than slept. A nanosleep wakes about 80 us
// late, and now and then much later; waking 200 us early and spinning kept a
// saturated generator at 99.7 to 100% of its limit in the benchmarks, where
// sleeping to the end dipped to 99.2%, for 0.1 core more.
const spinMargin = 200 * time.Microsecond

// sleepPrecise sleeps for at least d and not much longer: the bulk with
// time.Sleep, then with a precise OS sleep where there is one, and the last
// spinMargin (or all of it without a precise sleep) spinning.
func sleepPrecise(d time.Duration) {
	if d <= 0 {
		return
	}
	end := time.Now().Add(d)
	if d > 2*coarseSleepMargin {
		time.Sleep(d - coarseSleepMargin)
	}
	if time.Until(end) > spinMargin {
		osSleepUntil(end.Add(-spinMargin))
	}
	for time.Now().Before(end) {
		runtime.Gosched()
	}
}
