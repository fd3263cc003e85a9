package nodeid_test

import (
	"time"

	"github.com/nodeid/nodeid/lease"
	"github.com/nodeid/nodeid/nodeid"
)

// The checker's liveness rules, beside progress (sim_check_test.go): each
// bounds how long a loop of the claim may take to do what its design says,
// so that a change to renewLoop (the owner), its reads or the challenge that delays it
// fails the simulation, which runs those very loops.
//   - crashTaken: a crashed holder's node ID is taken within its bound, while
//     a task has waited for one all along (write mode: the lease + a renew
//     interval + slack; read mode with gossip: Window + slack, whatever
//     became of a challenge meanwhile: stranded, unconfirmed, answered late).
//   - keptByHealthy: a holder whose store answered every request of its
//     within StoreTimeout, unfaulted and unconflicted (no 412), and whose
//     process did not pause, from the challenge's landing to the take, never
//     loses its ID to that challenge: it answers it.
//   - fallEnds: a claim whose fence fell for good ends (Done) within a renew
//     interval + slack: with NoLossGrace from the fall, with a loss grace
//     from the end of the grace after its jeopardy began.

// liveSlack is what the liveness bounds allow beyond the design's own time:
// the expiry rule's margins (resolution, ClockMargin, Date's truncation: 3
// s), gossip's lag to find a crashed member dead (up to 5 s), a waiter's
// look and its round trips, and a store call in flight (up to StoreTimeout,
// and two slow legs of 2.5 s in the simulation, which does not cut a call
// at its deadline). The longest seen over the seed sets is recorded in
// docs/evidence/simulation.md.
const liveSlack = 12 * time.Second

// fallSlack is liveSlack for fallEnds: a store call in flight at the fall
// (StoreTimeout, or two slow legs of 2.5 s) and a poll interval.
const fallSlack = 6 * time.Second

// crashWatch is a crashed holder's record, watched until it is taken.
type crashWatch struct {
	key, holder string
	version     int64
	at, bound   time.Duration
}

// liveness is the checker's state for the liveness rules.
type liveness struct {
	crashes     []crashWatch
	waitSince   map[*simTask]time.Duration      // since when each waiting task has waited
	challengeAt map[string]time.Duration        // key -> when its last challenge landed
	fellAt      map[*nodeid.Claim]time.Duration // NoLossGrace: since when the fence is down
	reported    map[*nodeid.Claim]bool
	maxOver     time.Duration // the most a take or an end came after its bound less liveSlack
}

func newLiveness() liveness {
	return liveness{waitSince: map[*simTask]time.Duration{}, challengeAt: map[string]time.Duration{},
		fellAt: map[*nodeid.Claim]time.Duration{}, reported: map[*nodeid.Claim]bool{}}
}

// crashed hears that t crashed: a claim it held must be taken within its
// bound.
func (k *simChecker) crashed(t *simTask) {
	c := t.claim
	if c == nil || isDone(c) {
		return
	}
	var bound time.Duration
	switch {
	case t.cfg.KeepAlive != nodeid.KeepAliveRead:
		bound = t.tm.Lease + t.tm.RenewInterval
	case k.s.params.gossip:
		bound = t.tm.Window
	default:
		return // found only when its backstop is late: bounded by progress
	}
	k.live.crashes = append(k.live.crashes, crashWatch{key: k.s.recordKey(c.NodeID()), holder: t.name, version: c.Version(),
		at: k.s.now, bound: bound + liveSlack})
}

// liveAfter runs the liveness rules after every event.
func (k *simChecker) liveAfter() {
	l := &k.live
	for _, w := range k.s.tasks {
		if k.waiting(w) {
			if _, ok := l.waitSince[w]; !ok {
				l.waitSince[w] = k.s.now
			}
		} else {
			delete(l.waitSince, w)
		}
	}
	k.crashTaken()
	k.fallEnds()
}

// crashTaken: each crashed holder's record is taken (a version above its
// own) within its bound, unless no task waited all along that could take it
// (its floor within the waiter's MaxClockWait).
func (k *simChecker) crashTaken() {
	l := &k.live
	kept := l.crashes[:0]
	for _, w := range l.crashes {
		rec := k.last[w.key]
		if rec.Version > w.version {
			l.maxOver = max(l.maxOver, k.s.now-w.at-(w.bound-liveSlack))
			continue
		}
		if k.s.now <= w.at+w.bound {
			kept = append(kept, w)
			continue
		}
		for u, since := range l.waitSince {
			ahead := time.Duration(rec.ReservedUntilMs-u.Wall().UnixMilli()) * time.Millisecond
			if since <= w.at && (k.s.params.election || ahead <= u.cfg.MaxClockWait) {
				k.fail(violationProgress, "liveness: %s crashed holding %s version %d %v ago, not taken within %v though %s waited all along",
					w.holder, w.key, w.version, k.s.now-w.at, w.bound, u.name)
				break
			}
		}
	}
	l.crashes = kept
}

// challenged hears that a challenge (not a confirm) landed on key.
func (k *simChecker) challenged(key string) { k.live.challengeAt[key] = k.s.now }

// takenByChallenge checks a take of prev, a confirmed challenge of key: its
// holder, if it still ran, must have met trouble (a fault or a slow answer
// of its store, a pause) since the challenge landed.
func (k *simChecker) takenByChallenge(key string, prev lease.Record) {
	since, ok := k.live.challengeAt[key]
	if !ok {
		return
	}
	for _, t := range k.s.tasks {
		c := t.claim
		if c == nil || k.s.recordKey(c.NodeID()) != key {
			c = t.pending // taken, and Acquire still waits for its floor
		}
		if t.name != prev.Holder || c == nil || k.s.recordKey(c.NodeID()) != key || c.Version() != prev.Version ||
			isDone(c) && t.claim != c || t.crashed || t.stopped || t.closing {
			continue
		}
		if !t.troubledSince(since) {
			k.fail(violationProgress, "liveness: %s lost %s version %d to a challenge that landed %v ago, though its store answered every request within StoreTimeout and it ran all along",
				t.name, key, prev.Version, k.s.now-since)
		}
	}
}

// fallEnds: a running claim whose fence fell for good ends within a renew
// interval (and fallSlack): with NoLossGrace from the fall, else from the end
// of the loss grace after its jeopardy began. A pause starts the count again
// (the grace runs on through it).
func (k *simChecker) fallEnds() {
	l := &k.live
	for _, t := range k.s.tasks {
		c := t.claim
		if c == nil || t.crashed || t.stopped || t.closing || isDone(c) || l.reported[c] {
			continue
		}
		if t.pausedUntil > k.s.now {
			delete(l.fellAt, c)
			continue
		}
		from := time.Duration(-1)
		if t.tm.LossGrace == nodeid.NoLossGrace {
			if c.Valid() {
				delete(l.fellAt, c)
				continue
			}
			if _, ok := l.fellAt[c]; !ok {
				l.fellAt[c] = k.s.now
			}
			from = l.fellAt[c]
		} else if t.jeopardyAt >= 0 && t.jeopardyClaim == c {
			from = max(t.jeopardyAt+time.Duration(t.tm.LossGrace), t.pausedUntil)
		}
		if from < 0 {
			continue
		}
		interval := t.tm.RenewInterval * 102 / 100 // on the task's clock, 1 % apart at most
		over := k.s.now - from - interval
		if over > fallSlack {
			l.reported[c] = true
			k.fail(violationProgress, "liveness: %s's claim of node %d version %d fenced for good %v ago (LossGrace %v), not ended within a renew interval %v",
				t.name, c.NodeID(), c.Version(), k.s.now-from, t.tm.LossGrace, t.tm.RenewInterval)
		}
	}
}

// troubledSince reports whether t met trouble since real time at, or meets
// it now (a request unanswered for longer than StoreTimeout): a store
// request faulted or not answered within StoreTimeout, a partition, a pause.
func (t *simTask) troubledSince(at time.Duration) bool {
	for _, sent := range t.inFlight {
		if t.s.now-sent > t.tm.StoreTimeout {
			return true
		}
	}
	return t.troubleUntil >= at
}

// trouble records trouble for t until real time until.
func (t *simTask) trouble(until time.Duration) { t.troubleUntil = max(t.troubleUntil, until) }
