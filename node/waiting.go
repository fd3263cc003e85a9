package node

import (
	"errors"
	"fmt"
	"time"

	"github.com/nodeid/nodeid/nodeid"
)

// waitLogEvery is how often a node that is still acquiring logs why: the
// first round that takes no ID is logged at once, then one line per period.
const waitLogEvery = 10 * time.Second

// acquireWait is why the acquisition has taken no node ID yet: the last
// round of Acquire that took none.
type acquireWait struct {
	err    error         // why (wraps nodeid.ErrClusterFull when every ID was held)
	rounds int           // rounds so far
	waited time.Duration // since the acquisition began
}

// reason is the health checks' answer while the node waits: it wraps
// ErrAcquiring and the round's error.
func (w *acquireWait) reason() error {
	return fmt.Errorf("%w (%d attempts in %v): %w", ErrAcquiring, w.rounds, w.waited.Round(time.Millisecond), w.err)
}

// acquireWaiting records why a round of Acquire took no ID, for Check, and
// logs it the first time and then every waitLogEvery. The provider calls it
// from Start's goroutine (nodeid.WaitObserver).
func (n *Node) acquireWaiting(round int, err error) {
	now := n.clock.Now()
	w := &acquireWait{err: err, rounds: round, waited: now.Sub(n.acquireStart)}
	n.waiting.Store(w)
	if !n.waitLogged.IsZero() && now.Sub(n.waitLogged) < waitLogEvery {
		return
	}
	n.waitLogged = now
	if af := w.awaitingFloor(); af != nil {
		n.log.Info("holding a node ID until this task's clock nears its floor: not serving it yet", "nodeId", af.NodeID,
			"version", af.Version, "floorMs", af.FloorMs, "wait", af.Wait.Round(time.Millisecond).String())
		return
	}
	n.log.Warn("no node ID taken yet: still acquiring", "reason", err.Error(), "attempts", round,
		"waited", w.waited.Round(time.Millisecond).String(), "acquireTimeout", n.cfg.Provider.AcquireTimeout.String())
}

// awaitingFloor returns the node ID Acquire holds until this task's clock
// nears its floor (nodeid.ErrAwaitingFloor), nil when the wait is another.
func (w *acquireWait) awaitingFloor() *nodeid.AwaitingFloorError {
	var af *nodeid.AwaitingFloorError
	if w == nil || !errors.As(w.err, &af) {
		return nil
	}
	return af
}
