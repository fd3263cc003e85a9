package nodeid

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/nodeid/nodeid/lease"
)

// maxRelists bounds the LISTs of one acquire round after losing a race (a
// create, or a CAS on a lease read free or expired): each gives a fresh view
// of which IDs moved meanwhile.
const maxRelists = 3

// errTaken means another task created or took the candidate first.
var errTaken = errors.New("nodeid: taken by another task")

// Candidate classes, tried in this order by OrderSpread.
const (
	classNeverCreated = iota // missing from a cluster that is not filled: take by create, 1 request
	classExpiring            // seen held earlier in this Acquire, unchanged since, and now old enough to be expired
	classStale               // untouched for longer than any lease: near-certainly free or expired
	classReleased            // rewritten since seen, and listed shorter by releaseShrink: probably released
	classOther               // held, or free since recently: a GET tells (listed short first, then oldest first)
	classMoved               // written since this Acquire's previous listing: probably just taken (or renewed)
	classKnownLive           // gossip knows the ID to be live, but the listing shows it unwritten for a lease
)

// releaseShrink is how much shorter than its held form a lease record must
// list to look released. A release writes the holder's last record with no
// holder, renewedAt or expiresAt (together at least 70 bytes more than the
// holder's name) and the same knownNodes; a renewal changes a few digits, and
// knownNodes by about ten bytes an entry that gossip adds. It only orders
// reads: a read judges every take.
const releaseShrink = 48

// shrunk reports whether the listing shows o at least releaseShrink bytes
// shorter than size; false when either length is unknown (0).
func shrunk(o lease.ObjectInfo, size int64) bool {
	return o.Size > 0 && size > 0 && o.Size <= size-releaseShrink
}

// watched remembers, across the rounds of one Acquire, the leases found held:
// the ETag and length each was read with and the lease it states. A later
// round visits first those that the listing shows unchanged since and old
// enough, by their own lease, to be expired: a near-certain take, still
// confirmed by a GET. And Acquire waits no longer than until the first lease
// seen held in the last round can be found expired (soonest, on the store's
// clock).
//
// It also keeps the previous listing: an object written since was probably
// just taken by another task (or renewed by its holder), so it is visited
// after the objects that did not move; unless it lists releaseShrink shorter
// than before, which is what a release looks like, and then it is visited
// early. That is what keeps a fleet re-taking a bucket of released IDs from
// reading the IDs its own members took a moment ago, and a task waiting in a
// full cluster from reading every renewal again.
type watched struct {
	held    map[int]heldLease
	soonest time.Time
	// floorNear is the local instant (Clock.Now) when the nearest floor
	// skipped as recent in the last round is within MaxClockWait; zero when
	// none was.
	floorNear time.Time
	listed    map[int]lease.ObjectInfo // by ID in the previous listing; nil before the first
}

// heldLease is one lease found held: the ETag and length it was read with,
// and its lease.
type heldLease struct {
	etag  string
	size  int64
	lease time.Duration
}

// note records a lease found held in r.
func (w *watched) note(r readResult, leaseDur, clockMargin time.Duration) {
	w.held[r.id] = heldLease{etag: r.meta.ETag, size: int64(len(r.body)), lease: leaseDur}
	w.soon(r.meta.LastModified, leaseDur, clockMargin)
}

// soon lowers w.soonest to the first instant a lease written at lastModified
// could be found expired.
func (w *watched) soon(lastModified time.Time, leaseDur, clockMargin time.Duration) {
	if at := lease.FirstExpiredDate(lastModified, leaseDur, clockMargin); !at.IsZero() && (w.soonest.IsZero() || at.Before(w.soonest)) {
		w.soonest = at
	}
}

// candidates returns the IDs below the cluster size that are not tried yet, in
// the order to visit them: OrderSpread visits never-created IDs first, then
// the leases seen held earlier in this Acquire that the listing shows unchanged
// and expired by their own lease, then objects the listing shows untouched for
// longer than any lease (each confirmed by a GET), then those rewritten and
// listed shorter since (released, probably), then the rest (those listed
// short first, then those written longest ago), then the objects written since
// this Acquire's previous listing, and last the IDs gossip knows to be live
// (known) whose leases the listing shows unwritten for longer than
// LeaseDuration, each class in the task's spread permutation; gossip's other
// live IDs are left out (liveByGossip), and when gossip ranks this task among
// several waiting ones, the first class is visited from its rank
// (spreadByRank). Objects this Acquire read held that are still held by the
// listing's lights are left out (see stillHeld). OrderLowestFirst visits 0,
// 1, 2, ... as a Zeebe-style provider does. It records the listing in w for
// the next call.
func (p *Provider) candidates(v *clusterView, tried map[int]bool, w *watched, known map[int]int64) []int {
	previous := w.listed
	w.listed = maps.Clone(v.objects)
	var order []int
	for _, id := range p.visitOrder(v.size) {
		if !tried[id] {
			order = append(order, id)
		}
	}
	if p.cfg.Order != OrderSpread {
		return order
	}
	class := func(id int) int {
		o, exists := v.objects[id]
		h, seen := w.held[id]
		before, listedBefore := previous[id]
		switch _, live := known[id]; {
		case live:
			return classKnownLive
		case !exists:
			return classNeverCreated
		case seen && h.etag == o.ETag && lease.ListedExpired(o, v.listing.Date, h.lease, p.cfg.ClockMargin):
			return classExpiring
		case lease.ListedExpired(o, v.listing.Date, p.cfg.MaxLeaseDuration, p.cfg.ClockMargin):
			return classStale
		case seen && h.etag != o.ETag && shrunk(o, h.size),
			listedBefore && before.ETag != o.ETag && shrunk(o, before.Size):
			return classReleased
		case listedBefore && before.ETag != o.ETag:
			return classMoved
		default:
			return classOther
		}
	}
	order = slices.DeleteFunc(order, func(id int) bool {
		return w.stillHeld(id, v, p.cfg.ClockMargin) || p.liveByGossip(id, v, known)
	})
	// Within classOther, the objects listed short (a free record is shorter
	// than a held one) first, then those written longest ago (by whole
	// seconds, so that the spread order still breaks the ties): after a
	// fleet's release, the IDs its successors took a moment ago are the
	// longest and newest, and those nobody took yet keep the release's
	// shorter body and older stamp. Each key is computed once.
	type candidate struct {
		id, class int
		long      int       // classOther: 1 when listed releaseShrink or more above the shortest
		second    time.Time // classOther: last written, whole seconds
	}
	least := shortest(v.objects)
	cands := make([]candidate, len(order))
	for i, id := range order {
		c := candidate{id: id, class: class(id)}
		if o := v.objects[id]; c.class == classOther {
			if least > 0 && o.Size >= least+releaseShrink {
				c.long = 1
			}
			c.second = o.LastModified.Truncate(time.Second)
		}
		cands[i] = c
	}
	slices.SortStableFunc(cands, func(a, b candidate) int {
		if c := cmp.Compare(a.class, b.class); c != 0 || a.class != classOther {
			return c
		}
		if c := cmp.Compare(a.long, b.long); c != 0 {
			return c
		}
		return a.second.Compare(b.second)
	})
	for i, c := range cands {
		order[i] = c.id
	}
	p.spreadByRank(order, func(i int) bool { return cands[i].class == cands[0].class && cands[i].long == cands[0].long })
	return order
}

// liveByGossip reports whether gossip knows id to be held by a live member
// and the listing shows its lease written within this task's LeaseDuration:
// such a lease is not read. One unwritten for longer is read last (its holder
// may be alive in gossip but no longer renewing).
func (p *Provider) liveByGossip(id int, v *clusterView, known map[int]int64) bool {
	if _, live := known[id]; !live {
		return false
	}
	o, exists := v.objects[id]
	return exists && !lease.ListedExpired(o, v.listing.Date, p.cfg.LeaseDuration, p.cfg.ClockMargin)
}

// spreadByRank reorders the first group of order (the best candidates, those
// i with same(i)) when gossip ranks this task among several waiting ones:
// sorted by ID, an order every task shares, and rotated to start at this
// task's rank, so that tasks waiting together each read and take a different
// ID first instead of racing for one.
func (p *Provider) spreadByRank(order []int, same func(i int) bool) {
	r, of := p.rank()
	if of < 2 || len(order) == 0 {
		return
	}
	n := 1
	for n < len(order) && same(n) {
		n++
	}
	group := order[:n]
	slices.Sort(group)
	k := r % n // rotate left by k: three reversals, in place
	slices.Reverse(group[:k])
	slices.Reverse(group[k:])
	slices.Reverse(group)
}

// shortest returns the smallest listed length among objects; 0 when none is
// known (every object then counts as short).
func shortest(objects map[int]lease.ObjectInfo) int64 {
	var least int64
	for _, o := range objects {
		if o.Size > 0 && (least == 0 || o.Size < least) {
			least = o.Size
		}
	}
	return least
}

// rewrittenAlike reports whether the listing shows o rewritten since it was
// read held as h, to about the same length (both lengths known): renewed by
// its holder, or taken by another, but not released.
func rewrittenAlike(o lease.ObjectInfo, h heldLease) bool {
	return h.etag != o.ETag && o.Size > 0 && h.size > 0 && !shrunk(o, h.size)
}

// stillHeld reports whether the listing shows id still held as this Acquire
// read it, and not yet old enough to be expired by its lease: either
// unchanged (the same ETag: byte for byte what was read, as every write has a
// new writeId), or rewritten to about the same length (renewed by its
// holder, or taken by another; a release would have made it releaseShrink
// shorter). Reading it again would most likely tell nothing, so it is not
// visited; the instant it could be found expired counts for Acquire's wait,
// and once its listed age passes its lease it is visited again. A release the
// length cannot show is so found one lease later at worst.
func (w *watched) stillHeld(id int, v *clusterView, clockMargin time.Duration) bool {
	o, exists := v.objects[id]
	h, seen := w.held[id]
	if !exists || !seen || lease.ListedExpired(o, v.listing.Date, h.lease, clockMargin) {
		return false
	}
	if h.etag != o.ETag && !rewrittenAlike(o, h) {
		return false
	}
	w.soon(o.LastModified, h.lease, clockMargin)
	return true
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
	read := func(i, id int) {
		body, meta, err := p.store.Get(ctx, lease.RecordKey(id))
		if err == nil {
			p.observeDate(meta.Date, p.clock.Now())
		}
		out[i] = readResult{id: id, body: body, meta: meta, err: err}
	}
	if p.hooks.isSequential() {
		for i, id := range ids {
			read(i, id)
		}
		return out
	}
	var wg sync.WaitGroup
	for i, id := range ids {
		wg.Go(func() { read(i, id) })
	}
	wg.Wait()
	return out
}

// farFloor is a free or expired lease skipped because its floor (the
// predecessor's reservation) is further ahead of this task's wall clock than
// MaxClockWait.
type farFloor struct {
	id    int
	floor int64
	ahead time.Duration
	// recent: the floor is no further ahead than MaxClockWait plus what is
	// left of its writer's lease (by the record's age on the store's clock):
	// what a release that kept its reservation leaves (a Claim closed
	// without SetIssuedFunc), not a clock anomaly. Such an ID becomes
	// takeable within that lease, so Acquire waits for it.
	recent bool
}

// recentFloor reports whether a floor ahead of this task's wall clock is
// explained by the reservation of prev's writer, written age ago on the
// store's clock: ahead <= MaxClockWait + prev's lease - age. A holder reserves
// up to its wall clock plus its lease at each write; a release that keeps the
// reservation leaves it at most that far ahead of a clock that agrees with
// the holder's. Unknown age (a response without Date or Last-Modified): no.
func (p *Provider) recentFloor(prev lease.Record, m lease.Meta, ahead time.Duration) bool {
	if m.Date.IsZero() || m.LastModified.IsZero() {
		return false
	}
	age := m.Date.Sub(m.LastModified)
	return ahead <= p.cfg.MaxClockWait+prev.Lease()-age
}

// takeFirst visits the candidates and takes the first free or expired ID. A
// never-created ID is taken by creating it held; existing objects are read in
// batches (1, 2, 4, ... up to MaxReadsInFlight, so that a likely first pick
// costs one GET) and taken by CAS. After losing a create race it lists again,
// at most maxRelists times, to see which never-created IDs are left.
//
// A free or expired lease whose floor is too far ahead of this task's wall
// clock is skipped, not written (see tryTake). When such leases were the only
// ones that could be taken, and no store error hid another candidate,
// takeFirst fails with ErrClockBehind naming this task's clock: either it is
// behind, or those leases' last holders' clocks were ahead; Acquire does not
// retry then.
func (p *Provider) takeFirst(ctx context.Context, v *clusterView, w *watched) (*Claim, error) {
	tried := map[int]bool{}
	var errs []error
	var far []farFloor
	for relists := 0; ; relists++ {
		c, lostRace, err := p.visit(ctx, v, tried, &errs, &far, w)
		if c != nil || err != nil {
			return c, err
		}
		if !lostRace || relists == maxRelists {
			break
		}
		l, err := p.store.List(ctx)
		if err != nil {
			errs = append(errs, fmt.Errorf("list: %w", err))
			break
		}
		p.observeDate(l.Date, p.clock.Now())
		v.index(l)
	}
	if len(errs) == 0 && len(far) > 0 && !slices.ContainsFunc(far, func(f farFloor) bool { return !f.recent }) {
		nearest := slices.MinFunc(far, func(a, b farFloor) int { return cmp.Compare(a.ahead, b.ahead) })
		w.floorNear = p.clock.Now().Add(nearest.ahead - p.cfg.MaxClockWait)
		return nil, fmt.Errorf("%w: %s, released a moment ago with their reservations kept (a Claim closed without SetIssuedFunc): they become takeable as this task's clock nears them",
			ErrClusterFull, p.describeFar(far))
	}
	switch {
	case len(errs) > 0 && len(far) > 0:
		return nil, fmt.Errorf("%w (and %d store errors, first: %w; %s)", ErrClusterFull, len(errs), errs[0], p.describeFar(far))
	case len(errs) > 0:
		return nil, fmt.Errorf("%w (and %d store errors, first: %w)", ErrClusterFull, len(errs), errs[0])
	case len(far) > 0:
		return nil, fmt.Errorf("%w: this task's wall clock reads %s, and %s; fix this task's clock if it is behind; if instead their last holder's clock was ahead, its IDs may carry timestamps up to those floors, and the IDs become takeable once this clock is within MaxClockWait of them",
			ErrClockBehind, p.clock.Wall().UTC().Format(time.RFC3339Nano), p.describeFar(far))
	}
	return nil, ErrClusterFull
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

// visit makes one pass over the untried candidates. lostRace reports a create
// or a take lost to another task: the pass stops there, as the listing is
// stale, and the caller lists again rather than read on near the winner.
func (p *Provider) visit(ctx context.Context, v *clusterView, tried map[int]bool, errs *[]error, far *[]farFloor, w *watched) (c *Claim, lostRace bool, err error) {
	known := p.knownNodes() // one view of gossip per pass
	order := p.candidates(v, tried, w, known)
	batch := 1
	for i := 0; i < len(order); {
		if ctx.Err() != nil {
			return nil, false, ctx.Err()
		}
		if _, exists := v.objects[order[i]]; !exists {
			id := order[i]
			tried[id] = true
			i++
			if v.manifest.Filled || known[id] > 0 {
				// Deleted (the cluster is filled, or gossip has seen a
				// version of it): never taken, never recreated (see
				// noteDeleted).
				continue
			}
			c, err := p.tryCreate(ctx, id)
			switch {
			case c != nil:
				return c, false, nil
			case errors.Is(err, errTaken):
				return nil, true, nil
			case err != nil:
				*errs = append(*errs, err)
			}
			continue
		}
		j := i
		for j < len(order) && j-i < batch {
			if _, exists := v.objects[order[j]]; !exists {
				break
			}
			j++
		}
		for _, r := range p.readAll(ctx, order[i:j]) {
			tried[r.id] = true
			if r.err != nil {
				if !errors.Is(r.err, lease.ErrNotFound) {
					*errs = append(*errs, fmt.Errorf("read %s: %w", lease.RecordKey(r.id), r.err))
				}
				continue
			}
			c, ff, err := p.tryTake(ctx, r, w)
			if c != nil || errors.Is(err, ErrClockBehind) {
				return c, false, err
			}
			if errors.Is(err, errTaken) || w.movedHeld(v, r) {
				return nil, true, nil
			}
			if ff != nil {
				*far = append(*far, *ff)
			}
			if err != nil {
				*errs = append(*errs, err)
			}
		}
		i = j
		batch = min(2*batch, p.cfg.MaxReadsInFlight)
	}
	return nil, false, nil
}

// movedHeld reports whether the read r found held (noted in w) an object
// whose ETag differs from the listing's: it was written since the listing
// (taken, most likely), so the listing is stale and reading on from it would
// find more such objects.
func (w *watched) movedHeld(v *clusterView, r readResult) bool {
	o, listed := v.objects[r.id]
	h, held := w.held[r.id]
	return listed && held && h.etag == r.meta.ETag && o.ETag != r.meta.ETag
}

// tryCreate takes a never-created ID by creating its lease object held, with
// version 1 and no floor (no one ever issued IDs with it).
func (p *Provider) tryCreate(ctx context.Context, id int) (*Claim, error) {
	next := lease.Record{NodeID: id, Holder: p.cfg.TaskID, Value: p.cfg.Value, Version: 1,
		LeaseMillis: p.cfg.LeaseDuration.Milliseconds(), KnownNodes: p.knownNodes()}
	p.stamp(&next, p.clock.Wall())
	body, err := next.Encode()
	if err != nil {
		return nil, err
	}
	key := lease.RecordKey(id)
	t0 := p.clock.Now()
	meta, err := lease.CreateLive(ctx, p.store, key, body, next.LiveFor())
	switch {
	case errors.Is(err, lease.ErrPreconditionFailed):
		return nil, errTaken
	case errors.Is(err, lease.ErrUnknownOutcome):
		if meta, err = p.readBackTake(ctx, key, next.WriteID); err != nil {
			return nil, errTaken // not ours, or unknown: if it landed after all, it expires
		}
	case err != nil:
		return nil, fmt.Errorf("create %s: %w", key, err)
	}
	return p.claimTaken(ctx, next, meta.ETag, t0, lease.Record{NodeID: id}, lease.StateFree)
}

// tryTake takes the object read in r if it is free or expired. It returns no
// claim and no error when the object is held (noted in w) or corrupt, and
// errTaken when someone else wrote it first.
//
// A free or expired lease whose floor is more than MaxClockWait ahead of this
// task's wall clock is not written (its version is not bumped): it is reported
// as an anomaly (log and Observer.Anomaly) and returned as a farFloor, so that
// Acquire tries the next candidate. Either the lease's last holder had a clock
// far ahead (and then crashed), or this task's clock is behind; takeFirst
// tells the two apart only by whether another candidate could be taken. A
// floor that a release a moment ago explains (recentFloor) is no anomaly:
// it is returned as a recent farFloor, and Acquire waits until it nears.
func (p *Provider) tryTake(ctx context.Context, r readResult, w *watched) (*Claim, *farFloor, error) {
	key := lease.RecordKey(r.id)
	prev, err := lease.DecodeRecord(r.body, r.id)
	if err == nil && prev.Lease() > p.cfg.MaxLeaseDuration {
		err = fmt.Errorf("%w: leaseMillis %d above the maximum lease %v", lease.ErrCorrupt, prev.LeaseMillis, p.cfg.MaxLeaseDuration)
	}
	if err != nil {
		p.log.Error("skipping a lease object that is not a valid lease; repair it with nodeidctl repair", "key", key, "err", err)
		p.cfg.Observer.Anomaly(key, err)
		return nil, nil, nil
	}
	if prev.Holder == RecreatedHolder {
		err := fmt.Errorf("%w: lease object %s was recreated after a deletion by an older nodeid, with a floor from its recreator's wall clock: restore it with nodeidctl repair --id %d --floor MS",
			lease.ErrCorrupt, key, r.id)
		p.log.Error("skipping a recreated lease object; repair it with nodeidctl repair", "key", key, "err", err)
		p.cfg.Observer.Anomaly(key, err)
		return nil, nil, nil
	}
	state := p.stateOf(&prev, r.meta)
	if state == lease.StateHeld {
		w.note(r, prev.Lease(), p.cfg.ClockMargin)
		return nil, nil, nil
	}
	wall := p.clock.Wall()
	if ahead := time.Duration(prev.ReservedUntilMs-wall.UnixMilli()) * time.Millisecond; ahead > p.cfg.MaxClockWait {
		if p.recentFloor(prev, r.meta, ahead) {
			p.log.Info("skipping a lease released a moment ago with its reservation kept, until this task's clock nears its floor",
				"key", key, "nodeId", r.id, "version", prev.Version, "floor", prev.ReservedUntilMs, "ahead", ahead)
			return nil, &farFloor{id: r.id, floor: prev.ReservedUntilMs, ahead: ahead, recent: true}, nil
		}
		err := fmt.Errorf("%w: %s lease of node %d has floor (reservedUntilMs) %d, %v ahead of this task's wall clock %s, more than MaxClockWait %v",
			ErrClockBehind, state, r.id, prev.ReservedUntilMs, ahead, wall.UTC().Format(time.RFC3339Nano), p.cfg.MaxClockWait)
		p.log.Warn("skipping a lease whose floor is far ahead of this task's wall clock (its last holder's clock was ahead, or this task's is behind)",
			"key", key, "nodeId", r.id, "state", state.String(), "version", prev.Version, "floor", prev.ReservedUntilMs, "ahead", ahead)
		p.cfg.Observer.Anomaly(key, err)
		return nil, &farFloor{id: r.id, floor: prev.ReservedUntilMs, ahead: ahead}, nil
	}
	next := lease.Record{
		NodeID: r.id, Holder: p.cfg.TaskID, Value: p.cfg.Value, Version: prev.Version + 1,
		LeaseMillis: p.cfg.LeaseDuration.Milliseconds(), ReservedUntilMs: prev.ReservedUntilMs,
		KnownNodes: p.knownNodes(),
	}
	p.stamp(&next, wall)
	body, err := next.Encode()
	if err != nil {
		return nil, nil, err
	}
	t0 := p.clock.Now()
	meta, err := lease.UpdateLive(ctx, p.store, key, body, r.meta.ETag, next.LiveFor())
	switch {
	case errors.Is(err, lease.ErrPreconditionFailed):
		return nil, nil, errTaken
	case errors.Is(err, lease.ErrUnknownOutcome):
		if meta, err = p.readBackTake(ctx, key, next.WriteID); err != nil {
			return nil, nil, errTaken // not ours, or unknown: if it landed after all, it expires
		}
	case err != nil:
		return nil, nil, fmt.Errorf("take %s: %w", key, err)
	}
	c, err := p.claimTaken(ctx, next, meta.ETag, t0, prev, state)
	return c, nil, err
}

// claimTaken builds the claim of a successful take of prev (in state from) and
// checks that this task's wall clock is not too far behind the floor. tryTake
// skips a far floor before writing; this check after the write catches a wall
// clock stepped back meanwhile, and releases the ID.
func (p *Provider) claimTaken(ctx context.Context, next lease.Record, etag string, t0 time.Time, prev lease.Record, from lease.State) (*Claim, error) {
	floor := prev.ReservedUntilMs
	if p.hooks.floorIgnored() {
		floor = 0
	}
	c := p.newClaim(next, etag, t0, floor, from)
	p.log.Info("acquired node ID", "nodeId", next.NodeID, "version", next.Version, "from", from.String(),
		"previousHolder", prev.Holder, "floor", prev.ReservedUntilMs)
	behind := time.Duration(prev.ReservedUntilMs-p.clock.Wall().UnixMilli()) * time.Millisecond
	if behind <= p.cfg.MaxClockWait {
		return c, nil
	}
	err := fmt.Errorf("%w: node %d's floor %d is %v ahead of this task's wall clock, more than MaxClockWait %v",
		ErrClockBehind, next.NodeID, prev.ReservedUntilMs, behind, p.cfg.MaxClockWait)
	closeCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), p.cfg.RenewDeadline)
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
// human-readable times, and the Snowflake reservation (never lowered).
func (p *Provider) stamp(r *lease.Record, wall time.Time) {
	r.WriteID = lease.NewWriteID()
	r.RenewedAt, r.ExpiresAt = wall, wall.Add(p.cfg.LeaseDuration)
	r.ReservedUntilMs = max(r.ReservedUntilMs, wall.UnixMilli()+p.cfg.LeaseDuration.Milliseconds())
}

// knownNodes returns gossip's view (node ID -> highest version seen): written
// into records, and used to tell a deleted object from a never-created one.
// nil without Peers. It builds a new map at each call.
func (p *Provider) knownNodes() map[int]int64 {
	if p.cfg.Peers == nil {
		return nil
	}
	return p.cfg.Peers.KnownNodes()
}
