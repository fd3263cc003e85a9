package nodeid

// Keep-alive by reads (docs/evidence/design.md section 11), the holder's half: in
// read mode a claim's owner (owner.go) reads its own lease object every PollInterval,
// conditionally on its ETag, and a read whose answer shows that ETag re-arms
// the fence from the read's send. The renewal loop still writes, every
// RenewInterval: a backstop renewal, which keeps the cap ahead. The rules,
// one copy each:
//   - a landed write arms the fence for Window from its send (fenceAt);
//   - a read sent at s whose answer shows the claim's ETag (a 304 with it,
//     lease.ErrNotModified, or a 200 with it) re-arms it to s + Window -
//     SafetyMargin, on the monotonic and the suspend-counting readings, never
//     past the cap: the last landed write's send + Backstop - SafetyMargin
//     (capUntil), the fence write mode would have for a lease of Backstop;
//   - a 304 that does not show the ETag (lease.ErrNotModifiedUnproven)
//     proves nothing, nor does a read sent before the last landed write;
//   - another ETag is left to the write path: the owner writes at once, and
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
// meanwhile. The write path tells which.
var errETagChanged = errors.New("nodeid: the lease object's ETag changed")

// errAnswering is a poll that showed the claim's ETag while it is a
// challenge's that the claim is answering (challenge.go): it proves
// nothing.
var errAnswering = errors.New("nodeid: answering a challenge")

// afterPoll tells the owner what follows a read whose judgement was err: the
// time from its send to the next (PollInterval, a quarter of it after a
// failed read), and whether to write now (the ETag changed, or the object is
// gone).
func afterPoll(err error, poll time.Duration) (next time.Duration, wake bool) {
	switch {
	case errors.Is(err, errETagChanged) || errors.Is(err, lease.ErrNotFound):
		return poll, true
	case err != nil && !errors.Is(err, errAnswering):
		return poll / 4, false
	}
	return poll, false
}

// polled is the answer to one read of the claim's lease object.
type polled struct {
	etag string // the ETag the read was conditional on: the claim's at its send
	// proves: a read that shows etag proves the claim; not while the claim
	// answers a challenge, whose ETag etag then is.
	proves         bool
	sent, answered time.Time // Clock.Now
	meta           lease.Meta
	err            error
}

// newRead returns the next read of the claim's lease object, to send on any
// goroutine: conditional on the claim's ETag (a plain GET once the store
// answered one with a 304 that does not show the ETag: lease.ReadOwn), and
// bounded by StoreTimeout.
func (c *Claim) newRead() func(ctx context.Context) polled {
	a := polled{etag: c.etag, proves: !c.snap.Load().answering || c.p.rules.readsProveChallenge}
	plain := c.p.plainReads.Load()
	return func(ctx context.Context) polled {
		rctx, cancel := c.p.withTimeout(ctx, c.p.t.StoreTimeout)
		defer cancel()
		a.sent = c.p.clock.Now()
		_, a.meta, a.err = lease.ReadOwn(rctx, c.p.store, c.key, a.etag, plain)
		a.answered = c.p.clock.Now()
		return a
	}
}

// judgeRead judges the answer a, and re-arms the fence from its send when it
// shows the ETag it was conditional on. It returns nil when the read proved
// the ETag; errAnswering when it showed the challenge the claim answers (a
// read that shows another ETag then, the answer landed though its outcome
// was unknown or a challenge again, wakes the owner as ever, so that no
// retry pause outlasts the window); errETagChanged when the object has
// another; the store's error otherwise (lease.ErrNotModifiedUnproven
// included: that read proves nothing, and the next is plain).
func (c *Claim) judgeRead(a polled) error {
	if errors.Is(a.err, lease.ErrNotModifiedUnproven) && !c.p.plainReads.Swap(true) {
		c.p.log.Warn("the store answers a conditional read with a 304 that does not show the ETag: reading with plain GETs from now on (the same price per request on S3)",
			"nodeId", c.id, "err", a.err)
	}
	seen := a.err == nil || errors.Is(a.err, lease.ErrNotModified) // meta holds the object's ETag
	switch {
	case seen && a.meta.ETag == a.etag && !a.proves:
		return errAnswering
	case seen && a.meta.ETag == a.etag:
		c.proved(c.p.rules.readArmedAt(a.sent, a.answered))
		if o, ok := c.p.cfg.Observer.(ReadObserver); ok {
			o.ReadProved(c.id, a.answered.Sub(a.sent))
		}
		return nil
	case seen:
		return fmt.Errorf("%w: read %s on %s, answered %s", errETagChanged, c.key, a.etag, a.meta.ETag)
	}
	return a.err
}

// proved re-arms the fence after a read sent at sent showed the claim's
// ETag of that instant: to sent + Window - SafetyMargin, capped by
// the last landed write's deadline, on both readings. It never lowers a
// fence that stands (a write sent after the read arms a later one) and
// lifts a fallen one by arm's rule.
func (c *Claim) proved(sent time.Time) {
	s := c.snap.Load()
	if sent.Before(s.lastSent) || c.closing.Load() {
		return // the last landed write proves more; or Close fenced for good
	}
	until, suspendUntil := c.p.rules.readProves(c, sent)
	// The read proves the lease until then, whatever the fence does: a
	// challenge that a successor may take was written after its send.
	prove := func(s *snapshot) {
		s.provenUntil, s.provenSuspendUntil = max(s.provenUntil, until), max(s.provenSuspendUntil, suspendUntil)
	}
	now := c.p.clock.Now()
	if standing := !s.jeopardy && !c.suspendFallen(s, now) && int64(now.Sub(c.p.base)) < s.until; standing && until <= s.until {
		c.setFence(func(s snapshot) snapshot { prove(&s); return s })
		return
	}
	c.arm(until, suspendUntil, prove)
	c.subs.changed()
}

// readProves returns how far a read sent at sent that showed the claim's
// ETag proves the lease, on both readings: sent + Window - SafetyMargin,
// capped by the last landed write's deadline.
func (c *Claim) readProves(sent time.Time) (until, suspendUntil int64) {
	until, suspendUntil = c.fenceAt(sent, c.p.t.Window)
	return min(until, c.capUntil), min(suspendUntil, c.capSuspendUntil)
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
