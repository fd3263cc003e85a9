package nodeid

import (
	"time"

	"github.com/nodeid/nodeid/lease"
)

// What the deterministic simulation reaches of the internals. It lives in
// package nodeid_test, so that it drives package election (Campaign, Resign,
// Scope) as users do, and these names exist only in this package's tests.

// SimHooks, when set, break the rules the simulation must catch. Each field
// is a testHooks field of the same name. (The simulation runs the Provider's
// goroutines as its own through the Clock it hands in: see goClock.)
type SimHooks struct {
	FenceExtra      time.Duration
	IgnoreFloor     bool
	AdoptAtReadBack bool
	StateOf         func(r *lease.Record, m lease.Meta) lease.State
	OnClaim         func(*Claim)
	NeverTake       bool
	NoRevisit       bool
	RawGossip       bool
	ElectionFloors  bool
	OldRecentFloor  bool
	RecoverChanged  bool
	IssueInJeopardy bool
	ReadArmAtAnswer bool
	ReadArmBackstop bool
	// The liveness mutants (simrules_test.go): a retry pause no wake ends
	// (UnwokenRetries), a fence fallen for good that the read loop does not
	// end (UnendedFall), a stale challenge never challenged again
	// (StaleChallengeLeft).
	UnwokenRetries, UnendedFall, StaleChallengeLeft bool
}

// WithSimHooks returns cfg with h set, for a Provider made from it
// (nodeid.New, or election.New and Campaign).
func WithSimHooks(cfg Config, h SimHooks) Config {
	cfg.hooks = &testHooks{
		fenceExtra: h.FenceExtra, ignoreFloor: h.IgnoreFloor, adoptAtReadBack: h.AdoptAtReadBack,
		stateOf: h.StateOf, onClaim: h.OnClaim, neverTake: h.NeverTake, noRevisit: h.NoRevisit,
		rawGossip: h.RawGossip, electionFloors: h.ElectionFloors, oldRecentFloor: h.OldRecentFloor,
		recoverChanged: h.RecoverChanged, issueInJeopardy: h.IssueInJeopardy,
		readArmAtAnswer: h.ReadArmAtAnswer, readArmBackstop: h.ReadArmBackstop,
	}
	r := productionRules()
	if h.UnwokenRetries {
		r.retryPause = unwokenRetryPause
	}
	if h.UnendedFall {
		r.fellForGood, r.finalFall = neverFellForGood, noFinalFall
	}
	if h.StaleChallengeLeft {
		r.staleChallenge = noStaleChallenge
	}
	cfg.rules = &r
	return cfg
}

// InJeopardy reports whether the claim is in jeopardy.
func (c *Claim) InJeopardy() bool { return c.jeopardy.Load() }

// NextRenewal returns when the renewal loop renews next: RenewInterval after
// the last successful write was sent, on the Provider's Clock.
func (c *Claim) NextRenewal() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.lastSent.Add(c.p.cfg.RenewInterval)
}

// Provider returns the Provider of the claim.
func (c *Claim) Provider() *Provider { return c.p }
