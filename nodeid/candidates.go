package nodeid

import (
	"cmp"
	"maps"
	"slices"
	"time"

	"github.com/nodeid/nodeid/lease"
)

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
// list to look released (docs/evidence/design.md section 7.2); knownNodes
// grows by about ten bytes an entry. It only orders reads: a read judges
// every take.
const releaseShrink = 48

// shrunk reports whether the listing shows o at least releaseShrink bytes
// shorter than size; false when either length is unknown (0).
func shrunk(o lease.ObjectInfo, size int64) bool {
	return o.Size > 0 && size > 0 && o.Size <= size-releaseShrink
}

// watched remembers, across the rounds of one Acquire, the leases found held
// and the previous listing, by which a round orders its candidates, and the
// soonest instant a lease seen held can be found expired, on the store's
// clock, which bounds Acquire's wait (docs/evidence/design.md section 7.2).
type watched struct {
	held    map[int]heldLease
	soonest time.Time
	listed  map[int]lease.ObjectInfo // by ID in the previous listing; nil before the first
	// suspects are the held leases of this round that this task may
	// challenge (read mode, challenge.go), in the order read.
	suspects []suspect
	// challenged maps each node ID this Acquire challenged to the version
	// it challenged, which gossip's word alone never challenges again.
	challenged map[int]int64
	// joined maps each node ID whose holder's gossip address this Acquire
	// joined before a challenge (GossipJoiner) to that holder's version.
	joined map[int]int64
	// gossipFree holds the IDs gossip showed free at this Acquire's last
	// look, or start (newWatched, takeFreed). Nil without PeerHints.
	gossipFree map[int]bool
	opts       claimOptions // the Acquire's ClaimOptions
}

// heldLease is one lease found held: the ETag and length it was read with,
// how long after its last write it may be judged expired (lease) and looked
// at again (look: sooner in read mode, for a late backstop), its holder and
// version.
type heldLease struct {
	etag    string
	size    int64
	lease   time.Duration
	look    time.Duration
	holder  string
	version int64
}

// note records rec, a lease found held in r, to be looked at again look
// after its last write (at most its TakeableAfter).
func (w *watched) note(r readResult, rec lease.Record, look, clockMargin time.Duration) {
	h := heldLease{etag: r.meta.ETag, size: int64(len(r.body)), lease: rec.TakeableAfter(), holder: rec.Holder, version: rec.Version}
	h.look = min(look, h.lease)
	w.held[r.id] = h
	w.soon(r.meta.LastModified, h.look, clockMargin)
}

// soon lowers w.soonest to the first instant a lease written at lastModified
// could be found expired.
func (w *watched) soon(lastModified time.Time, leaseDur, clockMargin time.Duration) {
	if at := lease.FirstExpiredDate(lastModified, leaseDur, clockMargin); !at.IsZero() && (w.soonest.IsZero() || at.Before(w.soonest)) {
		w.soonest = at
	}
}

// candidates returns the IDs below the cluster size that are not tried yet, in
// the order to visit them: by class for OrderSpread (spreadByRank orders the
// first), leaving out those rules.dropped drops, given gossip's live IDs
// (known). It records the listing in w for the next call.
func (p *Provider) candidates(v *clusterView, tried map[int]bool, w *watched, known map[int]int64) []int {
	previous := w.listed
	w.listed = maps.Clone(v.objects)
	order := slices.DeleteFunc(v.ids(p), func(id int) bool { return tried[id] })
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
		case lease.ListedExpired(o, v.listing.Date, p.t.MaxLeaseDuration, p.cfg.ClockMargin):
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
	least, longest := listedSizes(v.objects)
	order = slices.DeleteFunc(order, func(id int) bool { return p.rules.dropped(p, id, v, w, known, longest) })
	// Within classOther, the objects listed short (a free record is shorter
	// than a held one) first, then those written longest ago (by whole
	// seconds, so that the spread order breaks the ties): after a fleet's
	// release, the IDs its successors just took are the longest and newest.
	type candidate struct {
		id, class int
		long      int       // classOther: 1 when listed releaseShrink or more above the shortest
		second    time.Time // classOther: last written, whole seconds
	}
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
	slices.SortStableFunc(cands, func(a, b candidate) int { // long, second: zero outside classOther
		return cmp.Or(cmp.Compare(a.class, b.class), cmp.Compare(a.long, b.long), a.second.Compare(b.second))
	})
	for i, c := range cands {
		order[i] = c.id
	}
	p.spreadByRank(order, func(i int) bool { return cands[i].class == cands[0].class && cands[i].long == cands[0].long })
	return order
}

// dropped reports whether candidates leaves id out: a lease this Acquire
// read held that the listing still shows held (unless gossip shows its
// holder dead: read again, to challenge), or one gossip knows held by a live
// member that the listing shows written within this task's lease and not
// releaseShrink shorter than the longest object (a free record, which gossip
// lags behind; docs/evidence/design.md section 7.4).
func (p *Provider) dropped(id int, v *clusterView, w *watched, known map[int]int64, longest int64) bool {
	if w.stillHeld(id, v, p.cfg.ClockMargin) {
		h := w.held[id]
		return !p.deadByGossip(id, h.holder, h.version, known, w)
	}
	_, live := known[id]
	o, exists := v.objects[id]
	return live && exists && !lease.ListedExpired(o, v.listing.Date, p.t.Lease, p.cfg.ClockMargin) && !shrunk(o, longest)
}

// spreadByRank sorts by ID the first group of order (those i with same(i))
// and rotates it to start at this task's rank among several waiting ones, so
// that tasks waiting together each read a different ID first.
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

// listedSizes returns the smallest and the largest listed length among
// objects; 0 for either when no length is known (every object then counts
// as short).
func listedSizes(objects map[int]lease.ObjectInfo) (least, most int64) {
	for _, o := range objects {
		if o.Size > 0 && (least == 0 || o.Size < least) {
			least = o.Size
		}
		most = max(most, o.Size)
	}
	return least, most
}

// stillHeld reports whether the listing shows id still held as this Acquire
// read it (unchanged, or rewritten to about the same length) and not yet due
// for another look (docs/evidence/design.md section 7.2); then the instant it
// could be found expired counts for Acquire's wait.
func (w *watched) stillHeld(id int, v *clusterView, clockMargin time.Duration) bool {
	o, exists := v.objects[id]
	h, seen := w.held[id]
	if !exists || !seen || lease.ListedExpired(o, v.listing.Date, h.look, clockMargin) {
		return false
	}
	if alike := o.Size > 0 && h.size > 0 && !shrunk(o, h.size); h.etag != o.ETag && !alike {
		return false
	}
	w.soon(o.LastModified, h.look, clockMargin)
	return true
}
