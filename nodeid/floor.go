package nodeid

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/nodeid/nodeid/lease"
)

// farFloor is a free or expired lease skipped because its floor (the
// predecessor's reservation) is further ahead of this task's wall clock than
// MaxClockWait.
type farFloor struct {
	id    int
	floor int64
	ahead time.Duration
	// recent: the floor is no further ahead than MaxClockWait plus what is
	// left of its writer's lease (recentFloor): what a release that kept its
	// reservation leaves (a Claim closed without SetIssuedFunc), not a clock
	// anomaly. Such an ID becomes takeable within that lease, so Acquire
	// waits for it.
	recent bool
}

// recentFloor reports whether a floor ahead of this task's wall clock is
// explained by the reservation of prev's writer, written age ago on the
// store's clock:
//
//	ahead <= MaxClockWait + prev's lease - age + StoreClockResolution + ClockMargin
//
// A holder reserves up to its wall clock plus its lease at each write; a
// release that keeps the reservation leaves it at most that far ahead of a
// clock that agrees with the holder's, less the time since. The record's age
// on the store's clock (Date - Last-Modified, m) overstates the real time
// since by up to the headers' resolution plus a stamp ClockMargin early: that
// slack is added back. Unknown age (a store that judges expiry itself, etcd,
// reports neither) counts as 0: the floor of a release just now. It only
// decides whether Acquire waits for the floor or reports ErrClockBehind;
// the take itself still waits for this clock to be within MaxClockWait of
// the floor.
func (p *Provider) recentFloor(prev lease.Record, m lease.Meta, ahead time.Duration) bool {
	age, ok := lease.StoreAge(m.LastModified, m.Date)
	if p.hooks.recentFloorOld() {
		return ok && ahead <= p.cfg.MaxClockWait+prev.Lease()-age
	}
	if !ok {
		age = 0
	}
	return ahead <= p.cfg.MaxClockWait+prev.Lease()-age+lease.StoreClockResolution+p.cfg.ClockMargin
}

// nearestRecent returns the local instant (Clock.Now) at which the nearest
// recent floor among far is within MaxClockWait of this task's clock; false
// when none is recent. (storeErrs: a store error hid a candidate; it only
// matters to the rule before issue 28, kept as a test hook.)
func (p *Provider) nearestRecent(far []farFloor, storeErrs bool) (time.Time, bool) {
	if p.hooks.recentFloorOld() && (storeErrs || slices.ContainsFunc(far, func(f farFloor) bool { return !f.recent })) {
		return time.Time{}, false
	}
	var nearest time.Duration
	found := false
	for _, f := range far {
		if f.recent && (!found || f.ahead < nearest) {
			nearest, found = f.ahead, true
		}
	}
	if !found {
		return time.Time{}, false
	}
	return p.clock.Now().Add(nearest - p.cfg.MaxClockWait), true
}

// farFloorOf returns prev's floor (the predecessor's reservation) as a
// farFloor when it is more than MaxClockWait ahead of this task's wall clock,
// nil when prev may be taken now (always, when this task issues no IDs:
// Config.IssuesNoIDs). Such a lease is not written (its version
// is not bumped): either its last holder had a clock far ahead (and then
// crashed), or this task's clock is behind; takeFirst tells the two apart
// only by whether another candidate could be taken, and reports it as an
// anomaly (log and Observer.Anomaly). A floor that a release a moment ago
// explains (recentFloor) is no anomaly: Acquire waits until it nears.
func (p *Provider) farFloorOf(r readResult, prev lease.Record, state lease.State) *farFloor {
	wall := p.clock.Wall()
	ahead := time.Duration(prev.ReservedUntilMs-wall.UnixMilli()) * time.Millisecond
	if ahead <= p.cfg.MaxClockWait || p.cfg.IssuesNoIDs {
		return nil
	}
	key := lease.RecordKey(r.id)
	if p.recentFloor(prev, r.meta, ahead) {
		p.log.Info("skipping a lease released a moment ago with its reservation kept, until this task's clock nears its floor",
			"key", key, "nodeId", r.id, "version", prev.Version, "floor", prev.ReservedUntilMs, "ahead", ahead)
		return &farFloor{id: r.id, floor: prev.ReservedUntilMs, ahead: ahead, recent: true}
	}
	err := fmt.Errorf("%w: %s lease of node %d has floor (reservedUntilMs) %d, %v ahead of this task's wall clock %s, more than MaxClockWait %v",
		ErrClockBehind, state, r.id, prev.ReservedUntilMs, ahead, wall.UTC().Format(time.RFC3339Nano), p.cfg.MaxClockWait)
	p.log.Warn("skipping a lease whose floor is far ahead of this task's wall clock (its last holder's clock was ahead, or this task's is behind)",
		"key", key, "nodeId", r.id, "state", state.String(), "version", prev.Version, "floor", prev.ReservedUntilMs, "ahead", ahead)
	p.cfg.Observer.Anomaly(key, err)
	return &farFloor{id: r.id, floor: prev.ReservedUntilMs, ahead: ahead}
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
		fmt.Fprintf(&b, " node %d (floor %d, %v ahead)", f.id, f.floor, f.ahead)
	}
	return b.String()
}
