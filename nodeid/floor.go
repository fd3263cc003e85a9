package nodeid

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/nodeid/nodeid/lease"
)

// farFloor is a free or expired lease skipped because its floor (prev's
// reservation) is further ahead of this task's wall clock than MaxClockWait:
// the read r, its record prev and state, on which a take of it writes.
type farFloor struct {
	r     readResult
	prev  lease.Record
	state lease.State
	ahead time.Duration
	// recent: its last holder's reservation explains the floor
	// (recentFloor); takeFirst takes it when nothing else is takeable.
	recent bool
}

// recentFloor reports whether a floor ahead of this task's wall clock is
// explained by the reservation of prev's writer, written age ago (from m, 0
// when unknown) on the store's clock (docs/evidence/design.md section 7.2):
//
//	ahead <= MaxClockWait + prev's lease - age + StoreClockResolution + ClockMargin
func (p *Provider) recentFloor(prev lease.Record, m lease.Meta, ahead time.Duration) bool {
	age, _ := lease.StoreAge(m.LastModified, m.Date) // 0 when unknown
	return ahead <= p.cfg.MaxClockWait+prev.Lease()-age+lease.StoreClockResolution+p.cfg.ClockMargin
}

// nearestRecent returns the recent floor among far that this task's clock
// nears first; false when none is recent. Only a mutant rule reads storeErrs
// (a store error hid a candidate).
func (p *Provider) nearestRecent(far []farFloor, _ bool) (farFloor, bool) {
	var nearest farFloor
	found := false
	for _, f := range far {
		if f.recent && (!found || f.ahead < nearest.ahead) {
			nearest, found = f, true
		}
	}
	return nearest, found
}

// floorAhead returns how far the floor floorMs (Unix ms) is ahead of wall.
func floorAhead(floorMs int64, wall time.Time) time.Duration {
	return time.Duration(floorMs-wall.UnixMilli()) * time.Millisecond
}

// farFloorOf returns prev's floor as a farFloor when it is more than
// MaxClockWait ahead of this task's wall clock, nil when prev may be taken now
// (always, with Config.IssuesNoIDs). A floor recentFloor does not explain is
// reported as an anomaly (log and Observer.Anomaly).
func (p *Provider) farFloorOf(r readResult, prev lease.Record, state lease.State) *farFloor {
	wall := p.clock.Wall()
	ahead := floorAhead(prev.ReservedUntilMs, wall)
	if ahead <= p.cfg.MaxClockWait || p.cfg.IssuesNoIDs {
		return nil
	}
	key := lease.RecordKey(r.id)
	f := &farFloor{r: r, prev: prev, state: state, ahead: ahead}
	if p.rules.recentFloor(p, prev, r.meta, ahead) {
		p.log.Info("passing over a lease whose floor its last holder's reservation explains: taken only if no other ID is",
			"key", key, "nodeId", r.id, "version", prev.Version, "floor", prev.ReservedUntilMs, "ahead", ahead)
		f.recent = true
		return f
	}
	err := fmt.Errorf("%w: %s lease of node %d has floor (reservedUntilMs) %d, %v ahead of this task's wall clock %s, more than MaxClockWait %v",
		ErrClockBehind, state, r.id, prev.ReservedUntilMs, ahead, wall.UTC().Format(time.RFC3339Nano), p.cfg.MaxClockWait)
	p.log.Warn("skipping a lease whose floor is far ahead of this task's wall clock (its last holder's clock was ahead, or this task's is behind)",
		"key", key, "nodeId", r.id, "state", state.String(), "version", prev.Version, "floor", prev.ReservedUntilMs, "ahead", ahead)
	p.cfg.Observer.Anomaly(key, err)
	return f
}

// describeFar describes the leases skipped for their far floors.
func (p *Provider) describeFar(far []farFloor) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%d free or expired node ID(s) were skipped for a floor more than MaxClockWait %v ahead of it:", len(far), p.cfg.MaxClockWait)
	for i, f := range far {
		if i == 5 {
			fmt.Fprintf(&b, " and %d more", len(far)-i)
			break
		}
		fmt.Fprintf(&b, " node %d (floor %d, %v ahead)", f.r.id, f.prev.ReservedUntilMs, f.ahead)
	}
	return b.String()
}

// takeRecent takes f, a recent floor, by the ordinary take on the read that
// passed it over. A lost race or a store error leaves Acquire to look again.
func (p *Provider) takeRecent(ctx context.Context, f farFloor, o claimOptions) (*Claim, error) {
	c, err := p.rules.take(p, ctx, f.r, f.prev, f.state, o)
	switch {
	case c != nil:
		return c, nil
	case errors.Is(err, errTaken):
		return nil, fmt.Errorf("%w: node %d, the only ID left (its floor %v ahead), was taken by another task first", ErrClusterFull, f.r.id, f.ahead)
	case err != nil:
		return nil, err
	}
	return nil, fmt.Errorf("%w: node %d not taken", ErrClusterFull, f.r.id) // a mutant take (rules.take) takes nothing
}

// awaitFloor holds c, taken with a floor more than MaxClockWait ahead of this
// task's wall clock, until the clock is within MaxClockWait of it; it
// releases c when the clock steps back more than MaxClockWait meanwhile
// (ErrClockBehind) or ctx ends (docs/evidence/design.md section 7.2). round
// is Acquire's, for WaitObserver.
func (p *Provider) awaitFloor(ctx context.Context, c *Claim, round int) error {
	if p.cfg.IssuesNoIDs {
		return nil
	}
	var limit time.Duration
	for {
		ahead := floorAhead(c.floor, p.clock.Wall())
		if ahead <= p.cfg.MaxClockWait {
			return nil
		}
		if limit == 0 {
			limit = ahead + p.cfg.MaxClockWait
			p.log.Info("holding node ID until this task's clock nears its floor (the last holder's reservation)",
				"nodeId", c.id, "version", c.version, "floor", c.floor, "ahead", ahead)
		}
		var err error
		switch {
		case ahead > limit:
			err = fmt.Errorf("%w: node %d's floor %d is %v ahead of this task's wall clock, which stepped back while it waited for it",
				ErrClockBehind, c.id, c.floor, ahead)
		case c.Err() != nil:
			return fmt.Errorf("node %d lost while this task waited for its floor: %w", c.id, c.Err())
		default:
			wait := ahead - p.cfg.MaxClockWait
			if o, ok := p.cfg.Observer.(WaitObserver); ok {
				o.AcquireWaiting(round, &AwaitingFloorError{NodeID: c.id, Version: c.version, FloorMs: c.floor,
					MaxClockWait: p.cfg.MaxClockWait, Wait: wait}, wait)
			}
			if err = sleepOrWake(ctx, p.clock, wait, c.Done()); err == nil {
				continue
			}
		}
		closeCtx, cancel := p.withTimeout(context.WithoutCancel(ctx), p.t.RenewDeadline)
		_ = c.Close(closeCtx)
		cancel()
		return err
	}
}
