package snowflake

import (
	"errors"
	"math"
	"sync"
	"sync/atomic"
	"time"
)

// A Generator issues IDs for one node ID. It is safe for concurrent use.
//
// Its state is one word, the last issued (timestamp, sequence), updated by
// compare-and-swap: no lock on the way to an ID, one clock read per call. A
// call that must wait (the millisecond's sequence is used up, the clock is
// behind, the reservation is reached) takes the slow path, where one caller
// waits and the others block until it is done, so waiting costs at most one
// core however many goroutines call.
//
// Timestamps are read fresh at every call: an ID's timestamp is the
// millisecond its call read the clock (never earlier), or, after the clock
// stepped back, the last issued timestamp, which is ahead of the clock. With
// a CoarseClock, "read the clock" means its last tick.
type Generator struct {
	_     [64]byte     // keep state alone on its cache line:
	state atomic.Int64 // timestamp<<seqBits | sequence of the last ID issued
	_     [56]byte     // it is the only word every call writes

	// Read-only after New.
	sys      bool         // the clock is a systemClock: read it directly
	sysStart time.Time    // its start (with the monotonic reading)
	sysBase  int64        // its start in nanoseconds since the layout's epoch
	clock    Clock        // the precise clock: Config.Clock, or the one under a CoarseClock
	coarse   *CoarseClock // Config.Clock when it is a CoarseClock
	fence    Fence
	clocked  ClockedFence // fence, when it is one and the clock is not coarse
	reserve  func() int64

	seqBits  uint  // Layout.SequenceBits
	nodeBits uint  // Layout.NodeBits
	seqMask  int64 // Layout.MaxSequence()
	// preciseMask: with a CoarseClock, a call that finds the last issued
	// sequence number's low bits all set reads the precise clock.
	preciseMask int64
	nodePart    int64 // NodeID << seqBits
	epochMs     int64 // Layout.EpochMs
	epochNs     int64 // Layout.EpochMs in nanoseconds
	maxTs       int64 // last issuable timestamp, in ms since the epoch
	floorMs     int64 // Config.FloorMs
	initial     int64 // state before the first ID: the floor, sequence used up

	maxClockWait int64 // nanoseconds
	maxResWait   int64 // nanoseconds

	mu     sync.Mutex    // guards waitCh
	waitCh chan struct{} // non-nil while a caller waits; closed when it is done

	stopMu sync.Mutex   // serialises Stop
	final  atomic.Int64 // LastIssuedMs at Stop
}

// stopped is the state of a stopped generator: its sequence is used up and
// its timestamp is beyond any the generator issues (maxTs is capped below
// it), so every call takes the slow path, which sees it.
const stopped = math.MaxInt64

// preciseEvery is how often, in sequence numbers, a generator on a
// CoarseClock reads the precise clock anyway (a power of two).
const preciseEvery = 64

// pollInterval bounds each sleep of a waiting caller, which then checks the
// fence, the clock and the reservation again.
const pollInterval = time.Millisecond

// New validates cfg and returns a Generator.
func New(cfg Config) (*Generator, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	l := cfg.Layout
	g := &Generator{
		clock:        cfg.Clock,
		fence:        cfg.Fence,
		reserve:      cfg.Reservation,
		seqBits:      uint(l.SequenceBits),
		nodeBits:     uint(l.NodeBits),
		seqMask:      l.MaxSequence(),
		preciseMask:  min(l.MaxSequence(), preciseEvery-1),
		nodePart:     cfg.NodeID << l.SequenceBits,
		epochMs:      l.EpochMs,
		epochNs:      l.EpochMs * int64(time.Millisecond),
		maxTs:        min(l.MaxTimeMs()-l.EpochMs, math.MaxInt64>>l.SequenceBits-1),
		floorMs:      cfg.FloorMs,
		maxClockWait: int64(cfg.MaxClockWait),
		maxResWait:   int64(cfg.MaxReservationWait),
	}
	if g.clock == nil {
		g.clock = newSystemClock()
	}
	if c, ok := g.clock.(*CoarseClock); ok {
		g.coarse, g.clock = c, c.base
	}
	if c, ok := g.clock.(*systemClock); ok {
		g.sys, g.sysStart, g.sysBase = true, c.start, c.startNs-g.epochNs
	}
	if cf, ok := cfg.Fence.(ClockedFence); ok && g.coarse == nil {
		g.clocked = cf
	}
	floor := max(cfg.FloorMs-l.EpochMs, -1) // -1: no floor, issue from timestamp 0
	g.initial = floor<<g.seqBits | g.seqMask
	g.state.Store(g.initial)
	return g, nil
}

// Next returns a new ID. It fails with ErrFenced at once when the fence is
// down or the generator was stopped. It waits when the millisecond's
// sequence is used up (until the next millisecond), when the clock is behind
// the floor or a timestamp already issued (up to MaxClockWait, else
// ErrClockBackwards), and when the clock has passed the reservation (up to
// MaxReservationWait, else ErrReservationExhausted).
func (g *Generator) Next() (ID, error) {
	s, _, err := g.take(1)
	if err != nil {
		return 0, err
	}
	return g.id(s), nil
}

// NextN returns a batch of up to n new IDs, consecutive and with one
// timestamp, as a Range: it costs about as much as one Next. The range is
// shorter than n when the current millisecond has fewer sequence numbers
// left (a layout issues at most Layout.MaxSequence()+1 per millisecond); call
// again for the rest. It fails and waits as Next does, and returns an error
// for n < 1.
func (g *Generator) NextN(n int) (Range, error) {
	if n < 1 {
		return Range{}, errBadCount
	}
	s, k, err := g.take(int64(n))
	if err != nil {
		return Range{}, err
	}
	return Range{First: g.id(s), N: int(k)}, nil
}

var errBadCount = errors.New("snowflake: NextN needs n >= 1")

// LastIssuedMs returns the highest timestamp issued so far, in Unix
// milliseconds, or Config.FloorMs when none was. While calls are in flight it
// is a snapshot that they may pass; after Stop it is final.
func (g *Generator) LastIssuedMs() int64 {
	s := g.state.Load()
	if s == stopped {
		return g.final.Load()
	}
	return g.issuedMs(s)
}

// Stop stops the generator for good: every later call fails with ErrFenced.
// It returns the highest timestamp issued (Config.FloorMs when none was), in
// Unix milliseconds, and no call completing after Stop returns can have issued
// a higher one: this is the value to lower the lease's reservation to when
// releasing the node ID. Stop may be called more than once; later calls
// return the same value.
func (g *Generator) Stop() (lastIssuedMs int64) {
	g.stopMu.Lock()
	defer g.stopMu.Unlock()
	for {
		s := g.state.Load()
		if s == stopped {
			return g.final.Load()
		}
		ms := g.issuedMs(s)
		g.final.Store(ms) // before the swap: whoever sees stopped sees ms
		if g.state.CompareAndSwap(s, stopped) {
			return ms
		}
	}
}

func (g *Generator) issuedMs(s int64) int64 {
	if s == g.initial {
		return g.floorMs
	}
	return s>>g.seqBits + g.epochMs
}

// id returns the ID of state s (timestamp<<seqBits | sequence).
func (g *Generator) id(s int64) ID {
	return ID((s&^g.seqMask)<<g.nodeBits | g.nodePart | s&g.seqMask)
}

// fastNowNs returns the clock in nanoseconds since the layout's epoch, as
// read on the way to an ID: a CoarseClock's cached reading when there is
// one, else a precise reading. Every preciseEvery'th sequence number is
// taken after a precise reading even with a CoarseClock: when every
// processor is busy issuing IDs, the clock's goroutine may not run for up to
// the scheduler's 10 ms time slice, and this bounds how far the timestamps of
// a busy generator fall behind by the time 64 IDs take instead.
func (g *Generator) fastNowNs() int64 {
	if g.coarse != nil && g.state.Load()&g.preciseMask != g.preciseMask {
		return g.coarse.reading() - g.epochNs
	}
	return g.nowNs()
}

// nowNs returns the precise clock in nanoseconds since the layout's epoch.
func (g *Generator) nowNs() int64 {
	if g.sys {
		return g.sysBase + int64(time.Since(g.sysStart))
	}
	return g.clock.Now().UnixNano() - g.epochNs
}

// limit returns the last timestamp that may be issued now, in ms since the
// epoch: the reservation, capped by the layout.
func (g *Generator) limit() int64 {
	if g.reserve == nil {
		return g.maxTs
	}
	r := g.reserve()
	if r < g.epochMs {
		return -1
	}
	return min(r-g.epochMs, g.maxTs)
}

// take claims k (1 <= k <= n) consecutive sequence numbers in one
// millisecond and returns the state of the first one.
func (g *Generator) take(n int64) (first, k int64, err error) {
	var nowNs int64
	if g.clocked != nil {
		ns, valid := g.clocked.ValidNow()
		if !valid {
			return 0, 0, ErrFenced
		}
		nowNs = ns - g.epochNs
	} else {
		if g.fence != nil && !g.fence.Valid() {
			return 0, 0, ErrFenced
		}
		nowNs = g.fastNowNs()
	}
	entryNs := int64(math.MinInt64) // set at the first wait
	for {
		now := floorMs(nowNs)
		old := g.state.Load()
		if ts := old >> g.seqBits; now > ts {
			// A new millisecond: start its sequence at 0.
			if now <= g.limit() {
				k = min(n, g.seqMask+1)
				if g.state.CompareAndSwap(old, now<<g.seqBits|(k-1)) {
					if g.coarse != nil {
						g.coarse.markUsed() // keeps it ticking
					}
					return now << g.seqBits, k, nil
				}
				continue
			}
		} else if seq := old & g.seqMask; seq < g.seqMask {
			// The last issued millisecond (now, or ahead of a clock that
			// stepped back) has sequence numbers left.
			k = min(n, g.seqMask-seq)
			if g.state.CompareAndSwap(old, old+k) {
				return old + 1, k, nil
			}
			continue
		}
		if entryNs == math.MinInt64 {
			entryNs = g.nowNs()
		}
		if err := g.wait(entryNs); err != nil {
			return 0, 0, err
		}
		if g.fence != nil && !g.fence.Valid() {
			return 0, 0, ErrFenced
		}
		nowNs = g.nowNs()
	}
}

// floorMs converts nanoseconds to milliseconds, rounding down (also below 0).
func floorMs(ns int64) int64 {
	if ns >= 0 {
		return ns / int64(time.Millisecond)
	}
	return -((-ns + int64(time.Millisecond) - 1) / int64(time.Millisecond))
}
