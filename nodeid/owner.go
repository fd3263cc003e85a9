package nodeid

// The claim's owner. One goroutine at a time holds a claim's state (its
// last record and ETag, the writes pending, the read schedule): the renewal
// loop (renewLoop) from the take until it ends, then Close, which waits for
// it. A store request runs on a goroutine of its own that holds no state: it
// does the I/O and hands the answer back (request; sendRead), and the owner
// judges it. Every wait of the owner is serve, which meanwhile sends the
// reads as they fall due and judges their answers, and which a read that
// saw the ETag change ends: no sleep of the owner outlasts what a read saw.
// Other goroutines read the snapshot, and only lower the fence (Valid's
// fold, end).
//
// The owner sleeps on the Clock only while no request is in flight; while
// one is, it waits for that request's answer, and a read or a write that
// falls due meanwhile is sent after it: at most StoreTimeout later (a
// renewal attempt's bound), so a read is sent at most PollInterval +
// StoreTimeout after the last, which Validate keeps below Window -
// SafetyMargin.

import (
	"context"
	"time"
)

// readSchedule is the owner's plan of reads, in read mode (keepalive.go).
type readSchedule struct {
	due      time.Time   // when the next read is sent
	inFlight bool        // a read was sent and its answer is not judged yet
	answers  chan polled // capacity 1: the answer of the read in flight
}

// pause waits d, or less when a read saw the ETag change: the owner writes
// then (a renewal round's and jeopardy's wait between attempts).
func (c *Claim) pause(ctx context.Context, d time.Duration) error {
	return c.serve(ctx, c.p.clock.Now().Add(d), nil)
}

// request runs io, one store request, on a goroutine of its own and serves
// until it returns, whatever ctx does: the owner judges every answer (a
// write's outcome is never left unknown by a wait that gave up on it). io
// must end when ctx does.
func (c *Claim) request(ctx context.Context, io func()) {
	done := make(chan struct{})
	c.p.goRun(func() {
		io()
		close(done)
		c.poke()
	})
	_ = c.serve(ctx, time.Time{}, done)
}

// serve is every wait of the owner. With done nil it returns when until has
// passed or a read saw the ETag change (nil), or when ctx ends (its error);
// with done, when done is closed (nil). Meanwhile, while the owner runs the
// read schedule, it judges each read's answer, sends the next when it falls
// due, and ends a claim whose fence fell for good.
func (c *Claim) serve(ctx context.Context, until time.Time, done <-chan struct{}) error {
	for {
		c.takeAnswer()
		switch {
		case done != nil:
			if closed(done) {
				return nil
			}
		case ctx.Err() != nil:
			return ctx.Err()
		case c.woken:
			c.woken = false
			return nil
		case !c.p.clock.Now().Before(until):
			return nil
		}
		if r := c.reads; r != nil && ctx.Err() == nil {
			if c.p.rules.fellForGood(c) {
				c.lose(lostf("node %d: its fence fell (no read or write proved the lease for Window - SafetyMargin, %v) and LossGrace is NoLossGrace: the first fence is final",
					c.id, c.p.t.Window-c.p.t.SafetyMargin))
				continue
			}
			if !r.inFlight && !c.p.clock.Now().Before(r.due) {
				c.sendRead(ctx)
			}
		}
		c.sleep(ctx, until, done)
	}
}

// sleep is one wait of serve: for the next event while a request is in
// flight (the owner is then no sleeper on the Clock, so a test that waits
// for every loop to sleep sees it settled only between requests), else on
// the Clock until until, the next read or the fence's final fall, or the
// next event.
func (c *Claim) sleep(ctx context.Context, until time.Time, done <-chan struct{}) {
	r := c.reads
	if done != nil || (r != nil && r.inFlight) {
		if done != nil {
			ctx = context.Background()
		}
		c.awaitSignal(ctx)
		return
	}
	if r != nil {
		until = minTime(until, r.due)
		if fall, ok := c.p.rules.finalFall(c); ok {
			until = minTime(until, fall)
		}
	}
	_ = sleepOrWake(ctx, c.p.clock, until.Sub(c.p.clock.Now()), c.signal)
}

// awaitSignal waits for the next poke, or until ctx ends: asleep on a
// goClock (which schedules every wait), else in a select.
func (c *Claim) awaitSignal(ctx context.Context) {
	if gc, ok := c.p.clock.(goClock); ok {
		_ = gc.SleepOrWake(ctx, time.Hour, c.signal)
		return
	}
	select {
	case <-c.signal:
	case <-ctx.Done():
	}
}

// poke tells the owner that a request answered.
func (c *Claim) poke() {
	select {
	case c.signal <- struct{}{}:
	default: // a poke is pending already
	}
}

// sendRead sends the next read, on a goroutine of its own.
func (c *Claim) sendRead(ctx context.Context) {
	r, read := c.reads, c.newRead()
	r.inFlight = true
	c.p.goRun(func() {
		r.answers <- read(ctx)
		c.poke()
	})
}

// takeAnswer judges the answer of the read in flight, if it came, and plans
// the next read: PollInterval after its send, a quarter of that after a
// failed read, so that one failed read does not let the fence fall. A
// changed ETag wakes the owner.
func (c *Claim) takeAnswer() {
	r := c.reads
	if r == nil || !r.inFlight {
		return
	}
	select {
	case a := <-r.answers:
		r.inFlight = false
		every, wake := afterPoll(c.judgeRead(a), c.p.t.PollInterval)
		r.due, c.woken = a.sent.Add(every), c.woken || wake
	default:
	}
}

// stopReads ends the read schedule when the loop ends: it waits for the
// read in flight, whose context ended with the loop's.
func (c *Claim) stopReads() {
	for r := c.reads; r.inFlight; {
		select {
		case <-r.answers:
			r.inFlight = false
		default:
			c.awaitSignal(context.Background())
		}
	}
	c.reads = nil
}

// closed reports whether ch is closed.
func closed(ch <-chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}

// minTime returns the earlier of a and b.
func minTime(a, b time.Time) time.Time {
	if b.Before(a) {
		return b
	}
	return a
}
