package node

import (
	"errors"
	"fmt"
	"time"

	"github.com/nodeid/nodeid/health"
	"github.com/nodeid/nodeid/nodeid"
	"github.com/nodeid/nodeid/snowflake"
)

// The states of a node, as Status and the nodeid_lease_state metric report
// them.
const (
	StateAcquiring = "acquiring" // looking for a node ID (or not started)
	StateHeld      = "held"      // serving IDs
	StateFenced    = "fenced"    // holding the lease but issuing no IDs (closing, or the fence fell)
	StateJeopardy  = "jeopardy"  // fenced, renewing on its last write: recovered or lost within the loss grace
	StateLost      = "lost"      // ended without a release
	StateReleased  = "released"  // closed
)

// States lists every state, in the order above.
var States = []string{StateAcquiring, StateHeld, StateFenced, StateJeopardy, StateLost, StateReleased}

// Reasons for a node not to serve IDs, besides the claim's own errors.
var (
	// ErrAcquiring: no node ID is held yet.
	ErrAcquiring = errors.New("acquiring a node ID")
	// ErrShuttingDown: Close has begun; the node ID is being released.
	ErrShuttingDown = errors.New("shutting down: the node ID is being released")
	// ErrFenced: the claim's monotonic fence fell before a renewal landed.
	ErrFenced = errors.New("the lease was not renewed in time: fenced")
	// ErrStalled: the generator has failed to issue IDs for longer than
	// Config.MaxIssueStall (a clock behind the floor, a reservation that no
	// renewal raises): the task cannot serve and should be replaced.
	ErrStalled = errors.New("node: the generator cannot issue IDs")
	// ErrIDFileDown: the node holds its ID but its id file (Config.IDFile)
	// is not written yet (the host's clock has not passed the ID's floor) or
	// is down: an application that reads the file would not find it.
	ErrIDFileDown = errors.New("node: the id file is not written yet or is down")
	// ErrStarted: Start was called twice.
	ErrStarted = errors.New("node: already started")
	// ErrClosed: the node was closed.
	ErrClosed = errors.New("node: closed")
)

// state returns the node's state and, unless it is held, why it serves no IDs.
func (n *Node) state() (string, error) {
	s, _, err := n.stateRecoveries()
	return s, err
}

// stateRecoveries is state with the claim's count of recoveries
// (nodeid.Status.Recoveries, 0 before a claim), read in the same snapshot as
// its validity: an answer that says "fenced" and a later one that says "held"
// give different counts (see IDsResponse.Recoveries).
func (n *Node) stateRecoveries() (string, int64, error) {
	c := n.claim.Load()
	if c == nil {
		switch err := n.Err(); {
		case errors.Is(err, ErrClosed):
			return StateReleased, 0, err // closed before an ID was held
		case err != nil:
			return StateAcquiring, 0, err // Start failed: why
		}
		if w := n.waiting.Load(); w != nil {
			return StateAcquiring, 0, w.reason() // a cluster full, a store failing: why it waits
		}
		return StateAcquiring, 0, ErrAcquiring
	}
	st := c.Status()
	switch {
	case errors.Is(st.Err, nodeid.ErrClosed):
		return StateReleased, st.Recoveries, st.Err
	case st.Err != nil:
		return StateLost, st.Recoveries, st.Err
	case n.stopping.Load():
		return StateFenced, st.Recoveries, ErrShuttingDown
	case st.Jeopardy:
		return StateJeopardy, st.Recoveries, fmt.Errorf("%w for %v: renewing on its last write until it recovers or the loss grace (%v) ends",
			nodeid.ErrJeopardy, st.Fenced.Round(time.Millisecond), n.cfg.Provider.Timings().LossGrace)
	case !st.Valid:
		return StateFenced, st.Recoveries, ErrFenced
	}
	return StateHeld, st.Recoveries, nil
}

// Check returns nil while the node serves IDs: the lease is held and valid,
// the node is not closing, the generator is not stalled and, with
// Config.IDFile, the id file is written (ErrIDFileDown). It is the health
// check (liveness) of the node, and answers before Start.
func (n *Node) Check() error {
	_, err := n.checkRecoveries()
	return err
}

// checkRecoveries is Check with the claim's count of recoveries, read in the
// same snapshot as its validity (stateRecoveries).
func (n *Node) checkRecoveries() (int64, error) {
	_, k, err := n.stateRecoveries()
	if err != nil {
		return k, err
	}
	if err := n.idFile.check(); err != nil {
		return k, err
	}
	return k, n.stallErr()
}

// CheckReady returns Check's answer and, after taking over an expired lease,
// the gossip readiness gate's: the readiness check of the node.
func (n *Node) CheckReady() error {
	_, err := n.checkReadyRecoveries()
	return err
}

// checkReadyRecoveries is CheckReady with the claim's count of recoveries
// (checkRecoveries).
func (n *Node) checkReadyRecoveries() (int64, error) {
	k, err := n.checkRecoveries()
	if err != nil {
		return k, err
	}
	if g := n.gate.Load(); g != nil {
		return k, g.Check()
	}
	return k, nil
}

// HealthChecker returns Check as a health.Checker, for /health: the
// liveness check (an ECS container health check, through nodeid-broker
// healthcheck; a Docker HEALTHCHECK). A task failing it is replaced.
func (n *Node) HealthChecker() health.Checker { return health.CheckerFunc(n.Check) }

// ReadyChecker returns CheckReady as a health.Checker, for /ready: a load
// balancer's check (an ALB target group's), which routes no traffic to a
// task until gossip peers have seen its takeover.
func (n *Node) ReadyChecker() health.Checker { return health.CheckerFunc(n.CheckReady) }

// noteIssue records the outcome of an attempt to issue IDs: a failure other
// than a fence starts the stall clock, a success stops it.
func (n *Node) noteIssue(err error) {
	switch {
	case err == nil:
		if n.stalled.Load() != 0 {
			n.stalled.Store(0)
		}
	case !errors.Is(err, snowflake.ErrFenced):
		if n.stalled.CompareAndSwap(0, int64(n.clock.Now().Sub(n.base))+1) {
			n.log.Warn("could not issue IDs", "err", err)
		}
	}
}

// stallErr returns an error wrapping ErrStalled once issuing has failed for
// longer than MaxIssueStall.
func (n *Node) stallErr() error {
	since := n.stalled.Load()
	if since == 0 {
		return nil
	}
	d := n.clock.Now().Sub(n.base) - time.Duration(since-1)
	if d <= n.cfg.MaxIssueStall {
		return nil
	}
	return fmt.Errorf("%w for %v (see the log for the generator's error)", ErrStalled, d.Round(time.Millisecond))
}
