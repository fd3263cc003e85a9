package nodeid

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// renewLoop renews the lease every RenewInterval after the last successful write
// until ctx is canceled (by Close or a loss) or the lease is lost.
//
// In read mode it also runs the claim's read loop (keepalive.go), and waits
// for it to end before it returns. A poll that sees the ETag change wakes it
// (wakeRenewal): every wait of the loop (await: here, a round's retry pause,
// jeopardy's) ends then, and the loop writes at once.
func (c *Claim) renewLoop(ctx context.Context) {
	defer close(c.loopDone)
	defer c.startPolling(ctx)()
	clock := c.p.clock
	for {
		c.mu.Lock()
		next := c.lastSent.Add(c.p.t.RenewInterval)
		c.mu.Unlock()
		if c.await(ctx, next.Sub(clock.Now())) != nil {
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
	c.mu.Lock()
	deadline := c.lastSent.Add(c.p.rules.renewDeadline(t))
	c.mu.Unlock()
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

// await waits d on the provider's clock, or less when a wake comes
// (wakeRenewal: a poll saw the ETag change, and the loop must write now), and
// returns ctx's error when ctx ends first (Close, a loss). It is the renewal
// loop's one way to wait, so that no sleep of it outlasts a wake.
func (c *Claim) await(ctx context.Context, d time.Duration) error {
	return sleepOrWake(ctx, c.p.clock, d, c.wake)
}

// wakeRenewal ends the renewal loop's current wait, or its next one when it
// is not waiting: it writes at once. A wake that comes while a write is being
// sent is dropped by it (attempt): that write, sent after the wake, meets
// what the poll saw.
func (c *Claim) wakeRenewal() {
	select {
	case c.wake <- struct{}{}:
	default: // a wake is pending already
	}
}

// attempt is one renewal attempt, bounded by StoreTimeout: its CAS and, when
// its answer needs one, the read-back that resolves it.
func (c *Claim) attempt(ctx context.Context) error {
	select {
	case <-c.wake: // this attempt is the write the wake asks for
	default:
	}
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
		c.mu.Lock()
		rec := c.rec
		c.mu.Unlock()
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

// sleepOrDone waits d on the provider's clock; false if ctx ended first.
func (c *Claim) sleepOrDone(ctx context.Context, d time.Duration) bool {
	return c.p.clock.Sleep(ctx, d) == nil
}
