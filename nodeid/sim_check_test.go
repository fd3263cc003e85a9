package nodeid_test

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/nodeid/nodeid/election"
	"github.com/nodeid/nodeid/lease"
	"github.com/nodeid/nodeid/nodeid"
	"github.com/nodeid/nodeid/snowflake"
)

// violationKind sorts what the checker found.
type violationKind int

const (
	// violationRule: a rule of the safety argument broke (a claim valid
	// past its record's lease, a lease taken before it expired in real
	// time, a floor below an earlier holder's IDs, ...), before anything
	// repeated.
	violationRule violationKind = iota
	// violationObserved: the harm itself, observed: two valid holders of
	// one node ID at once, or one ID issued twice.
	violationObserved
	// violationProgress: the fleet stopped making progress (a takeable ID
	// left untaken while a task waits for one, past the bound), or a
	// waiting task failed with ErrClockBehind for a floor its lease
	// explains.
	violationProgress
)

var violationNames = [...]string{violationRule: "rule", violationObserved: "observed", violationProgress: "progress"}

// simChecker checks the safety claims, and progress, on the simulated
// real-time line.
type simChecker struct {
	s          *sim
	violations []string
	kinds      [len(violationNames)]int
	steps      int
	issuedIDs  int
	outsideIDs int                      // issued by applications with the host's clock
	ids        map[snowflake.ID]string  // ID -> task that issued it
	maxIssued  map[[2]int64]int64       // (nodeId, version) -> highest timestamp
	floors     map[[2]int64]int64       // (nodeId, version) -> floor
	versions   map[[2]int64]string      // (nodeId, version) -> task that acquired it
	last       map[string]lease.Record  // key -> last record written
	applied    map[string]time.Duration // key -> real time the store applied that record
	// proved: key -> the last real time the store served its holder a read
	// that showed the record's ETag (read mode).
	proved map[string]time.Duration

	// Progress: since when some task has waited while a node ID it could
	// take was free or expired (-1: not now), and the longest such stretch.
	bound      time.Duration
	stuckSince time.Duration
	stuckWhat  string
	maxStuck   time.Duration
	reported   bool

	live liveness // the liveness rules (sim_live_test.go)
}

func newSimChecker(s *sim) *simChecker {
	return &simChecker{s: s, ids: map[snowflake.ID]string{}, maxIssued: map[[2]int64]int64{},
		floors: map[[2]int64]int64{}, versions: map[[2]int64]string{}, last: map[string]lease.Record{},
		applied: map[string]time.Duration{}, proved: map[string]time.Duration{}, bound: progressBound(s.params), stuckSince: -1,
		live: newLiveness()}
}

// progressBound is how long a task may wait while a node ID it could take is
// free or expired in real time (see progress): three leases. A waiting task
// looks at least every RenewInterval (gossip) or 8 * AcquireBackoff, and a
// look is a few round trips; the rest is room for slow legs (up to 2.5 s
// each) and lost races. The longest wait seen over the seeds of the local
// timings is 6.4 s (docs/evidence/simulation.md), half the bound.
func progressBound(p simParams) time.Duration { return 3 * p.maxLease }

func (k *simChecker) fail(kind violationKind, format string, args ...any) {
	k.kinds[kind]++
	if len(k.violations) < 10 {
		k.violations = append(k.violations, fmt.Sprintf("t=%v %s: ", k.s.now, violationNames[kind])+fmt.Sprintf(format, args...))
	}
}

// observed reports whether the harm itself was seen, not only a rule broken.
func (k *simChecker) observed() bool { return k.kinds[violationObserved] > 0 }

// after runs after every event.
func (k *simChecker) after() {
	k.steps++
	k.holders()
	k.progress()
	k.liveAfter()
}

// holders: at most one running task holds a valid claim per node ID, and every
// valid claim is backed by the store (fenceBacked).
func (k *simChecker) holders() {
	valid := map[int]string{}
	for _, t := range k.s.tasks {
		c := t.claim
		if c == nil || t.crashed || t.pausedUntil > k.s.now || !c.Valid() {
			continue
		}
		if other, ok := valid[c.NodeID()]; ok {
			k.fail(violationObserved, "node %d valid in two tasks at once: %s and %s (version %d)", c.NodeID(), other, t.name, c.Version())
		}
		valid[c.NodeID()] = t.name
		k.fenceBacked(t, c)
	}
}

// fenceBacked: a claim that reports Valid has its record in the store, held by
// its task at its version, and its fence falls before that record expires in
// real time: before the record's lease has passed since the store applied it.
// This is the holder's half of section 4's argument (it stops at t0 + lease -
// SafetyMargin on its clock, before w + lease); the taker's half, checked by
// written, is that a held lease is taken only after w + lease. Together they
// imply that lease.StateOf never judges a valid claim's record expired on any
// response of the store's clock, whatever the headers' truncation and early
// stamps. The fence is checked where it stands, not only when it is reached:
// a fence that would fall late is caught when it is set, without waiting for
// the claim to go unrenewed that long, or for a successor to take the ID.
func (k *simChecker) fenceBacked(t *simTask, c *nodeid.Claim) {
	key := k.s.recordKey(c.NodeID())
	rec, ok := k.last[key]
	if !ok || rec.Version != c.Version() || rec.Holder != t.name {
		k.fail(violationRule, "%s: node %d version %d valid, but the store's record is version %d held by %q",
			t.name, c.NodeID(), c.Version(), rec.Version, rec.Holder)
		return
	}
	expires := k.applied[key] + rec.Lease()
	fence := t.realAt(c.ValidUntil()) // the real instant the task's clock reaches the fence
	switch {
	case k.s.now > expires:
		k.fail(violationRule, "%s: node %d version %d valid %v after the store applied its last write, lease %v: expired",
			t.name, c.NodeID(), c.Version(), k.s.now-k.applied[key], rec.Lease())
	case fence > expires:
		k.fail(violationRule, "%s: node %d version %d: its fence falls %v after the store applied its last write, lease %v",
			t.name, c.NodeID(), c.Version(), fence-k.applied[key], rec.Lease())
	}
	if t.cfg.KeepAlive == nodeid.KeepAliveRead {
		k.windowBacked(t, c, key, fence)
	}
}

// windowBacked, in read mode: the claim's fence falls within Window of the
// last instant the store showed its holder the record, by applying its write
// or by serving it a read that showed the record's ETag (docs/evidence/design.md
// section 11: a read re-arms from its send, before the store served it; a
// write arms from its send, before it landed). The challenge of slice 2
// relies on it: a holder's reads stop showing its ETag once a challenge
// lands, and its fence falls within the window.
func (k *simChecker) windowBacked(t *simTask, c *nodeid.Claim, key string, fence time.Duration) {
	shown := max(k.applied[key], k.proved[key])
	if fence > shown+t.tm.Window {
		k.fail(violationRule, "%s: node %d version %d: its fence falls %v after the store last showed it the record, window %v",
			t.name, c.NodeID(), c.Version(), fence-shown, t.tm.Window)
	}
}

// readProved hears that the store served t a read of key that showed the
// ETag asked for: the current record, t's own when it holds it.
func (k *simChecker) readProved(t *simTask, key string) {
	if rec, ok := k.last[key]; ok && rec.Holder == t.name {
		k.proved[key] = k.s.now
	}
}

func (k *simChecker) acquired(t *simTask, c *nodeid.Claim) {
	// Claims can come back out of order (a paused task learns of its take late);
	// the order in the bucket is checked by written. Here: no version twice.
	vk := [2]int64{int64(c.NodeID()), c.Version()}
	if other, ok := k.versions[vk]; ok {
		k.fail(violationObserved, "node %d version %d acquired twice: by %s and %s", c.NodeID(), c.Version(), other, t.name)
	}
	k.versions[vk] = t.name
	k.floors[vk] = c.Floor()
}

// issued checks an ID as its generator returns it: the claim is valid and
// backed by the store (fenceBacked), the timestamp is above the floor and at
// most the reservation, and the ID was never issued before.
func (k *simChecker) issued(t *simTask, c *nodeid.Claim, id snowflake.ID) {
	k.issuedIDs++
	parts, err := t.cfg.Layout.Decode(id)
	switch {
	case err != nil:
		k.fail(violationRule, "%s: issued an ID that does not decode: %v", t.name, err)
		return
	case parts.NodeID != int64(c.NodeID()):
		k.fail(violationRule, "%s: issued ID %d with node %d under node %d", t.name, id, parts.NodeID, c.NodeID())
	case !c.Valid():
		k.fail(violationRule, "%s: issued ID %d on node %d version %d while not Valid", t.name, id, c.NodeID(), c.Version())
	case parts.TimeMs <= c.Floor() || parts.TimeMs > c.Reservation():
		k.fail(violationRule, "%s: issued timestamp %d on node %d version %d outside (floor %d, reservation %d]",
			t.name, parts.TimeMs, c.NodeID(), c.Version(), c.Floor(), c.Reservation())
	}
	if !t.crashed && t.pausedUntil <= k.s.now {
		k.fenceBacked(t, c)
	}
	k.unique(t, id, parts, c.Version())
}

// issuedOutside checks an ID an application stamped with the host's clock,
// under the id file f it last read: above the floor, and never issued
// before; its timestamps count for the successors' floors (final).
func (k *simChecker) issuedOutside(t *simTask, f simFile, id snowflake.ID) {
	k.outsideIDs++
	parts, err := t.cfg.Layout.Decode(id)
	if err != nil {
		k.fail(violationRule, "%s's application: an ID that does not decode: %v", t.name, err)
		return
	}
	if parts.TimeMs <= f.floorMs {
		k.fail(violationRule, "%s's application: timestamp %d on node %d version %d at or below its floor %d", t.name, parts.TimeMs, f.nodeID, f.version, f.floorMs)
	}
	k.unique(t, id, parts, f.version)
}

// unique records id, issued under version of its node ID, and fails if it was
// issued before.
func (k *simChecker) unique(t *simTask, id snowflake.ID, parts snowflake.Parts, version int64) {
	if prev, ok := k.ids[id]; ok {
		k.fail(violationObserved, "ID repeated: %d (node %d timestamp %d sequence %d) issued by %s and %s", id, parts.NodeID, parts.TimeMs, parts.Seq, prev, t.name)
	}
	k.ids[id] = t.name
	vk := [2]int64{parts.NodeID, version}
	k.maxIssued[vk] = max(k.maxIssued[vk], parts.TimeMs)
}

// parseKey returns the node ID of a lease object's key (0 for the
// election's); false for any other key.
func (k *simChecker) parseKey(key string) (int, bool) {
	if k.s.params.election {
		rest, ok := strings.CutPrefix(key, election.Dir+simElection+"/")
		if !ok {
			return 0, false
		}
		key = rest
	}
	return lease.ParseRecordKey(key)
}

// written checks each applied write: versions never go back, each change of
// holder to a new task is an acquisition with version + 1, and a held lease is
// taken only after it expired in real time.
func (k *simChecker) written(key string, body []byte) {
	id, ok := k.parseKey(key)
	if !ok {
		return
	}
	r, err := lease.DecodeRecord(body, id)
	if err != nil {
		k.fail(violationRule, "corrupt record written to %s: %v", key, err)
		return
	}
	prev, seen := k.last[key]
	switch {
	case seen && r.Version < prev.Version:
		k.fail(violationRule, "%s version went back from %d to %d", key, prev.Version, r.Version)
	case seen && r.Holder != "" && r.Holder != prev.Holder && r.Version != prev.Version+1:
		k.fail(violationRule, "%s taken by %s with version %d after %d", key, r.Holder, r.Version, prev.Version)
	case seen && r.ReservedUntilMs < prev.ReservedUntilMs && r.Holder != "":
		k.fail(violationRule, "%s reservation lowered from %d to %d while held", key, prev.ReservedUntilMs, r.ReservedUntilMs)
	case seen && prev.Holder != "" && r.Version > prev.Version && k.s.now-k.applied[key] <= prev.TakeableAfter():
		// The taker's half of section 4: the expiry rule implies that more
		// than the lease (a confirm's window, section 11) passed, in real
		// time, since the store applied the record taken.
		k.fail(violationRule, "%s: %s's lease (version %d, takeable after %v) taken by %s only %v after the store applied it",
			key, prev.Holder, prev.Version, prev.TakeableAfter(), r.Holder, k.s.now-k.applied[key])
	case r.Challenge != nil:
		k.challenge(key, r, prev, seen)
	}
	switch {
	case r.Challenge != nil && !r.Challenge.Confirmed:
		k.challenged(key)
	case seen && prev.Challenge != nil && prev.Challenge.Confirmed && r.Version > prev.Version:
		k.takenByChallenge(key, prev)
	}
	k.countChallenge(r, prev, seen)
	k.last[key] = r
	k.applied[key] = k.s.now
	k.s.tracef("write %s: holder %q version %d reserved %d", key, r.Holder, r.Version, r.ReservedUntilMs)
}

// challenge checks a challenge or a confirm r written over prev (section
// 11): a copy of the holder's record, the challenge over a plain record
// naming its writeId (or over an unconfirmed challenge, naming the same),
// the confirm over that challenge.
func (k *simChecker) challenge(key string, r, prev lease.Record, seen bool) {
	ch := r.Challenge
	switch {
	case !seen || r.Holder != prev.Holder || r.Version != prev.Version || r.ReservedUntilMs != prev.ReservedUntilMs:
		k.fail(violationRule, "%s: a challenge by %s that does not copy the record (%+v over %+v)", key, ch.By, r, prev)
	case !ch.Confirmed && prev.Challenge == nil && ch.Of != prev.WriteID,
		!ch.Confirmed && prev.Challenge != nil && (prev.Challenge.Confirmed || ch.Of != prev.Challenge.Of):
		k.fail(violationRule, "%s: a challenge by %s of writeId %s over a record that is no plain record with it, nor a challenge of it (%+v)", key, ch.By, ch.Of, prev)
	case ch.Confirmed && (prev.Challenge == nil || prev.Challenge.Confirmed || prev.Challenge.Of != ch.Of || prev.Challenge.By != ch.By):
		k.fail(violationRule, "%s: a confirm by %s over a record that is not its challenge (%+v)", key, ch.By, prev)
	}
}

// countChallenge counts the steps of the challenges of read mode: so that a
// run shows they happened.
func (k *simChecker) countChallenge(r, prev lease.Record, seen bool) {
	switch {
	case r.Challenge != nil && r.Challenge.Confirmed:
		k.s.counts["confirm"]++
	case r.Challenge != nil:
		k.s.counts["challenge"]++
	case !seen || prev.Challenge == nil:
	case r.Version > prev.Version:
		k.s.counts["challenge taken"]++
	case r.Free():
		k.s.counts["challenge released"]++
	default:
		k.s.counts["challenge answered"]++
	}
}

// final: every successor's floor is at or above every timestamp issued under an
// earlier version of its node ID, by its generator or its application.
func (k *simChecker) final() {
	for fk, floor := range k.floors {
		for ik, issued := range k.maxIssued {
			if ik[0] == fk[0] && ik[1] < fk[1] && issued > floor {
				k.fail(violationRule, "node %d version %d starts above floor %d, but version %d issued %d", fk[0], fk[1], floor, ik[1], issued)
			}
		}
	}
}

// progress: no task waits longer than the bound while a node ID (or the
// election) it could take is free, or held by a record whose lease expired
// in real time by more than the expiry rule's margins. It catches a fleet
// stopped by a bug that costs no safety (Acquire that never takes, a lease
// never read again, one gossip entry ending every lease, a wait for a floor
// nobody needs).
func (k *simChecker) progress() {
	what := k.stuck()
	if what == "" {
		k.stuckSince = -1
		return
	}
	if k.stuckSince < 0 {
		k.stuckSince, k.stuckWhat = k.s.now, what
	}
	d := k.s.now - k.stuckSince
	k.maxStuck = max(k.maxStuck, d)
	if d > k.bound && !k.reported {
		k.reported = true
		k.fail(violationProgress, "no progress for %v (bound %v): %s", d, k.bound, k.stuckWhat)
	}
}

// stuck describes a task that waits while a node ID it could take is free or
// expired; "" when there is none.
func (k *simChecker) stuck() string {
	for _, w := range k.s.tasks {
		if !k.waiting(w) {
			continue
		}
		for id := k.s.params.firstID; id < k.s.params.firstID+k.s.params.ids; id++ {
			if why := k.takeable(id, w); why != "" {
				return fmt.Sprintf("%s waits while node %d is %s", w.name, id, why)
			}
		}
	}
	return ""
}

// waiting reports whether w wants a node ID (or leadership) and can reach
// the store: started, running, not paused or partitioned, holding none.
func (k *simChecker) waiting(w *simTask) bool {
	return w.started && !w.crashed && !w.stopped && w.pausedUntil <= k.s.now && w.partitionedUntil <= k.s.now &&
		(w.claim == nil || isDone(w.claim))
}

// takeable says why node id can be taken by w now ("" when it cannot): never
// created, or free or expired (expiredBy), with a floor w may take (within
// its MaxClockWait of its clock; no floor counts for an election).
func (k *simChecker) takeable(id int, w *simTask) string {
	key := k.s.recordKey(id)
	rec, seen := k.last[key]
	if !seen {
		return "never created"
	}
	why := k.expiredBy(key, rec, w, k.s.now)
	if why == "" {
		return ""
	}
	if ahead := time.Duration(rec.ReservedUntilMs-w.Wall().UnixMilli()) * time.Millisecond; !k.s.params.election && ahead > w.cfg.MaxClockWait {
		return "" // a far floor: w waits for its clock
	}
	return why
}

// expiredBy says whether the record rec of key is free, or held and expired
// at real time at by the expiry rule's margins for w (so that the rule holds
// on every response from then on); "" when neither.
func (k *simChecker) expiredBy(key string, rec lease.Record, w *simTask, at time.Duration) string {
	if rec.Holder == "" {
		return "free"
	}
	age := at - k.applied[key]
	margin := lease.StoreClockResolution + w.cfg.ClockMargin + time.Second // Date's truncation too
	if k.s.params.judged {
		margin = time.Second // the liveness, rounded up to whole seconds
	}
	if age <= rec.Lease()+margin {
		return ""
	}
	return fmt.Sprintf("expired (held by %s, version %d, unwritten for %v)", rec.Holder, rec.Version, age)
}

// acquireFailed checks why an Acquire (or a campaign) that began at real time
// began failed: ErrClockBehind is a bug in an election (it has no floors),
// and when an ID that was takeable all along (free, or expired by the expiry
// rule's margins, since before the Acquire began, and unchanged since) has a
// floor its lease explains: a release a moment ago that kept its reservation
// leaves it at most MaxClockWait plus what is left of the record's lease, in
// real time, ahead of w's clock. Such a floor is waited for, never an error.
func (k *simChecker) acquireFailed(w *simTask, began time.Duration, err error) {
	if !errors.Is(err, nodeid.ErrClockBehind) {
		return
	}
	if k.s.params.election {
		k.fail(violationProgress, "%s: campaign failed with ErrClockBehind, but an election has no floor: %v", w.name, err)
		return
	}
	for id := k.s.params.firstID; id < k.s.params.firstID+k.s.params.ids; id++ {
		key := k.s.recordKey(id)
		rec, seen := k.last[key]
		if !seen || k.applied[key] > began || k.expiredBy(key, rec, w, began) == "" {
			continue
		}
		left := rec.Lease() - (k.s.now - k.applied[key])
		if ahead := time.Duration(rec.ReservedUntilMs-w.Wall().UnixMilli()) * time.Millisecond; ahead <= w.cfg.MaxClockWait+left {
			k.fail(violationProgress, "%s: Acquire failed with ErrClockBehind, but node %d's floor is %v ahead of its clock, which MaxClockWait %v plus the %v left of its lease explain: %v",
				w.name, id, ahead, w.cfg.MaxClockWait, left, err)
			return
		}
	}
}

func (k *simChecker) summary() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%d checks, %d IDs issued, %d by applications on the host's clock, longest wait %v, crashed holder's ID taken at most %v past its design bound",
		k.steps, k.issuedIDs, k.outsideIDs, k.maxStuck, k.live.maxOver)
	for _, name := range []string{"acquired", "lost", "crash", "pause", "partition", "graceful stop", "wall step", "host step",
		"ambiguous landed", "ambiguous lost", "late write", "late write landing", "409", "read error", "issue waited", "issue fenced",
		"acquire failed", "child killed", "bad peer", "jeopardy", "recovered", "poll proved", "poll failed", "poll saw a change", "challenge", "confirm", "challenge answered", "challenge taken", "challenge released", "torn read"} {
		fmt.Fprintf(&b, ", %s %d", name, k.s.counts[name])
	}
	return b.String()
}
