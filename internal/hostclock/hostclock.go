// Package hostclock is the clock an application outside a node stamps its
// Snowflake IDs with (package node's id-file reader and supervised child),
// kept apart from package nodeid's public API: a bare Claim has no such
// application to bound.
package hostclock

import (
	"sync"
	"time"
)

// Clock is the clock an application outside the node stamps its
// Snowflake IDs with: an id-file reader or a supervised child (package node)
// reads the host's real-time clock, which steps (NTP, a manual date, a VM
// resumed after a suspension), where nodeid.SystemClock's wall reading does not (it
// is read once, then advanced by the monotonic clock). After a step the two
// disagree by any amount, so what bounds such an application is decided on
// this clock (docs/evidence/design.md section 5): it issues only while this clock is
// past the claim's floor and before Claim.ValidUntilOn of it; every write
// reserves above High (nodeid.WithReserveClock); and a release keeps the
// reservation at or above High.
//
// It keeps the largest amount by which it was seen ahead of the wall clock of
// the Provider's Clock, so that High still covers a reading taken before a
// step back. Its methods are safe for concurrent use.
type Clock struct {
	now  func() time.Time // the host's clock
	wall Waller           // the Provider's Clock (its Wall)

	mu    sync.Mutex
	ahead time.Duration // the largest now - wall.Wall seen
	seen  bool
}

// Waller is the wall reading of a nodeid.Clock (the Provider's).
type Waller interface{ Wall() time.Time }

// New returns the host clock now (time.Now in production), judged against
// the wall clock of wall (the Provider's nodeid.Clock).
func New(now func() time.Time, wall Waller) *Clock {
	return &Clock{now: now, wall: wall}
}

// Read returns the host's clock now, and notes how far it is ahead of the
// Provider's wall clock.
func (h *Clock) Read() time.Time {
	t := h.now().Round(0)
	ahead := t.Sub(h.wall.Wall())
	h.mu.Lock()
	defer h.mu.Unlock()
	if !h.seen || ahead > h.ahead {
		h.ahead, h.seen = ahead, true
	}
	return t
}

// High returns the highest reading of the host's clock that anyone may have
// taken until now: the Provider's wall clock plus the most the host's was
// seen ahead of it, and at least the host's clock now. It is exact while the
// host clock does not step back; after a step back it still covers the
// readings taken before it, as far as a Read showed them (package node reads
// the host clock at each id-file write and, while a child runs, every
// 50 ms).
func (h *Clock) High() time.Time {
	now := h.Read()
	h.mu.Lock()
	defer h.mu.Unlock()
	if seen := h.wall.Wall().Add(h.ahead); seen.After(now) {
		return seen
	}
	return now
}
