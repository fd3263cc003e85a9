package nodeid

import (
	"context"
	"time"

	"github.com/nodeid/nodeid/lease"
)

// What the deterministic simulation reaches of the internals. It lives in
// package nodeid_test, so that it drives package election (Campaign, Resign,
// Scope) as users do, and these names exist only in this package's tests.

// SimHooks make a Provider run on the simulation's one goroutine (no renewal
// loop: the simulation calls RenewRound) and, when set, break the rules the
// simulation must catch. Each field is a testHooks field of the same name.
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
}

// WithSimHooks returns cfg with h set: a Provider made from it (nodeid.New,
// or election.New and Campaign) runs sequentially.
func WithSimHooks(cfg Config, h SimHooks) Config {
	cfg.hooks = &testHooks{
		sequential: true, fenceExtra: h.FenceExtra, ignoreFloor: h.IgnoreFloor, adoptAtReadBack: h.AdoptAtReadBack,
		stateOf: h.StateOf, onClaim: h.OnClaim, neverTake: h.NeverTake, noRevisit: h.NoRevisit,
		rawGossip: h.RawGossip, electionFloors: h.ElectionFloors, oldRecentFloor: h.OldRecentFloor,
		recoverChanged: h.RecoverChanged, issueInJeopardy: h.IssueInJeopardy,
		readArmAtAnswer: h.ReadArmAtAnswer, readArmBackstop: h.ReadArmBackstop,
	}
	return cfg
}

// RenewStep is the renewal loop's one turn (renewStep): a round, and
// jeopardy until a recovery or a loss when it gives up.
func (c *Claim) RenewStep(ctx context.Context) error { return c.renewStep(ctx) }

// Poll is the read loop's one read (poll), in read mode: it returns its send
// time, and nil when its answer proved the claim's ETag.
func (c *Claim) Poll(ctx context.Context) (time.Time, error) { return c.poll(ctx) }

// AfterPoll is what the read loop does after a Poll that returned err
// (afterPoll): the time to the next, and whether to wake the renewal.
func AfterPoll(err error, poll time.Duration) (time.Duration, bool) { return afterPoll(err, poll) }

// InJeopardy reports whether the claim is in jeopardy.
func (c *Claim) InJeopardy() bool { return c.jeopardy.Load() }

// NextRenewal returns when the renewal loop renews next: RenewInterval after
// the last successful write was sent, on the Provider's Clock.
func (c *Claim) NextRenewal() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.lastSent.Add(c.p.t.RenewInterval)
}

// Lose ends the claim as lost, as the renewal loop does when a round fails.
func (c *Claim) Lose(err error) { c.lose(err) }

// Provider returns the Provider of the claim.
func (c *Claim) Provider() *Provider { return c.p }
