package nodeid

import (
	"time"

	"github.com/nodeid/nodeid/lease"
)

// testHooks is the one seam through which tests change how a Provider runs: the
// deterministic simulation (sim_test.go) breaks safety rules on purpose to
// show that its checker catches them, and the nodeid_mutation build
// (mutation_tagged.go) does the same for the fault suite. Provider.hooks is nil in production; every method is safe on a nil
// *testHooks and then gives the production behaviour.
type testHooks struct {
	fenceExtra time.Duration // bug: the fence stays up this much longer
	// renewDeadlineExtra (a bug): the renewals give up this much later than
	// RenewDeadline, so that a holder only stops on evidence of a takeover.
	renewDeadlineExtra time.Duration
	ignoreFloor        bool // bug: a successor reports floor 0
	// adoptAtReadBack (a bug): a pending write that a read-back finds landed
	// is adopted as if sent when the read-back's answer arrived, not when it
	// was sent: the fence runs from the wrong t0.
	adoptAtReadBack bool
	// stateOf, when set, judges records instead of lease.StateOf (a bug).
	stateOf func(r *lease.Record, m lease.Meta) lease.State
	// onClaim, when set, is called with every claim the Provider creates,
	// before Acquire returns it (the simulation drives its renewals).
	onClaim func(*Claim)

	// Liveness bugs: Acquire never takes an ID (neverTake), or never reads
	// again a lease it once read held (noRevisit).
	neverTake, noRevisit bool
	// The behaviour before issue 28's fixes, as bugs: gossip's entries are
	// written into records unchecked (rawGossip, finding 8); an election
	// reserves timestamps and waits for floors (electionFloors, findings 5
	// and 6); a floor counts as recent only by the record's measured age,
	// and only when no other floor is an anomaly and no store error hid a
	// candidate (oldRecentFloor, finding 7).
	rawGossip, electionFloors, oldRecentFloor bool
	// Jeopardy bugs: a claim in jeopardy recovers on a read-back that shows
	// another writer's record (recoverChanged), or stays valid, ignoring its
	// fence, while in jeopardy (issueInJeopardy).
	recoverChanged, issueInJeopardy bool
	// Read-mode bugs: a read that proves the claim's ETag re-arms the fence
	// from its answer's arrival instead of its send (readArmAtAnswer), or
	// for the backstop, with no cap (readArmBackstop).
	readArmAtAnswer, readArmBackstop bool
	// Challenge bugs (read mode): the holder answers a challenge whatever
	// writeId it names (answerAny), or a read that shows the challenge it
	// is answering re-arms its fence (readProvesChallenge).
	answerAny, readProvesChallenge bool
}

// readArmedAt returns the instant a read sent at sent and answered at
// answered re-arms the fence from: sent.
func (h *testHooks) readArmedAt(sent, answered time.Time) time.Time {
	if h != nil && h.readArmAtAnswer {
		return answered
	}
	return sent
}

// readArmsForBackstop reports whether a read re-arms the fence for the
// backstop, uncapped (a bug).
func (h *testHooks) readArmsForBackstop() bool { return h != nil && h.readArmBackstop }

// answersAnyChallenge reports whether a holder answers a challenge naming
// another writeId as its own (a bug).
func (h *testHooks) answersAnyChallenge() bool { return h != nil && h.answerAny }

// readsProveChallenge reports whether a read showing the challenge being
// answered proves the claim (a bug).
func (h *testHooks) readsProveChallenge() bool { return h != nil && h.readProvesChallenge }

// recoversOnAnyRecord reports whether a claim in jeopardy adopts another
// writer's record as a recovery (a bug).
func (h *testHooks) recoversOnAnyRecord() bool { return h != nil && h.recoverChanged }

// validInJeopardy reports whether a claim in jeopardy stays valid (a bug).
func (h *testHooks) validInJeopardy() bool { return h != nil && h.issueInJeopardy }

// newClaimed calls onClaim, if set, with a claim just created.
func (h *testHooks) newClaimed(c *Claim) {
	if h != nil && h.onClaim != nil {
		h.onClaim(c)
	}
}

// takesNothing reports whether Acquire must never take an ID (a bug).
func (h *testHooks) takesNothing() bool { return h != nil && h.neverTake }

// revisitsNothing reports whether Acquire must never read again a lease it
// read held (a bug).
func (h *testHooks) revisitsNothing() bool { return h != nil && h.noRevisit }

// gossipUnchecked reports whether gossip's entries go into records unchecked
// (a bug).
func (h *testHooks) gossipUnchecked() bool { return h != nil && h.rawGossip }

// recentFloorOld reports whether the far-floor rule is the one before issue
// 28 (a bug).
func (h *testHooks) recentFloorOld() bool { return h != nil && h.oldRecentFloor }

// extraFence returns how much longer than the rule the fence stays up: 0.
func (h *testHooks) extraFence() time.Duration {
	if h == nil {
		return 0
	}
	return h.fenceExtra
}

// extraRenewDeadline returns how much later than RenewDeadline the renewals
// give up: 0.
func (h *testHooks) extraRenewDeadline() time.Duration {
	if h == nil {
		return 0
	}
	return h.renewDeadlineExtra
}

// floorIgnored reports whether a successor must report floor 0.
func (h *testHooks) floorIgnored() bool { return h != nil && h.ignoreFloor }

// adoptedSent returns the send time to fence from when a read-back that
// answered at seen finds landed a pending write sent at sent: sent.
func (h *testHooks) adoptedSent(sent, seen time.Time) time.Time {
	if h != nil && h.adoptAtReadBack {
		return seen
	}
	return sent
}

// stateOf judges the record r read with meta m: lease.StateOf with the
// configured clock margin, unless a test replaced the rule.
func (p *Provider) stateOf(r *lease.Record, m lease.Meta) lease.State {
	if h := p.hooks; h != nil && h.stateOf != nil {
		return h.stateOf(r, m)
	}
	return lease.StateOf(r, m, p.cfg.ClockMargin)
}
