package nodeid

import (
	"context"
	"sync/atomic"
	"time"

	"github.com/nodeid/nodeid/internal/ctxtime"
	"github.com/nodeid/nodeid/snowflake"
)

// Clock is the time source of a Provider. Now is used only for durations (the
// monotonic fence, deadlines); Wall only for Snowflake reservations and the
// human-readable fields of a record. The default is the system clock.
type Clock interface {
	// Now returns the current time; only differences between its results are
	// used, so it should carry a monotonic reading.
	Now() time.Time
	// Wall returns the wall-clock time, which stamps Snowflake reservations:
	// a claim's generator must read it too (SnowflakeClock), and it should
	// not step back, or the reservations fall below the timestamps issued
	// and the generator waits for renewals that never catch up.
	Wall() time.Time
	// Sleep waits for d or until ctx is done, and then returns ctx.Err().
	Sleep(ctx context.Context, d time.Duration) error
}

// SystemClock returns the system clock, its wall clock shifted by wallOffset
// (zero in production; demo-broker's --debug-clock-offset sets it to test
// clock skew). Its wall clock is read once, now, and then advanced by the
// monotonic clock, like snowflake.NewSystemClock: it never steps (NTP steps
// after this call are not seen; slewing is). A fresh process reads the wall
// clock again; the Snowflake floor covers the difference between two
// processes' clocks.
func SystemClock(wallOffset time.Duration) Clock {
	start := time.Now()
	return &systemClock{start: start, startNs: start.UnixNano() + int64(wallOffset), offset: wallOffset}
}

// systemClock is SystemClock's Clock.
type systemClock struct {
	start   time.Time // wall and monotonic reading at creation
	startNs int64     // start's Unix nanoseconds plus offset: Wall at start
	offset  time.Duration
}

func (*systemClock) Now() time.Time { return time.Now() }

func (c *systemClock) Wall() time.Time {
	return c.start.Add(time.Since(c.start) + c.offset).Round(0)
}

// wallNsAt returns Wall, in Unix nanoseconds, at the instant now (a reading
// of Now) was taken, without reading the clock again.
func (c *systemClock) wallNsAt(now time.Time) int64 { return c.startNs + int64(now.Sub(c.start)) }

func (*systemClock) Sleep(ctx context.Context, d time.Duration) error { return ctxtime.Sleep(ctx, d) }

func (*systemClock) SleepOrWake(ctx context.Context, d time.Duration, wake <-chan struct{}) error {
	return ctxtime.SleepOrWake(ctx, d, wake)
}

// wakeClock is a Clock whose sleep can also end early when a channel closes,
// without a goroutine: the system clock (a select) and the simulation's (its
// event loop).
type wakeClock interface {
	Clock
	// SleepOrWake is Sleep that also ends, returning nil, when wake is
	// closed.
	SleepOrWake(ctx context.Context, d time.Duration, wake <-chan struct{}) error
}

// goClock is a Clock that runs the Provider's goroutines itself: the
// simulation's, where each is a coroutine that runs only while the others
// wait, so that every wait of one goroutine for another (waitDone) is a sleep
// the clock schedules. On any other Clock the Provider uses the go statement
// and a select.
type goClock interface {
	wakeClock
	// Go runs f on a goroutine of the clock's.
	Go(f func())
}

// goRun runs f on a goroutine of its own: the Clock's (goClock), or a new one.
func (p *Provider) goRun(f func()) {
	if gc, ok := p.clock.(goClock); ok {
		gc.Go(f)
		return
	}
	go f()
}

// withTimeout returns ctx ended d from now on the Provider's clock: on a
// goClock, a sleep of the clock's ends it (cause context.DeadlineExceeded),
// so that a request's StoreTimeout runs on the simulation's clock, not on
// real time; elsewhere it is context.WithTimeout.
func (p *Provider) withTimeout(ctx context.Context, d time.Duration) (context.Context, context.CancelFunc) {
	if _, ok := p.clock.(goClock); !ok {
		return context.WithTimeout(ctx, d)
	}
	tctx, cancel := context.WithCancelCause(ctx)
	p.goRun(func() {
		if p.clock.Sleep(tctx, d) == nil {
			cancel(context.DeadlineExceeded)
		}
	})
	return tctx, func() { cancel(context.Canceled) }
}

// waitDone waits until done is closed (nil), or ctx ends (its error): on a
// goClock asleep on it, woken by done; elsewhere in a select.
func (p *Provider) waitDone(ctx context.Context, done <-chan struct{}) error {
	if gc, ok := p.clock.(goClock); ok {
		for {
			select {
			case <-done:
				return nil
			default:
			}
			if err := gc.SleepOrWake(ctx, time.Hour, done); err != nil {
				return err
			}
		}
	}
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// goEach runs f(0) ... f(n-1) on at most limit goroutines of goRun's, and
// waits until all have returned.
func (p *Provider) goEach(n, limit int, f func(i int)) {
	var next atomic.Int64
	dones := make([]chan struct{}, min(n, limit))
	for w := range dones {
		dones[w] = make(chan struct{})
		p.goRun(func() {
			defer close(dones[w])
			for i := int(next.Add(1) - 1); i < n; i = int(next.Add(1) - 1) {
				f(i)
			}
		})
	}
	for _, done := range dones {
		_ = p.waitDone(context.Background(), done)
	}
}

// sleepOrWake sleeps d on clock, or less when wake delivers (a value, which
// it takes, or its close); ctx's error when ctx ends first. On a Clock that
// is no wakeClock a goroutine ends the sleep at the wake.
func sleepOrWake(ctx context.Context, clock Clock, d time.Duration, wake <-chan struct{}) error {
	if wake == nil {
		return clock.Sleep(ctx, d)
	}
	if wc, ok := clock.(wakeClock); ok {
		return wc.SleepOrWake(ctx, d, wake)
	}
	sctx, cancel := context.WithCancel(ctx)
	defer cancel()
	go func() {
		select {
		case <-wake:
			cancel()
		case <-sctx.Done():
		}
	}()
	if err := clock.Sleep(sctx, d); err != nil && ctx.Err() != nil {
		return err
	}
	return nil
}

// SuspendReading implements SuspendClock with the real-time reading that
// time.Now takes anyway, which keeps counting while the host is suspended.
func (*systemClock) SuspendReading(now time.Time) int64 { return now.UnixNano() }

// SuspendClock is a Clock whose readings (Now) carry a second reading, in
// nanoseconds, that keeps counting while the host is suspended, where the
// monotonic one does not: a claim fences on both, so that after a VM resumes
// it stops issuing at once (docs/evidence/design.md section 5). The system
// clock is one; its second reading is the real-time clock, which time.Now
// reads anyway: CLOCK_BOOTTIME would not step, but costs a system call (260 ns
// against 50 ns) on every ID.
type SuspendClock interface {
	Clock
	// SuspendReading returns the second reading taken with now, a result
	// of Now, without reading the clock again.
	SuspendReading(now time.Time) int64
}

// SnowflakeClock returns c's wall clock as the clock of a snowflake.Generator:
// the generator of a claim must read the clock its reservations were stamped
// with (Clock.Wall), or a step of one against the other stalls it. Its Sleep
// is the generator's precise one on the system clock, c.Sleep otherwise.
func SnowflakeClock(c Clock) snowflake.Clock {
	if _, ok := c.(*systemClock); ok {
		return generatorClock{wall: c, sleep: preciseSleep.Sleep}
	}
	return generatorClock{wall: c, sleep: func(d time.Duration) { _ = c.Sleep(context.Background(), d) }}
}

// preciseSleep lends its Sleep to SnowflakeClock on the system clock.
var preciseSleep = snowflake.NewSystemClock()

// generatorClock is SnowflakeClock's snowflake.Clock.
type generatorClock struct {
	wall  Clock
	sleep func(time.Duration)
}

func (g generatorClock) Now() time.Time        { return g.wall.Wall() }
func (g generatorClock) Sleep(d time.Duration) { g.sleep(d) }
