package nodeid

import (
	"context"
	"time"

	"github.com/nodeid/nodeid/lease"
)

// rules are the protocol's decisions that a mutation test breaks on
// purpose, one field each (a function or a value), so that the simulation
// and the fault suite can show that their checks catch a broken rule. A
// Provider takes its rules once, at construction (New): productionRules,
// unless a test hands in others through Config's unexported rules field
// (export_test.go) or the nodeid_mutation build chose a mutant at init
// (mutation_tagged.go). No predicate asks whether it is mutated: it calls
// its rule.
type rules struct {
	// retryPause is a renewal round's (and jeopardy's) wait between
	// attempts: await, which the read loop's wake ends, so that a challenge
	// seen meanwhile is answered at once.
	retryPause func(c *Claim, ctx context.Context, d time.Duration) error
	// fellForGood and finalFall are how the read loop sees the fence fall
	// for good (NoLossGrace) and when it wakes for that fall, so that it
	// ends such a claim at the fall.
	fellForGood func(c *Claim) bool
	finalFall   func(c *Claim) (time.Time, bool)
	// staleChallenge is whether a standing challenge is challenged again
	// (read mode), so that an unconfirmed one does not strand an ID.
	staleChallenge func(p *Provider, ch *lease.Challenge, age time.Duration) bool
}

// productionRules returns the rules as designed.
func productionRules() rules {
	return rules{
		retryPause: (*Claim).await, fellForGood: (*Claim).fellForGood, finalFall: (*Claim).finalFall,
		staleChallenge: (*Provider).staleChallenge,
	}
}
