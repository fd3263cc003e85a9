package nodeid

import (
	"context"
	"errors"
	"fmt"
)

// renewLoop renews the lease every RenewInterval after the last successful write
// until ctx is canceled (by Close or a loss) or the lease is lost.
//
// It is the claim's owner (owner.go): in read mode it also runs the
// claim's reads (keepalive.go), the first a PollInterval after it starts
// (the take has just armed the fence), from every one of its waits, and
// waits for the read in flight before it returns. A read that sees the ETag
// change ends its wait (here, a round's retry pause, jeopardy's): the loop
// writes at once.
func (c *Claim) renewLoop(ctx context.Context) {
	defer close(c.loopDone)
	if c.p.t.readMode() {
		c.reads = &readSchedule{due: c.p.clock.Now().Add(c.p.t.PollInterval), answers: make(chan polled, 1)}
		defer c.stopReads()
	}
	for {
		if c.serve(ctx, c.snap.Load().lastSent.Add(c.p.t.RenewInterval), nil) != nil {
			return
		}
		if err := c.renewStep(ctx); err != nil {
			if ctx.Err() == nil {
				c.lose(err)
			}
			return
		}
	}
}

// renewStep is one turn of the renewal loop: a renewal round and, when it
// gives up with no evidence of another writer, jeopardy until a recovery or
// a final loss (unless LossGrace is NoLossGrace). It returns nil when the
// lease is renewed, and an error wrapping ErrLeaseLost when it is lost.
func (c *Claim) renewStep(ctx context.Context) error {
	err := c.renewRound(ctx)
	var ge *gaveUpError
	switch {
	case err == nil || ctx.Err() != nil:
		return err
	case !errors.As(err, &ge) || c.p.t.LossGrace == NoLossGrace:
		return giveUp(err)
	}
	return c.recover(ctx, err)
}

// renewRound renews once, retrying with jitter until RenewDeadline after the
// last successful write. It returns an error wrapping ErrLeaseLost when
// another writer changed the lease, and a gaveUpError when the deadline
// passed (or had passed when the round began: the process was paused) with no
// write landed and no such evidence.
func (c *Claim) renewRound(ctx context.Context) error {
	clock, cfg, t := c.p.clock, c.p.cfg, c.p.t
	deadline := c.snap.Load().lastSent.Add(c.p.rules.renewDeadline(t))
	pace := c.p.newBackoff(renewPause(t.RenewDeadline-t.RenewInterval), renewPause(t.RenewDeadline-t.RenewInterval))
	for attempt := 1; ; attempt++ {
		if now := clock.Now(); !now.Before(deadline) {
			return gaveUpf("renewal of node %d overdue by %v (process paused or starved?)", c.id, now.Sub(deadline))
		}
		start := clock.Now()
		err := c.attempt(ctx)
		if err == nil && !c.Valid() {
			return gaveUpf("the renewal of node %d landed after its fence fell (%v after it was sent)", c.id, clock.Now().Sub(start))
		}
		if err == nil {
			cfg.Observer.Renewed(c.id, clock.Now().Sub(start))
			c.p.log.Debug("renewed lease", "nodeId", c.id, "attempt", attempt)
			return nil
		}
		if errors.Is(err, ErrLeaseLost) || ctx.Err() != nil {
			return err
		}
		cfg.Observer.RenewFailed(c.id, err)
		c.p.log.Warn("lease renewal failed, retrying", "nodeId", c.id, "attempt", attempt, "err", err)
		wait := c.pauseFor(pace.next())
		if left := deadline.Sub(clock.Now()); wait >= left {
			return gaveUpf("renewal of node %d failed until the renew deadline (%v after the last write): %v", c.id, t.RenewDeadline, err)
		}
		if err := c.p.rules.retryPause(c, ctx, wait); err != nil {
			return err
		}
	}
}

// attempt is one renewal attempt, bounded by StoreTimeout: its CAS and, when
// its answer needs one, the read-back that resolves it.
func (c *Claim) attempt(ctx context.Context) error {
	c.woken = false // this attempt is the write a read that saw the ETag change asks for
	actx, cancel := c.p.withTimeout(ctx, c.p.t.StoreTimeout)
	defer cancel()
	err := c.renewOnce(actx)
	if err != nil && ctx.Err() == nil && actx.Err() != nil {
		return fmt.Errorf("renewal attempt of node %d: no answer within StoreTimeout %v: %w", c.id, c.p.t.StoreTimeout, err)
	}
	return err
}

// renewOnce writes one renewal: a new writeId, times and reservation. A
// renewal that meets a challenge of ours (read mode) is written again at once
// on the challenge's ETag: the answer.
func (c *Claim) renewOnce(ctx context.Context) error {
	for range maxAnswers {
		rec := c.rec
		c.p.stamp(&rec, c.reserveWall())
		rec.KnownNodes = c.p.knownNodes()
		switch err := c.write(ctx, rec); {
		case errors.Is(err, errEarlierWriteLanded):
			return nil // an earlier renewal landed: the lease is renewed
		case !errors.Is(err, errChallenged):
			return err
		}
	}
	return fmt.Errorf("node %d: challenged again at each of %d answers", c.id, maxAnswers)
}
