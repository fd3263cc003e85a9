package nodeid

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/nodeid/nodeid/lease"
)

// errNotApplied means a write whose outcome was unknown did not land; the caller
// may try again.
var errNotApplied = errors.New("nodeid: write not applied")

// errEarlierWriteLanded means the write did not land, but an earlier write of
// ours whose outcome was unknown did, and is now the claim's last write: the
// caller writes again, on its ETag, if it needs its own record written (a
// release does; a renewal is done, since the earlier write renewed the lease).
var errEarlierWriteLanded = errors.New("nodeid: an earlier write landed instead")

// takenError is the loss found by a read-back: the lease object carries none of
// our writes but another writer's record. It wraps ErrLeaseLost; release uses
// what was seen, and when, to tell a successor that took our release from one
// that took an expired lease (see freedByOurRelease).
type takenError struct {
	id      int
	holder  string
	version int64
	seen    time.Time // Clock.Now when the read-back's answer arrived
}

func (e *takenError) Error() string {
	return fmt.Sprintf("%v: node %d was taken by %q with version %d", ErrLeaseLost, e.id, e.holder, e.version)
}

func (e *takenError) Unwrap() error { return ErrLeaseLost }

// lostf returns an error wrapping ErrLeaseLost.
func lostf(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrLeaseLost, fmt.Sprintf(format, args...))
}

// renewLoop renews the lease every RenewInterval after the last successful write
// until ctx is canceled (by Close or a loss) or a renewal round fails.
func (c *Claim) renewLoop(ctx context.Context) {
	defer close(c.loopDone)
	clock := c.p.clock
	for {
		c.mu.Lock()
		next := c.lastSent.Add(c.p.cfg.RenewInterval)
		c.mu.Unlock()
		if err := clock.Sleep(ctx, next.Sub(clock.Now())); err != nil {
			return
		}
		if err := c.renewRound(ctx); err != nil {
			if ctx.Err() == nil {
				c.lose(err)
			}
			return
		}
	}
}

// renewRound renews once, retrying with jitter until RenewDeadline after the last
// successful write. It returns an error wrapping ErrLeaseLost when the lease is
// gone or the deadline passed.
func (c *Claim) renewRound(ctx context.Context) error {
	clock, cfg := c.p.clock, c.p.cfg
	c.mu.Lock()
	deadline := c.lastSent.Add(cfg.RenewDeadline)
	c.mu.Unlock()
	pace := c.p.newBackoff(cfg.RenewInterval/5, cfg.RenewInterval/5)
	for attempt := 1; ; attempt++ {
		if now := clock.Now(); !now.Before(deadline) {
			return lostf("renewal of node %d overdue by %v (process paused or starved?)", c.id, now.Sub(deadline))
		}
		start := clock.Now()
		err := c.renewOnce(ctx)
		if err == nil && !c.Valid() {
			return lostf("the renewal of node %d landed after its fence fell (%v after the last write)",
				c.id, clock.Now().Sub(start))
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
		wait := pace.next()
		if left := deadline.Sub(clock.Now()); wait >= left {
			return lostf("renewal of node %d failed until the renew deadline (%v after the last write): %v", c.id, cfg.RenewDeadline, err)
		}
		if err := clock.Sleep(ctx, wait); err != nil {
			return err
		}
	}
}

// renewOnce writes one renewal: a new writeId, times and reservation.
func (c *Claim) renewOnce(ctx context.Context) error {
	c.mu.Lock()
	rec := c.rec
	c.mu.Unlock()
	c.p.stamp(&rec, c.reserveWall())
	rec.KnownNodes = c.p.knownNodes()
	if err := c.write(ctx, rec); !errors.Is(err, errEarlierWriteLanded) {
		return err
	}
	return nil // an earlier renewal landed: the lease is renewed
}

// write replaces the lease with rec by CAS on the last known ETag. A write whose
// outcome is unknown is remembered and resolved by reading the object back: if
// it carries one of our pending writeIds, that write landed. It returns nil on
// success, an error wrapping ErrLeaseLost when another writer changed the lease,
// and any other error when the write did not happen and may be tried again.
func (c *Claim) write(ctx context.Context, rec lease.Record) error {
	body, err := rec.Encode()
	if err != nil {
		return err
	}
	c.mu.Lock()
	etag := c.etag
	c.mu.Unlock()
	wctx, cancel := context.WithTimeout(ctx, c.p.cfg.StoreTimeout)
	sent := c.p.clock.Now()
	meta, err := lease.UpdateLive(wctx, c.p.store, c.key, body, etag, rec.LiveFor())
	cancel()
	if err == nil {
		c.mu.Lock()
		c.committed(rec, meta.ETag, sent)
		c.mu.Unlock()
		return nil
	}
	unknown := !errors.Is(err, lease.ErrPreconditionFailed) &&
		(errors.Is(err, lease.ErrUnknownOutcome) || errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled))
	c.mu.Lock()
	if unknown {
		c.pending = append(c.pending, pendingWrite{rec: rec, sent: sent})
	}
	pending := len(c.pending)
	c.mu.Unlock()
	switch {
	case ctx.Err() != nil:
		return ctx.Err()
	case errors.Is(err, lease.ErrLivenessUnbound):
		// Written, but it reads expired: another task may take it now.
		return lostf("node %d: %v", c.id, err)
	case errors.Is(err, lease.ErrPreconditionFailed) && pending == 0:
		return lostf("node %d was written by another task (precondition failed)", c.id)
	case errors.Is(err, lease.ErrPreconditionFailed) || unknown:
		rctx, cancel := context.WithTimeout(ctx, c.p.cfg.StoreTimeout)
		defer cancel()
		adopted, err := c.readBack(rctx)
		if err == nil && adopted != rec.WriteID {
			return errEarlierWriteLanded
		}
		return err
	default:
		return fmt.Errorf("write %s: %w", c.key, err)
	}
}

// readBack resolves pending writes by reading the lease object. It returns the
// writeId of the pending write it found landed and adopted.
func (c *Claim) readBack(ctx context.Context) (adopted string, err error) {
	body, meta, err := c.p.store.Get(ctx, c.key)
	seen := c.p.clock.Now()
	if errors.Is(err, lease.ErrNotFound) {
		return "", lostf("lease object %s was deleted", c.key)
	}
	if err != nil {
		return "", fmt.Errorf("read back %s: %w", c.key, err)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if meta.ETag == c.etag {
		return "", errNotApplied
	}
	rec, err := lease.DecodeRecord(body, c.id)
	if err != nil {
		return "", lostf("lease object %s no longer decodes: %v", c.key, err)
	}
	for _, pw := range c.pending {
		if pw.rec.WriteID == rec.WriteID {
			c.committed(pw.rec, meta.ETag, c.p.hooks.adoptedSent(pw.sent, seen))
			return rec.WriteID, nil
		}
	}
	return "", &takenError{id: c.id, holder: rec.Holder, version: rec.Version, seen: seen}
}

// sleepOrDone waits d on the provider's clock; false if ctx ended first.
func (c *Claim) sleepOrDone(ctx context.Context, d time.Duration) bool {
	return c.p.clock.Sleep(ctx, d) == nil
}
