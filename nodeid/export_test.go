package nodeid

import (
	"context"
	"slices"
	"time"

	"github.com/nodeid/nodeid/lease"
)

// What the deterministic simulation reaches of the internals. It lives in
// package nodeid_test, so that it drives package election (Campaign, Resign,
// Scope) as users do, and these names exist only in this package's tests.

// SimHooks report each claim a Provider creates, as its rules create or
// take it, before Acquire returns it. (The simulation runs the Provider's
// goroutines as its own through the Clock it hands in: see goClock.)
type SimHooks struct {
	OnClaim func(*Claim)
}

// WithSimHooks returns cfg with h set, for a Provider made from it
// (nodeid.New, or election.New and Campaign): around the rules cfg carries
// (WithSimRules before it), or the production rules.
func WithSimHooks(cfg Config, h SimHooks) Config {
	r := productionRules()
	if cfg.rules != nil {
		r = *cfg.rules
	}
	create, take := r.create, r.take
	r.create = func(p *Provider, ctx context.Context, id int, o claimOptions) (*Claim, error) {
		return h.claimed(create(p, ctx, id, o))
	}
	r.take = func(p *Provider, ctx context.Context, rr readResult, prev lease.Record, state lease.State, o claimOptions) (*Claim, error) {
		return h.claimed(take(p, ctx, rr, prev, state, o))
	}
	cfg.rules = &r
	return cfg
}

// claimed calls OnClaim with c, a claim just created, if any.
func (h SimHooks) claimed(c *Claim, err error) (*Claim, error) {
	if c != nil {
		h.OnClaim(c)
	}
	return c, err
}

// SimRules names the rules a test breaks on purpose, to show that its
// checks catch the broken rule: each field set replaces one production rule
// by its mutant (see mutated). The zero SimRules is the production rules.
type SimRules struct {
	FenceExtra      time.Duration                                   // the fence stays up this much longer
	IgnoreFloor     bool                                            // a successor reports floor 0
	AdoptAtReadBack bool                                            // a pending write found landed is adopted at the read-back's answer
	StateOf         func(r *lease.Record, m lease.Meta) lease.State // records are judged by this instead of lease.StateOf
	NeverTake       bool                                            // Acquire never takes an ID
	NoRevisit       bool                                            // Acquire never reads again a lease it read held
	RawGossip       bool                                            // gossip's entries go into records unchecked
	ElectionFloors  bool                                            // an election reserves timestamps and waits for floors
	OldRecentFloor  bool                                            // the far-floor rule before issue 28's fix
	RecoverChanged  bool                                            // a claim in jeopardy recovers on another writer's record
	IssueInJeopardy bool                                            // a claim in jeopardy stays valid
	ReadArmAtAnswer bool                                            // a read re-arms the fence from its answer, not its send
	ReadArmBackstop bool                                            // a read re-arms the fence for the backstop, uncapped
	AnswerAny       bool                                            // a holder answers a challenge whatever write it names
	// ReadProvesChallenge: a read that shows the challenge being answered
	// re-arms the fence.
	ReadProvesChallenge bool
	// The liveness mutants (simrules_test.go): a retry pause no wake ends
	// (UnwokenRetries), a fence fallen for good that the owner does not end
	// (UnendedFall), a stale challenge never challenged again
	// (StaleChallengeLeft).
	UnwokenRetries, UnendedFall, StaleChallengeLeft bool
}

// WithSimRules returns cfg with the rules s breaks broken in every Provider
// made from it.
func WithSimRules(cfg Config, s SimRules) Config {
	cfg.rules = s.mutated()
	return cfg
}

// mutated returns the production rules with the mutants s names.
func (s SimRules) mutated() *rules {
	r := productionRules()
	prod := r
	if s.FenceExtra != 0 {
		r.fenceSpan = func(span, margin time.Duration) time.Duration { return prod.fenceSpan(span, margin) + s.FenceExtra }
	}
	if s.IgnoreFloor {
		r.floor = func(lease.Record) int64 { return 0 }
	}
	if s.AdoptAtReadBack {
		r.adoptedAt = func(_, seen time.Time) time.Time { return seen }
	}
	if s.StateOf != nil {
		r.stateOf = func(rec *lease.Record, m lease.Meta, _ time.Duration) lease.State { return s.StateOf(rec, m) }
	}
	if s.NeverTake {
		r.create = func(*Provider, context.Context, int, claimOptions) (*Claim, error) { return nil, nil }
		r.take = func(*Provider, context.Context, readResult, lease.Record, lease.State, claimOptions) (*Claim, error) {
			return nil, nil
		}
		r.suspected = func(*Provider, readResult, lease.Record, map[int]int64, *watched) bool { return false }
	}
	if s.NoRevisit {
		r.dropped = func(p *Provider, id int, v *clusterView, w *watched, known map[int]int64, longest int64) bool {
			_, seen := w.held[id]
			return seen || prod.dropped(p, id, v, w, known, longest)
		}
	}
	if s.RawGossip {
		r.knownNodeValid = func(int, int64) bool { return true }
	}
	r.electionFloors = s.ElectionFloors
	if s.OldRecentFloor {
		// A floor counts as recent only by the record's measured age, with
		// no slack for the headers, and only when no other floor is an
		// anomaly and no store error hid a candidate.
		r.recentFloor = func(p *Provider, prev lease.Record, m lease.Meta, ahead time.Duration) bool {
			age, ok := lease.StoreAge(m.LastModified, m.Date)
			return ok && ahead <= p.cfg.MaxClockWait+prev.Lease()-age
		}
		r.nearestRecent = func(p *Provider, far []farFloor, storeErrs bool) (farFloor, bool) {
			if storeErrs || slices.ContainsFunc(far, func(f farFloor) bool { return !f.recent }) {
				return farFloor{}, false
			}
			return prod.nearestRecent(p, far, storeErrs)
		}
	}
	if s.RecoverChanged {
		r.conflictFinal = func(c *Claim) bool { return prod.conflictFinal(c) && !c.inJeopardy() }
		r.takenBy = func(c *Claim, rec lease.Record, etag string, seen time.Time) (string, error) {
			if c.inJeopardy() {
				c.committed(c.rec, etag, seen, false) // another writer's record taken for ours
				return rec.WriteID, nil
			}
			return prod.takenBy(c, rec, etag, seen)
		}
	}
	r.validInJeopardy = s.IssueInJeopardy
	if s.ReadArmAtAnswer {
		r.readArmedAt = func(_, answered time.Time) time.Time { return answered }
	}
	if s.ReadArmBackstop {
		r.readProves = func(c *Claim, sent time.Time) (int64, int64) { return c.fenceAt(sent, c.p.t.Lease) }
	}
	if s.AnswerAny {
		r.answers = func(string, string) bool { return true }
	}
	r.readsProveChallenge = s.ReadProvesChallenge
	if s.UnwokenRetries {
		r.retryPause = unwokenRetryPause
	}
	if s.UnendedFall {
		r.fellForGood, r.finalFall = neverFellForGood, noFinalFall
	}
	if s.StaleChallengeLeft {
		r.staleChallenge = noStaleChallenge
	}
	return &r
}

// InJeopardy reports whether the claim is in jeopardy.
func (c *Claim) InJeopardy() bool { return c.inJeopardy() }

// NextRenewal returns when the renewal loop renews next: RenewInterval after
// the last successful write was sent, on the Provider's Clock.
func (c *Claim) NextRenewal() time.Time {
	return c.snap.Load().lastSent.Add(c.p.t.RenewInterval)
}

// poll sends one read and judges its answer, as the owner does, on the
// caller's goroutine (the claim's owner, its loop stopped); it returns the
// read's send time and its judgement.
func (c *Claim) poll(ctx context.Context) (time.Time, error) {
	a := c.newRead()(ctx)
	return a.sent, c.judgeRead(a)
}

// Provider returns the Provider of the claim.
func (c *Claim) Provider() *Provider { return c.p }
