package nodeid

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/nodeid/nodeid/lease"
)

// tryCreate takes a never-created ID by creating its lease object held, with
// version 1 and no floor (no one ever issued IDs with it).
func (p *Provider) tryCreate(ctx context.Context, id int, o claimOptions) (*Claim, error) {
	next := lease.Record{NodeID: id, Holder: p.cfg.TaskID, Value: p.cfg.Value, Gossip: p.cfg.GossipAddr, Version: 1,
		LeaseMillis: p.t.Lease.Milliseconds(), KnownNodes: p.knownNodes()}
	p.stamp(&next, p.clock.Wall())
	body, err := next.Encode()
	if err != nil {
		return nil, err
	}
	key := lease.RecordKey(id)
	t0 := p.clock.Now()
	meta, err := lease.CreateLive(ctx, p.store, key, body, next.LiveFor())
	switch {
	case errors.Is(err, lease.ErrPreconditionFailed), errors.Is(err, lease.ErrConflict):
		return nil, errTaken
	case errors.Is(err, lease.ErrUnknownOutcome):
		if meta, err = p.readBackTake(ctx, key, next.WriteID); err != nil {
			return nil, errTaken // not ours, or unknown: if it landed after all, it expires
		}
	case err != nil:
		return nil, fmt.Errorf("create %s: %w", key, err)
	}
	return p.claimTaken(ctx, next, meta.ETag, t0, lease.Record{NodeID: id}, lease.Meta{}, lease.StateFree, o)
}

// judge decodes the object read in r and judges it on that response alone
// (lease.StateOf, on the store's clock). An object never to be taken
// automatically (it does not decode, states a lease above MaxLeaseDuration,
// or an older release recreated it) is an anomaly wrapping lease.ErrCorrupt.
func (p *Provider) judge(r readResult) (lease.Record, lease.State, error) {
	key := lease.RecordKey(r.id)
	prev, err := lease.DecodeRecord(r.body, r.id)
	if err == nil && prev.Lease() > p.t.MaxLeaseDuration {
		err = fmt.Errorf("%w: leaseMillis %d above the maximum lease %v", lease.ErrCorrupt, prev.LeaseMillis, p.t.MaxLeaseDuration)
	}
	if err != nil {
		p.log.Error("skipping a lease object that is not a valid lease; repair it with nodeidctl repair", "key", key, "err", err)
		p.cfg.Observer.Anomaly(key, err)
		return lease.Record{}, 0, err
	}
	if prev.Holder == RecreatedHolder {
		err := fmt.Errorf("%w: lease object %s was recreated after a deletion by an older nodeid, with a floor from its recreator's wall clock: restore it with nodeidctl repair --id %d --floor MS",
			lease.ErrCorrupt, key, r.id)
		p.log.Error("skipping a recreated lease object; repair it with nodeidctl repair", "key", key, "err", err)
		p.cfg.Observer.Anomaly(key, err)
		return lease.Record{}, 0, err
	}
	return prev, p.rules.stateOf(&prev, r.meta, p.cfg.ClockMargin), nil
}

// take takes prev, read in r and judged free or expired, by one CAS on the
// ETag it was read with: version + 1, the predecessor's reservation kept as
// this claim's floor. errTaken: another writer changed the object first.
func (p *Provider) take(ctx context.Context, r readResult, prev lease.Record, state lease.State, o claimOptions) (*Claim, error) {
	key := lease.RecordKey(r.id)
	next := lease.Record{
		NodeID: r.id, Holder: p.cfg.TaskID, Value: p.cfg.Value, Gossip: p.cfg.GossipAddr, Version: prev.Version + 1,
		LeaseMillis: p.t.Lease.Milliseconds(), ReservedUntilMs: prev.ReservedUntilMs,
		KnownNodes: p.knownNodes(),
	}
	p.stamp(&next, p.clock.Wall())
	body, err := next.Encode()
	if err != nil {
		return nil, err
	}
	t0 := p.clock.Now()
	meta, err := lease.UpdateLive(ctx, p.store, key, body, r.meta.ETag, next.LiveFor())
	switch {
	case errors.Is(err, lease.ErrPreconditionFailed), errors.Is(err, lease.ErrConflict):
		return nil, errTaken
	case errors.Is(err, lease.ErrUnknownOutcome):
		if meta, err = p.readBackTake(ctx, key, next.WriteID); err != nil {
			return nil, errTaken // not ours, or unknown: if it landed after all, it expires
		}
	case err != nil:
		return nil, fmt.Errorf("take %s: %w", key, err)
	}
	return p.claimTaken(ctx, next, meta.ETag, t0, prev, r.meta, state, o)
}

// claimTaken builds the claim of a successful take of prev (read with
// prevMeta, in state from) and checks again, as farFloorOf did before the
// write, that the floor is within MaxClockWait of this task's wall clock or
// recent (recentFloor): a clock stepped back meanwhile releases the ID.
func (p *Provider) claimTaken(ctx context.Context, next lease.Record, etag string, t0 time.Time, prev lease.Record, prevMeta lease.Meta, from lease.State, o claimOptions) (*Claim, error) {
	c := p.newClaim(next, etag, t0, p.rules.floor(prev), from, o)
	p.log.Info("acquired node ID", "nodeId", next.NodeID, "version", next.Version, "from", from.String(),
		"previousHolder", prev.Holder, "floor", prev.ReservedUntilMs)
	behind := floorAhead(prev.ReservedUntilMs, p.clock.Wall())
	if behind <= p.cfg.MaxClockWait || p.cfg.IssuesNoIDs || p.rules.recentFloor(p, prev, prevMeta, behind) {
		return c, nil
	}
	err := fmt.Errorf("%w: node %d's floor %d is %v ahead of this task's wall clock, more than MaxClockWait %v",
		ErrClockBehind, next.NodeID, prev.ReservedUntilMs, behind, p.cfg.MaxClockWait)
	closeCtx, cancel := p.withTimeout(context.WithoutCancel(ctx), p.t.RenewDeadline)
	defer cancel()
	_ = c.Close(closeCtx)
	return nil, err
}

// readBackTake resolves a take whose outcome is unknown: it succeeded if the
// object now carries our writeId.
func (p *Provider) readBackTake(ctx context.Context, key, writeID string) (lease.Meta, error) {
	body, meta, err := p.store.Get(ctx, key)
	if err != nil {
		return meta, err
	}
	id, _ := lease.ParseRecordKey(key)
	r, err := lease.DecodeRecord(body, id)
	if err != nil {
		return meta, err
	}
	if r.WriteID != writeID {
		return meta, lease.ErrPreconditionFailed
	}
	return meta, nil
}

// stamp sets the fields every write of a held lease renews: a new writeId, the
// human-readable times, and the reservation (never lowered; not raised with
// Config.IssuesNoIDs).
func (p *Provider) stamp(r *lease.Record, wall time.Time) {
	r.WriteID = lease.NewWriteID()
	r.RenewedAt, r.ExpiresAt = wall, wall.Add(p.t.Lease)
	if !p.cfg.IssuesNoIDs {
		r.ReservedUntilMs = max(r.ReservedUntilMs, wall.UnixMilli()+p.t.Lease.Milliseconds())
	}
}
