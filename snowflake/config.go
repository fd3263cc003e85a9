package snowflake

import (
	"fmt"
	"strings"
	"time"
)

// Config configures a Generator. Start from DefaultConfig and set NodeID,
// then the inputs that come from the node ID's lease: Fence, FloorMs and
// Reservation. New validates it once; the zero value of a field means
// literally zero (no wait, no floor), except where a field says nil means a
// default.
type Config struct {
	// Layout is the bit split and epoch of the IDs. Every generator of one
	// ID space must use the same layout. Default: DefaultLayout(),
	// 41/10/12 with the epoch 2025-01-01T00:00:00Z.
	Layout Layout

	// NodeID is this generator's node ID, 0 to Layout.MaxNodeID(). No two
	// live generators of one ID space may share it: lease it (nodeid does).
	// No default: 0 is a valid node ID.
	NodeID int64

	// Fence is checked at every call; while it is not Valid, calls fail
	// with ErrFenced at once. nil: never fenced (tests, or a node ID
	// assigned by hand).
	Fence Fence

	// FloorMs, in Unix milliseconds, is a timestamp this node ID may have
	// used before: the generator issues only timestamps strictly above it.
	// A successor sets it to the reservedUntilMs of the lease it took over,
	// so it never repeats an ID its predecessor could have issued, whatever
	// the two clocks say. 0: no floor. Must be below Layout.MaxTimeMs().
	FloorMs int64

	// Reservation returns the highest timestamp, in Unix milliseconds, the
	// generator may issue: the reservedUntilMs of the lease's last
	// successful write, which renewals raise. When the clock passes it the
	// generator waits for it to move (up to MaxReservationWait). It is
	// called at most once per millisecond in which IDs are issued, and while
	// waiting: it must be cheap (an atomic load) and safe for concurrent
	// use. It should never decrease while the generator runs. nil: no
	// limit but the layout's.
	Reservation func() int64

	// Clock is the source of time. nil: NewSystemClock(), the wall clock
	// read once plus the monotonic clock, which never steps. A
	// CoarseClock makes IDs cheaper where clock reads are slow, for
	// timestamps up to its resolution late.
	Clock Clock

	// MaxClockWait is how long a call may wait for a clock that is behind
	// the floor or behind a timestamp already issued (a successor with a
	// slow clock, or a clock stepped back). Longer gaps fail with
	// ErrClockBackwards at once, naming the gap. A larger value tolerates
	// worse clocks; a smaller one fails sooner instead of stalling callers.
	// Waiting for the next millisecond when its sequence is used up is not
	// limited by it. Default: 5 s.
	MaxClockWait time.Duration

	// MaxReservationWait is how long a call may wait for the reservation
	// to move once the clock has passed it; then ErrReservationExhausted.
	// To ride out a wall clock that jumped ahead, it should cover one lease
	// renewal interval. Default: 5 s.
	MaxReservationWait time.Duration
}

// DefaultConfig returns a Config with DefaultLayout and the default waits;
// set NodeID and the lease inputs before New.
func DefaultConfig() Config {
	return Config{
		Layout:             DefaultLayout(),
		MaxClockWait:       5 * time.Second,
		MaxReservationWait: 5 * time.Second,
	}
}

// Validate reports whether c is usable, the checks New makes: a valid
// Layout, NodeID in range, FloorMs between 0 and the layout's last
// timestamp, non-negative waits. Errors wrap ErrInvalidConfig (and
// ErrInvalidLayout for the layout) and name the field.
func (c *Config) Validate() error {
	if err := c.Layout.Validate(); err != nil {
		return &configError{field: "Layout", err: err}
	}
	l := c.Layout
	switch {
	case c.NodeID < 0 || c.NodeID > l.MaxNodeID():
		return &configError{field: "NodeID", msg: fmt.Sprintf("%d is outside 0 to %d (NodeBits %d)", c.NodeID, l.MaxNodeID(), l.NodeBits)}
	case c.FloorMs < 0:
		return &configError{field: "FloorMs", msg: fmt.Sprintf("%d is negative (0 means no floor)", c.FloorMs)}
	case c.FloorMs >= l.MaxTimeMs():
		return &configError{field: "FloorMs", msg: fmt.Sprintf("%d is at or past the layout's last timestamp %d", c.FloorMs, l.MaxTimeMs())}
	case c.MaxClockWait < 0:
		return &configError{field: "MaxClockWait", msg: fmt.Sprintf("%v is negative", c.MaxClockWait)}
	case c.MaxReservationWait < 0:
		return &configError{field: "MaxReservationWait", msg: fmt.Sprintf("%v is negative", c.MaxReservationWait)}
	}
	return nil
}

// configError is a Validate failure: it matches ErrInvalidConfig, and also
// the layout's error when the layout failed.
type configError struct {
	field string
	msg   string
	err   error
}

func (e *configError) Error() string {
	if e.err != nil {
		return ErrInvalidConfig.Error() + ": " + e.field + ": " + strings.TrimPrefix(e.err.Error(), "snowflake: ")
	}
	return ErrInvalidConfig.Error() + ": " + e.field + ": " + e.msg
}

func (e *configError) Is(target error) bool { return target == ErrInvalidConfig }

func (e *configError) Unwrap() error { return e.err }
