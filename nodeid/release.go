package nodeid

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/nodeid/nodeid/lease"
)

// Close releases the claim: it fences at once (Valid turns false, no renewal
// runs any more), asks the function set by SetIssuedFunc for the highest
// timestamp issued, and writes the lease free by CAS, keeping its version and
// lowering its reservation to that timestamp (never below the floor). A
// successor can then take the ID at once. Close is idempotent; later calls return
// the first call's result.
//
// ctx bounds the whole release, including the wait for a renewal in flight to
// end: if ctx ends first, Close returns an error saying the release was not
// confirmed (the claim is fenced already, so this is safe) and the lease is
// left to expire, unless a write of it landed.
func (c *Claim) Close(ctx context.Context) error {
	c.closeOnce.Do(func() { c.closeErr = c.release(ctx) })
	return c.closeErr
}

func (c *Claim) release(ctx context.Context) error {
	c.closing.Store(true)
	c.fence()
	c.stopLoop()
	select {
	case <-c.loopDone:
	case <-ctx.Done():
		// The renewal loop is stuck in a store call that ignores its
		// cancellation. The claim is fenced: nothing is issued any more, and
		// a renewal that lands now only delays the expiry.
		c.end(ErrClosed)
		return fmt.Errorf("nodeid: release of node %d not confirmed (%w while a renewal was in flight): the claim is fenced; the lease expires after %v",
			c.id, ctx.Err(), c.p.cfg.LeaseDuration)
	}
	if err := c.Err(); err != nil {
		return nil // lost before: nothing of ours to release
	}
	c.mu.Lock()
	rec := c.rec
	c.mu.Unlock()
	last := rec.ReservedUntilMs
	if f := c.issued.Load(); f != nil {
		last = min(last, (*f)())
	}
	rec.Holder = ""
	rec.RenewedAt, rec.ExpiresAt = time.Time{}, time.Time{}
	rec.ReservedUntilMs = max(c.floor, last)
	for {
		rec.WriteID = lease.NewWriteID()
		err := c.write(ctx, rec)
		switch {
		case err == nil:
			c.end(ErrClosed)
			c.p.log.Info("released node ID", "nodeId", c.id, "version", c.version, "reservedUntilMs", rec.ReservedUntilMs)
			c.p.cfg.Observer.Released(c.id)
			return nil
		case errors.Is(err, ErrLeaseLost):
			c.end(ErrClosed)
			return fmt.Errorf("nodeid: release of node %d: %w", c.id, err)
		case ctx.Err() != nil:
			c.end(ErrClosed)
			return fmt.Errorf("nodeid: release of node %d not confirmed (%w): the lease expires after %v",
				c.id, ctx.Err(), c.p.cfg.LeaseDuration)
		case errors.Is(err, errEarlierWriteLanded):
			continue // an earlier renewal landed: write the release again, on its ETag, at once
		}
		if !c.sleepOrDone(ctx, c.p.jitter(200*time.Millisecond)) {
			continue // the next write sees ctx done and reports it
		}
	}
}
