package nodeid

import (
	"context"
	"time"

	"github.com/nodeid/nodeid/lease"
)

// The fixes of review 5's liveness findings reverted, each as rule values
// (rules): the mutants that the simulation's liveness checks must catch
// (SimRules, TestSimulationCatchesBrokenLiveness).

// unwokenRetryPause: a round's retry pause (and jeopardy's) waits its
// whole length, its reads served, whatever they see: a challenge a read
// sees meanwhile is answered only after it.
func unwokenRetryPause(c *Claim, ctx context.Context, d time.Duration) error {
	for end := c.p.clock.Now().Add(d); c.p.clock.Now().Before(end); {
		if err := c.pause(ctx, end.Sub(c.p.clock.Now())); err != nil {
			return err
		}
	}
	return nil
}

// neverFellForGood and noFinalFall: the owner neither wakes at the fall
// of a fence that NoLossGrace makes final nor ends the claim then; the
// renewal loop's next write does.
func neverFellForGood(*Claim) bool                                     { return false }
func noFinalFall(*Claim) (time.Time, bool)                             { return time.Time{}, false }
func noStaleChallenge(*Provider, *lease.Challenge, time.Duration) bool { return false }
