package nodeid

import (
	"errors"
	"fmt"
	"time"
)

var (
	// ErrClusterFull means no node ID was free or expired until the acquire
	// timeout.
	ErrClusterFull = errors.New("nodeid: no free node ID (cluster full)")
	// ErrLeaseLost means the claim ended without a release: another task took the
	// lease, a renewal failed past its deadline, or a peer runs the ID with a
	// higher version. The wrapping error says which.
	ErrLeaseLost = errors.New("nodeid: lease lost")
	// ErrJeopardy is what Claim.Check returns while the claim is in
	// jeopardy (see Config.LossGrace): fenced, but renewing, and it may
	// recover. It is not a loss: Err is nil and Done stays open meanwhile.
	ErrJeopardy = errors.New("nodeid: lease in jeopardy (fenced, renewing on its last write)")
	// ErrClosed means the claim was closed (released) by its owner.
	ErrClosed = errors.New("nodeid: claim closed")
	// ErrManifestMismatch means the cluster manifest pins otherwise than this
	// task's configuration (Pinned): IDs would collide, or the rules differ.
	ErrManifestMismatch = errors.New("nodeid: cluster manifest does not match this task's configuration")
	// ErrClockBehind means this task's wall clock is more than MaxClockWait
	// behind the floor of every free or expired lease Acquire found (or their
	// last holders' clocks were ahead): the wrapping error names the clock and floors.
	ErrClockBehind = errors.New("nodeid: wall clock behind the lease's floor")
	// ErrAwaitingFloor is why Acquire, holding a node ID it took, has not
	// returned it yet (WaitObserver.AcquireWaiting): the ID's floor is more
	// than Config.MaxClockWait ahead of this task's wall clock.
	ErrAwaitingFloor = errors.New("nodeid: holding a node ID until this task's clock nears its floor")
)

// AwaitingFloorError is the error WaitObserver.AcquireWaiting reports while
// Acquire holds a node ID until this task's clock nears its floor: which ID,
// version and floor, and how long until then. It matches ErrAwaitingFloor.
type AwaitingFloorError struct {
	NodeID       int
	Version      int64
	FloorMs      int64         // the floor, Unix ms: the last holder's reservation
	MaxClockWait time.Duration // Config.MaxClockWait: how near the clock must come
	Wait         time.Duration // how long from the report until the clock is that near
}

// Error says which node ID is held and until when.
func (e *AwaitingFloorError) Error() string {
	return fmt.Sprintf("%v: node %d (version %d) until within MaxClockWait %v of its floor %d, %v from now",
		ErrAwaitingFloor, e.NodeID, e.Version, e.MaxClockWait, e.FloorMs, e.Wait)
}

// Unwrap returns ErrAwaitingFloor.
func (e *AwaitingFloorError) Unwrap() error { return ErrAwaitingFloor }
