package nodeid

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/nodeid/nodeid/lease"
)

// Close releases the claim: it fences at once (Valid turns false, no renewal
// runs any more), asks the function given by WithIssuedFunc for the highest
// timestamp issued, and writes the lease free by CAS, keeping its version and
// its reservation at that timestamp (never below the floor; see
// WithIssuedFunc). A
// successor can then take the ID at once. Close is idempotent; later calls return
// the first call's result.
//
// ctx bounds the whole release, including the wait for a renewal in flight to
// end: if ctx ends first, Close returns an error saying the release was not
// confirmed (the claim is fenced already, so this is safe) and the lease is
// left to expire, unless a write of it landed.
//
// A release whose answer was lost, and whose retry then finds the ID taken by
// a successor, is still reported released when the read-back proves our free
// record was what the successor took (see freedByOurRelease); otherwise Close
// returns an error wrapping ErrLeaseLost.
func (c *Claim) Close(ctx context.Context) error {
	c.closeOnce.Do(func() { c.closeErr = c.release(ctx) })
	return c.closeErr
}

func (c *Claim) release(ctx context.Context) error {
	c.closing.Store(true)
	c.fence()
	c.subs.stop(ErrClosed, false)
	c.stopLoop()
	if c.p.waitDone(ctx, c.loopDone) != nil {
		// The renewal loop is stuck in a store call that ignores its
		// cancellation. The claim is fenced: nothing is issued any more, and
		// a renewal that lands now only delays the expiry.
		c.end(ErrClosed)
		return fmt.Errorf("nodeid: release of node %d not confirmed (%w while a renewal was in flight): the claim is fenced; the lease expires after %v",
			c.id, ctx.Err(), c.p.t.Lease)
	}
	if err := c.Err(); err != nil {
		return nil // lost before: nothing of ours to release
	}
	rec := c.rec // the loop ended: Close owns the claim (owner.go)
	if c.issued != nil {
		rec.ReservedUntilMs = max(c.floor, c.issued())
	}
	rec.Holder, rec.Value, rec.Gossip = "", "", ""
	rec.RenewedAt, rec.ExpiresAt = time.Time{}, time.Time{}
	pace := c.p.newBackoff(releaseRetryPace, releaseRetryPace)
	for {
		rec.WriteID = lease.NewWriteID()
		err := c.write(ctx, rec)
		if errors.Is(err, errEarlierWriteLanded) && c.rec.Free() {
			err = nil // an earlier release of ours landed: it is the release
		}
		switch {
		case err == nil || c.freedByOurRelease(err):
			c.end(ErrClosed)
			if err != nil {
				c.p.log.Info("the release's answer was lost; a successor took the free record since", "nodeId", c.id, "version", c.version, "readBack", err)
			}
			c.p.log.Info("released node ID", "nodeId", c.id, "version", c.version, "reservedUntilMs", rec.ReservedUntilMs)
			c.p.cfg.Observer.Released(c.id)
			return nil
		case errors.Is(err, ErrLeaseLost):
			c.end(ErrClosed)
			return fmt.Errorf("nodeid: release of node %d: %w", c.id, err)
		case ctx.Err() != nil:
			c.end(ErrClosed)
			return fmt.Errorf("nodeid: release of node %d not confirmed (%w): the lease expires after %v",
				c.id, ctx.Err(), c.p.t.Lease)
		case errors.Is(err, errEarlierWriteLanded):
			continue // an earlier renewal landed: write the release again, on its ETag, at once
		case errors.Is(err, errChallenged):
			continue // a challenge of ours (read mode): release on its ETag, at once
		}
		_ = c.p.clock.Sleep(ctx, pace.next()) // the next write sees ctx done and reports it
	}
}

// freedByOurRelease reports whether err, a loss found by a release's
// read-back, proves instead that the release landed and a successor took the
// free record. The rule: the read-back saw a version above ours (not a
// recreated object), a release write of ours is pending (sent, outcome
// unknown), and the read-back's answer arrived, on this task's monotonic
// clock and on its suspend-counting reading (withinLastFence), before the
// fence the claim's last proof allowed: the last landed held write's send +
// LeaseDuration - SafetyMargin, or in read mode that write's, or a later
// read's that showed its ETag, send + Window - SafetyMargin (provenUntil).
// A successor takes by CAS on the record with our version; taking it
// expired needs Date - Last-Modified > lease + 1 s + clockMargin on the
// store's clock, and taking it by a challenge (read mode) a confirm written
// after that send that stood Window + 1 s + clockMargin, so neither can
// happen before that instant (the argument of the fence). The record it took
// was then free, and only a release writes a record free with our version:
// ours, or an operator's forced release (which also ended our claim without
// a loss of IDs). Past that instant, the successor may have taken our lease
// expired or by a challenge, and Close reports the loss: it is not proven
// otherwise.
func (c *Claim) freedByOurRelease(err error) bool {
	var te *takenError
	if !errors.As(err, &te) || te.version <= c.version || te.holder == RecreatedHolder {
		return false
	}
	released := false
	for _, pw := range c.pending {
		released = released || pw.rec.Free()
	}
	return released && c.withinLastFence(te.seen)
}

// withinLastFence reports whether seen, a reading of the Clock, is before
// the fence of the claim's last proof (provenUntil) on the monotonic clock
// and, where the Clock has one, on the suspend-counting reading (a host
// suspended in between let that much more real time pass: the store's clock
// went on).
func (c *Claim) withinLastFence(seen time.Time) bool {
	s := c.snap.Load()
	if int64(seen.Sub(c.p.base)) >= s.provenUntil {
		return false
	}
	return c.p.suspend == nil || c.p.suspend.SuspendReading(seen) < s.provenSuspendUntil
}
