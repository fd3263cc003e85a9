package nodeid

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/nodeid/nodeid/lease"
)

// candidates returns the IDs below the cluster size in the order to visit them.
// OrderSpread starts at the task's offset and goes round, trying first the
// objects the listing shows untouched for longer than any lease (near-certain
// takes, confirmed by a GET), and last the IDs gossip knows to be live.
// OrderLowestFirst visits 0, 1, 2, ... as a Zeebe-style provider does.
func (p *Provider) candidates(v *clusterView) []int {
	order := make([]int, v.size)
	start := 0
	if p.cfg.Order == OrderSpread {
		start = p.spreadOffset(v.size)
	}
	for i := range order {
		order[i] = (start + i) % v.size
	}
	if p.cfg.Order != OrderSpread {
		return order
	}
	var known map[int]int64
	if p.cfg.Peers != nil {
		known = p.cfg.Peers.KnownNodes()
	}
	rank := func(id int) int {
		if _, live := known[id]; live {
			return 2
		}
		if o, ok := v.objects[id]; ok && lease.Expired(o.LastModified, v.listing.Date, p.cfg.MaxLeaseDuration, p.cfg.ClockMargin) {
			return 0
		}
		return 1
	}
	slices.SortStableFunc(order, func(a, b int) int { return cmp.Compare(rank(a), rank(b)) })
	return order
}

// readResult is one GET of a candidate.
type readResult struct {
	id   int
	body []byte
	meta lease.Meta
	err  error
}

// readAll GETs the objects of ids concurrently and returns the results in order.
func (p *Provider) readAll(ctx context.Context, ids []int) []readResult {
	out := make([]readResult, len(ids))
	if p.sim.sequential {
		for i, id := range ids {
			body, meta, err := p.store.Get(ctx, lease.RecordKey(id))
			out[i] = readResult{id: id, body: body, meta: meta, err: err}
		}
		return out
	}
	var wg sync.WaitGroup
	for i, id := range ids {
		wg.Go(func() {
			body, meta, err := p.store.Get(ctx, lease.RecordKey(id))
			out[i] = readResult{id: id, body: body, meta: meta, err: err}
		})
	}
	wg.Wait()
	return out
}

// takeFirst reads candidates in batches (1, 2, 4, ... up to MaxReadsInFlight, so
// that a likely first pick costs one GET) and takes the first free or expired one.
func (p *Provider) takeFirst(ctx context.Context, v *clusterView) (*Claim, error) {
	order := p.candidates(v)
	var errs []error
	batch := 1
	for i := 0; i < len(order); {
		n := min(batch, len(order)-i)
		for _, r := range p.readAll(ctx, order[i:i+n]) {
			if r.err != nil {
				if !errors.Is(r.err, lease.ErrNotFound) {
					errs = append(errs, fmt.Errorf("read %s: %w", lease.RecordKey(r.id), r.err))
				}
				continue
			}
			c, err := p.tryTake(ctx, r)
			if c != nil || errors.Is(err, ErrClockBehind) {
				return c, err
			}
			if err != nil {
				errs = append(errs, err)
			}
		}
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		i += n
		batch = min(2*batch, p.cfg.MaxReadsInFlight)
	}
	if len(errs) > 0 {
		return nil, fmt.Errorf("%w (and %d store errors, first: %w)", ErrClusterFull, len(errs), errs[0])
	}
	return nil, ErrClusterFull
}

// tryTake takes the object read in r if it is free or expired. It returns nil,
// nil when the object is held, corrupt, or was taken by someone else first.
func (p *Provider) tryTake(ctx context.Context, r readResult) (*Claim, error) {
	key := lease.RecordKey(r.id)
	prev, err := lease.DecodeRecord(r.body, r.id)
	if err == nil && prev.Lease() > p.cfg.MaxLeaseDuration {
		err = fmt.Errorf("%w: leaseMillis %d above the maximum lease %v", lease.ErrCorrupt, prev.LeaseMillis, p.cfg.MaxLeaseDuration)
	}
	if err != nil {
		p.log.Error("skipping a lease object that is not a valid lease; repair it with nodeidctl repair", "key", key, "err", err)
		p.cfg.Observer.Anomaly(key, err)
		return nil, nil
	}
	state := p.stateOf(&prev, r.meta)
	if state == lease.StateHeld {
		return nil, nil
	}
	wall := p.clock.Wall()
	next := lease.Record{
		NodeID: r.id, Holder: p.cfg.TaskID, Version: prev.Version + 1,
		LeaseMillis: p.cfg.LeaseDuration.Milliseconds(), ReservedUntilMs: prev.ReservedUntilMs,
		KnownNodes: p.knownNodes(),
	}
	p.stamp(&next, wall)
	body, err := next.Encode()
	if err != nil {
		return nil, err
	}
	t0 := p.clock.Now()
	meta, err := p.store.Update(ctx, key, body, r.meta.ETag)
	switch {
	case errors.Is(err, lease.ErrPreconditionFailed):
		return nil, nil
	case errors.Is(err, lease.ErrUnknownOutcome):
		if meta, err = p.readBackTake(ctx, key, next.WriteID); err != nil {
			return nil, nil // not ours, or unknown: if it landed after all, it expires
		}
	case err != nil:
		return nil, fmt.Errorf("take %s: %w", key, err)
	}
	floor := prev.ReservedUntilMs
	if p.sim.ignoreFloor {
		floor = 0
	}
	c := p.newClaim(next, meta.ETag, t0, floor, state)
	p.log.Info("acquired node ID", "nodeId", r.id, "version", next.Version, "from", state.String(),
		"previousHolder", prev.Holder, "floor", prev.ReservedUntilMs)
	if behind := time.Duration(prev.ReservedUntilMs-wall.UnixMilli()) * time.Millisecond; behind > p.cfg.MaxClockWait {
		err := fmt.Errorf("%w: node %d's floor %d is %v ahead of this task's wall clock, more than MaxClockWait %v",
			ErrClockBehind, r.id, prev.ReservedUntilMs, behind, p.cfg.MaxClockWait)
		closeCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), p.cfg.RenewDeadline)
		defer cancel()
		_ = c.Close(closeCtx)
		return nil, err
	}
	return c, nil
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
// human-readable times, and the Snowflake reservation (never lowered).
func (p *Provider) stamp(r *lease.Record, wall time.Time) {
	r.WriteID = lease.NewWriteID()
	r.RenewedAt, r.ExpiresAt = wall, wall.Add(p.cfg.LeaseDuration)
	r.ReservedUntilMs = max(r.ReservedUntilMs, wall.UnixMilli()+p.cfg.LeaseDuration.Milliseconds())
}

// knownNodes returns the gossip view to write into the record, or nil.
func (p *Provider) knownNodes() map[int]int64 {
	if p.cfg.Peers == nil {
		return nil
	}
	return p.cfg.Peers.KnownNodes()
}
