package nodeid

// Keep-alive by reads (docs/evidence/design.md section 11), the holder's half: in
// read mode a claim reads its own lease object every PollInterval,
// conditionally on its ETag, and a read whose answer shows that ETag re-arms
// the fence from the read's send. The renewal loop still writes, every
// RenewInterval: a backstop renewal, which keeps the cap ahead. The rules,
// one copy each:
//   - a landed write arms the fence for Window from its send (armedDeadline);
//   - a read sent at s whose answer shows the claim's ETag (a 304 with it,
//     lease.ErrNotModified, or a 200 with it) re-arms it to s + Window -
//     SafetyMargin, on the monotonic and the suspend-counting readings, never
//     past the cap: the last landed write's send + Backstop - SafetyMargin
//     (deadline), the fence write mode would have for a lease of Backstop;
//   - a 304 that does not show the ETag (lease.ErrNotModifiedUnproven)
//     proves nothing, nor does a read sent before the last landed write;
//   - another ETag is left to the write path: the renewal loop is woken, and
//     its CAS on the claim's ETag meets the change (a 412: lost, or a
//     pending write of ours found landed by read-back, as ever);
//   - one read in flight at a time, each answer credited to its own send.
// The reservation is the last landed write's: no read raises it. A fence
// that fell (the reads failed) is lifted by a read as by a landed write, by
// arm's rule: only when the claim may recover (LossGrace).

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/nodeid/nodeid/lease"
)

// errETagChanged is a poll whose answer shows an ETag other than the one it
// was conditional on: another writer's, or a write of ours that landed
// meanwhile. The renewal loop tells which.
var errETagChanged = errors.New("nodeid: the lease object's ETag changed")

// errAnswering is a poll that showed the claim's ETag while it is a
// challenge's that the renewal loop is answering (challenge.go): it proves
// nothing.
var errAnswering = errors.New("nodeid: answering a challenge")

// startPolling starts the read loop of a claim in read mode, and returns the
// function that waits for it to end (after ctx ends).
func (c *Claim) startPolling(ctx context.Context) (wait func()) {
	if !c.p.t.readMode() {
		return func() {}
	}
	done := make(chan struct{})
	c.p.goRun(func() {
		defer close(done)
		c.pollLoop(ctx)
	})
	return func() { _ = c.p.waitDone(context.Background(), done) }
}

// pollLoop reads every PollInterval after the previous read's send (the
// first a PollInterval after it starts, when the take has just armed the
// fence), until ctx ends; a read that failed is followed by the next a
// quarter of that later, so that one failed read does not let the fence fall.
// A changed ETag wakes the renewal loop.
//
// It is the loop that keeps the fence up, so it is the one that sees it fall:
// with NoLossGrace a fence that fell is final (arm lifts it no more), and the
// loop ends the claim as lost at the fall (its wait ends then too), not at
// the renewal loop's next write.
func (c *Claim) pollLoop(ctx context.Context) {
	clock := c.p.clock
	sent, every := clock.Now(), c.p.t.PollInterval
	for {
		if c.p.rules.fellForGood(c) {
			c.lose(lostf("node %d: its fence fell (no read or write proved the lease for Window - SafetyMargin, %v) and LossGrace is NoLossGrace: the first fence is final",
				c.id, c.p.t.Window-c.p.t.SafetyMargin))
			return
		}
		due := sent.Add(every)
		if fall, ok := c.p.rules.finalFall(c); ok && fall.Before(due) {
			due = fall
		}
		if err := clock.Sleep(ctx, due.Sub(clock.Now())); err != nil {
			return
		}
		if clock.Now().Before(sent.Add(every)) {
			continue // woken at the fence's fall: it fell, or a write moved it
		}
		var err error
		sent, err = c.poll(ctx)
		if ctx.Err() != nil {
			return
		}
		var wake bool
		if every, wake = afterPoll(err, c.p.t.PollInterval); wake {
			c.wakeRenewal()
		}
	}
}

// afterPoll tells the read loop what follows a poll that returned err: the
// time from its send to the next (PollInterval, a quarter of it after a
// failed read), and whether to wake the renewal loop (the ETag changed, or
// the object is gone).
func afterPoll(err error, poll time.Duration) (next time.Duration, wake bool) {
	switch {
	case errors.Is(err, errETagChanged) || errors.Is(err, lease.ErrNotFound):
		return poll, true
	case err != nil && !errors.Is(err, errAnswering):
		return poll / 4, false
	}
	return poll, false
}

// poll sends one conditional read of the claim's lease object on its ETag
// (a plain GET once the store answered one with a 304 that does not show the
// ETag: lease.ReadOwn), bounded by StoreTimeout, and re-arms the fence from
// its send when the answer shows that ETag. It returns the send time, and nil
// when the read proved the ETag; errETagChanged when the object has another;
// the store's error otherwise (lease.ErrNotModifiedUnproven included: that
// read proves nothing, and the next, a quarter poll later, is plain).
func (c *Claim) poll(ctx context.Context) (time.Time, error) {
	c.mu.Lock()
	etag, answering := c.etag, c.answering
	c.mu.Unlock()
	// While the renewal loop answers a challenge, a read that shows the
	// challenge proves nothing; one that shows another ETag (the answer
	// landed though its outcome was unknown, or a challenge again) wakes
	// the loop as ever, so that no retry pause of it outlasts the window.
	proves := !answering || c.p.rules.readsProveChallenge
	rctx, cancel := c.p.withTimeout(ctx, c.p.t.StoreTimeout)
	sent := c.p.clock.Now()
	_, meta, err := lease.ReadOwn(rctx, c.p.store, c.key, etag, c.p.plainReads.Load())
	cancel()
	if errors.Is(err, lease.ErrNotModifiedUnproven) && !c.p.plainReads.Swap(true) {
		c.p.log.Warn("the store answers a conditional read with a 304 that does not show the ETag: reading with plain GETs from now on (the same price per request on S3)",
			"nodeId", c.id, "err", err)
	}
	seen := err == nil || errors.Is(err, lease.ErrNotModified) // meta holds the object's ETag
	switch {
	case seen && meta.ETag == etag && !proves:
		return sent, errAnswering
	case seen && meta.ETag == etag:
		answered := c.p.clock.Now()
		c.proved(c.p.rules.readArmedAt(sent, answered))
		if o, ok := c.p.cfg.Observer.(ReadObserver); ok {
			o.ReadProved(c.id, answered.Sub(sent))
		}
		return sent, nil
	case seen:
		return sent, fmt.Errorf("%w: read %s on %s, answered %s", errETagChanged, c.key, etag, meta.ETag)
	}
	return sent, err
}

// proved re-arms the fence after a read sent at sent showed the claim's
// ETag of that instant: to sent + Window - SafetyMargin, capped by
// the last landed write's deadline, on both readings. It never lowers a
// fence that stands (a write sent after the read arms a later one) and
// lifts a fallen one by arm's rule.
func (c *Claim) proved(sent time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if sent.Before(c.lastSent) || c.closing.Load() {
		return // the last landed write proves more; or Close fenced for good
	}
	until, suspendUntil := c.p.rules.readProves(c, sent)
	// The read proves the lease until then, whatever the fence does: a
	// challenge that a successor may take was written after its send.
	c.provenUntil, c.provenSuspendUntil = max(c.provenUntil, until), max(c.provenSuspendUntil, suspendUntil)
	now, s := c.p.clock.Now(), c.snap.Load()
	standing := !s.jeopardy && !c.suspendFallen(s, now) && int64(now.Sub(c.p.base)) < s.until
	if standing && until <= s.until {
		return
	}
	c.arm(until, suspendUntil)
	c.subs.changed()
}

// readProves returns how far a read sent at sent that showed the claim's
// ETag proves the lease, on both readings: sent + Window - SafetyMargin,
// capped by the last landed write's deadline. Callers hold c.mu.
func (c *Claim) readProves(sent time.Time) (until, suspendUntil int64) {
	return int64(min(c.deadlineFor(sent, c.p.t.Window), c.deadline(c.lastSent))), min(c.suspendDeadlineFor(sent, c.p.t.Window), c.lastSuspendFence)
}

// finalFall returns when the fence falls for good unless a write or a read
// moves it first: with NoLossGrace, the fence's instant (on the provider's
// Clock; past once it fell); false when a fence that falls may be lifted
// again (LossGrace), or once the claim is fenced for good.
func (c *Claim) finalFall() (time.Time, bool) {
	if c.p.t.LossGrace != NoLossGrace {
		return time.Time{}, false
	}
	until := c.ValidUntil()
	return until, !until.IsZero()
}

// fellForGood reports whether the fence is down for good while the claim is
// held: it fell with NoLossGrace (arm lifts it no more). Not during Close,
// which fences first (closing is stored before the fence falls, and loaded
// here after Valid).
func (c *Claim) fellForGood() bool {
	return c.p.t.LossGrace == NoLossGrace && !c.Valid() && !c.closing.Load()
}
