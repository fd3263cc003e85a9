package node

import (
	"sync"
	"time"

	"github.com/nodeid/nodeid/nodeid"
)

// hostClock is the clock an application outside the node stamps its Snowflake
// IDs with: an id-file reader or the supervised child reads the host's
// real-time clock (Config.HostClock), which steps (NTP, a manual date, a VM
// resumed after a suspension), where the node's own wall clock
// (nodeid.SystemClock: read once, then advanced by the monotonic clock) does
// not. The two can disagree by any amount after a step, so everything the node
// decides for those applications is decided on this clock:
//
//   - they start only once it is past the ID's floor (waitFloorPassed);
//   - the id file's validUntilMs is on it, capped by the reservation, and the
//     child is killed before it reaches the reservation (the reservation
//     bounds what they stamp, as it bounds the node's own generator);
//   - every write reserves above it too (nodeid.Claim.SetReserveClock with
//     high), and the release keeps the reservation at or above high, the
//     highest reading anyone may have taken of it.
//
// It keeps the largest amount by which it was seen ahead of the node's wall
// clock: a reading taken before a step back is still covered by high after it.
type hostClock struct {
	now  func() time.Time // the host's clock
	wall nodeid.Clock     // the node's clock (its Wall)

	mu    sync.Mutex
	ahead time.Duration // the largest host - wall seen
	seen  bool
}

func newHostClock(now func() time.Time, wall nodeid.Clock) *hostClock {
	return &hostClock{now: now, wall: wall}
}

// read returns the host's clock now, and notes how far it is ahead of the
// node's wall clock.
func (h *hostClock) read() time.Time {
	t := h.now().Round(0)
	ahead := t.Sub(h.wall.Wall())
	h.mu.Lock()
	defer h.mu.Unlock()
	if !h.seen || ahead > h.ahead {
		h.ahead, h.seen = ahead, true
	}
	return t
}

// high returns the highest reading of the host's clock that anyone may have
// taken until now: the node's wall clock plus the most the host's was seen
// ahead of it, and at least the host's clock now. It is exact while the host
// clock does not step back; after a step back it still covers the readings
// taken before it (as far as a reading of the node's showed them; the node
// reads the host clock at each id-file write and, while a child runs, every
// deadlinePoll).
func (h *hostClock) high() time.Time {
	now := h.read()
	h.mu.Lock()
	defer h.mu.Unlock()
	if seen := h.wall.Wall().Add(h.ahead); seen.After(now) {
		return seen
	}
	return now
}
