package nodeid

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// Jeopardy: the renewals of a held claim gave up (the renew deadline passed
// with no write landed, or the loop woke up past it) with no evidence of
// another writer. The claim is fenced at once, but not lost: it keeps
// renewing on the ETag of its last write for Config.LossGrace, and a write
// that lands recovers it (committed lifts the fence); evidence of a takeover,
// or the end of the grace, makes the loss final. docs/evidence/design.md section 6
// has why a recovery is safe, section 7.3 the rules.

// gaveUpError is a renewal round that ended at its deadline without a landed
// write and without evidence of another writer: the claim may enter
// jeopardy. It does not wrap ErrLeaseLost; giveUp turns it into a loss.
type gaveUpError struct{ msg string }

func (e *gaveUpError) Error() string { return e.msg }

// gaveUpf returns a gaveUpError.
func gaveUpf(format string, args ...any) error {
	return &gaveUpError{msg: fmt.Sprintf(format, args...)}
}

// giveUp returns the loss a round that gave up means when the claim may not
// recover: an error wrapping ErrLeaseLost.
func giveUp(err error) error {
	if ge := (*gaveUpError)(nil); errors.As(err, &ge) {
		return lostf("%s", ge.msg)
	}
	return err
}

// endangered puts the claim in jeopardy for cause (it gave up): fenced at
// once, not lost.
func (c *Claim) endangered(cause error) {
	fell := c.p.clock.Now()
	c.setFence(func(s snapshot) snapshot {
		s.jeopardy, s.fellAt = true, fell
		return s
	})
	c.subs.changed()
	c.p.log.Warn("lease in jeopardy: stopped issuing IDs; renewing on its last write", "nodeId", c.id, "version", c.version,
		"lossGrace", c.p.t.LossGrace.String(), "cause", cause)
	c.p.cfg.Observer.Jeopardy(c.id, cause)
}

// recovered reports that a landed write lifted a fence that had fallen
// fenced ago (in jeopardy, or by time while the write was in flight): arm
// lifted it, jeopardy with it, and counted it in one snapshot, so Status
// sees the lift and the count together.
func (c *Claim) recovered(fenced time.Duration) {
	c.p.log.Warn("lease recovered: a write on its last ETag landed; issuing IDs again", "nodeId", c.id, "version", c.version,
		"fenced", fenced.String())
	c.p.cfg.Observer.Recovered(c.id, fenced)
}

// recover renews, on the ETag of the claim's last write, until a write
// lands that lifts the fence (nil), or another writer shows, or LossGrace
// passes since the fence fell (an error wrapping ErrLeaseLost), or ctx ends.
// Each attempt is bounded by StoreTimeout and paced as a renewal round's.
func (c *Claim) recover(ctx context.Context, cause error) error {
	clock, cfg, t := c.p.clock, c.p.cfg, c.p.t
	c.endangered(cause)
	end := clock.Now().Add(t.LossGrace)
	pace := c.p.newBackoff(renewPause(t.RenewDeadline-t.RenewInterval), renewPause(t.RenewDeadline-t.RenewInterval))
	last := cause
	for {
		err := c.attempt(ctx)
		switch {
		case err == nil && c.Valid():
			return nil
		case ctx.Err() != nil:
			return ctx.Err()
		case errors.Is(err, ErrLeaseLost):
			return err
		case err != nil:
			last = err
			cfg.Observer.RenewFailed(c.id, err)
		}
		wait := c.pauseFor(pace.next())
		if left := end.Sub(clock.Now()); wait >= left {
			return lostf("no write of node %d landed in the loss grace (%v) after its renewals gave up: %v", c.id, t.LossGrace, last)
		}
		if err := c.p.rules.retryPause(c, ctx, wait); err != nil {
			return err
		}
	}
}
