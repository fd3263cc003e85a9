package nodeid

import (
	"context"
	"math"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nodeid/nodeid/lease"
)

// Claim is a held node ID. It renews its lease in the background until Close
// releases it or the lease is lost; then Done is closed and Err says why. Its
// methods are safe for concurrent use.
type Claim struct {
	p       *Provider
	id      int
	version int64
	floor   int64
	key     string
	from    lease.State // state of the lease when taken: free or expired

	// snap is the claim as other goroutines read it (Valid, Status, the
	// node): one immutable snapshot, replaced whole (setFence).
	snap         atomic.Pointer[snapshot]
	issued       func() int64     // WithIssuedFunc's; nil: none
	reserveClock func() time.Time // WithReserveClock's; nil: none
	closing      atomic.Bool      // Close has begun: the release is being written

	// The claim's held state: read and written by its owner alone
	// (owner.go), the renewal loop while it runs, then Close.
	etag    string
	rec     lease.Record   // the last record written
	pending []pendingWrite // writes whose outcome is unknown, since the last landed one
	// capUntil and capSuspendUntil are the last landed write's fence for
	// LeaseDuration (fenceAt): in read mode no read arms past them.
	capUntil, capSuspendUntil int64

	reads  *readSchedule // the read schedule, in read mode while the loop runs
	woken  bool          // a read saw the ETag change: the owner writes now
	signal chan struct{} // capacity 1: a request answered (owner.go)

	err      error // why the claim ended; set before done is closed
	done     chan struct{}
	endOnce  sync.Once
	stopLoop context.CancelFunc
	loopDone chan struct{}

	closeOnce sync.Once
	closeErr  error

	subs subscription // Changed and Context (subscribe.go)
}

// newClaim builds the claim for a successful take and starts its renewal loop.
func (p *Provider) newClaim(rec lease.Record, etag string, sent time.Time, floor int64, from lease.State, o claimOptions) *Claim {
	c := &Claim{
		p: p, id: rec.NodeID, version: rec.Version, floor: floor, key: lease.RecordKey(rec.NodeID), from: from,
		issued: o.issued, reserveClock: o.reserveClock,
		done: make(chan struct{}), loopDone: make(chan struct{}), signal: make(chan struct{}, 1),
	}
	c.rec, c.etag = rec, etag
	c.capUntil, c.capSuspendUntil = c.fenceAt(sent, p.t.Lease)
	until, suspendUntil := c.fenceAt(sent, p.t.armSpan())
	c.snap.Store(&snapshot{until: until, suspendUntil: suspendUntil, reservation: rec.ReservedUntilMs,
		lastSent: sent, provenUntil: until, provenSuspendUntil: suspendUntil})
	ctx, cancel := context.WithCancel(context.Background())
	c.stopLoop = cancel
	p.goRun(func() { c.renewLoop(ctx) })
	return c
}

// NodeID returns the leased node ID.
func (c *Claim) NodeID() int { return c.id }

// Version returns nodeIdVersion of this claim: the fencing token, higher than
// that of every earlier holder of the ID.
func (c *Claim) Version() int64 { return c.version }

// TookOverExpired reports whether the claim took over an expired lease (its
// holder vanished without releasing) rather than a free one. Peers may still
// gossip the old version for a while: a broker may hold readiness until they
// show the new one.
func (c *Claim) TookOverExpired() bool { return c.from == lease.StateExpired }

// Floor returns the predecessor's reservation (Unix ms): every Snowflake
// timestamp issued under this claim must be above it.
func (c *Claim) Floor() int64 { return c.floor }

// Reservation returns the highest Snowflake timestamp (Unix ms) the last
// successful write allows. It rises with each renewal.
func (c *Claim) Reservation() int64 { return c.snap.Load().reservation }

// Valid reports whether IDs may be issued now: the claim is not fenced (nor in
// jeopardy) and its own monotonic clock has not reached t0 + LeaseDuration -
// SafetyMargin, t0 being when the last successful write was sent. Go's
// monotonic clock stands still while the host (a VM) is suspended; on the
// system clock the deadline is also kept on the host's real-time clock,
// which counts the suspension, so the fence falls at once on resume (see
// SuspendClock). Valid folds that deadline into the monotonic one whenever
// the real-time clock has run ahead (see foldSlack), so a later step back of
// that clock (NTP after a suspension, a strobe) can neither lift a fence that
// fell nor put off one that a suspension brought nearer: only a write that
// lands moves the fence out. It is cheap enough for every ID: one load of
// the snapshot and one clock reading, Clock.Now, which on the
// system clock (time.Now) carries both readings.
func (c *Claim) Valid() bool { return c.validOn(c.snap.Load(), c.p.clock.Now()) }

// ValidNow is Valid, and the time on the claim's Snowflake clock
// (SnowflakeClock of the Provider's Clock: its Wall) at the same instant, in
// Unix nanoseconds: a snowflake.ClockedFence. On the system clock both come
// from one reading, time.Now, whose monotonic part the fence and the Wall
// are measured on and whose real-time part is the suspend-counting reading:
// a generator that stamps its IDs with it reads the clock once per ID, not
// twice. On another Clock the time is its Wall, read after the fence.
func (c *Claim) ValidNow() (unixNs int64, valid bool) {
	s, now := c.snap.Load(), c.p.clock.Now()
	if !c.validOn(s, now) {
		return 0, false
	}
	if sc, ok := c.p.clock.(*systemClock); ok {
		return sc.wallNsAt(now), true
	}
	return c.p.clock.Wall().UnixNano(), true
}

// validOn is Valid judged on the fence s at now (Clock.Now); in jeopardy,
// false.
func (c *Claim) validOn(s *snapshot, now time.Time) bool {
	if s.jeopardy {
		return c.p.rules.validInJeopardy && s.until != math.MinInt64
	}
	return c.validAt(s, now)
}

// validAt is Valid out of jeopardy, judged on the fence s at now
// (Clock.Now).
func (c *Claim) validAt(s *snapshot, now time.Time) bool {
	elapsed := int64(now.Sub(c.p.base))
	if elapsed >= s.until {
		return false
	}
	left, ok := c.suspendLeft(s, now)
	if !ok {
		return true
	}
	if left <= 0 || s.until-elapsed-left > int64(foldSlack) {
		// Bring the monotonic fence to the real-time one. A write that
		// landed meanwhile replaced s: the swap fails and leaves it.
		folded := *s
		folded.until = elapsed + max(left, 0)
		c.snap.CompareAndSwap(s, &folded)
	}
	return left > 0
}

// foldSlack is how far the real-time reading may run ahead of the monotonic
// one, since the send of the last landed write, before Valid folds the
// real-time deadline into the monotonic one. The two run at one rate (NTP
// slews both) and part only at a suspension or a step, so on the hot path
// Valid writes nothing; a step back can then put the fence off by at most
// this much, which the safety margin covers.
const foldSlack = time.Millisecond

// snapshot is the claim as Valid, Status and the node read it: published
// whole through Claim.snap and never changed once published, so that one
// load sees the fence on both readings, jeopardy, the reservation and what
// Status reports of one instant. The owner moves it; Valid's fold and end
// only lower the fence (setFence).
type snapshot struct {
	// until is the fence: nanoseconds after p.base (monotonic) until
	// which the claim may issue IDs; math.MinInt64 once fenced for good.
	until int64
	// suspendUntil is the same deadline on the Clock's suspend-counting
	// reading (see SuspendClock), math.MinInt64 once fenced for good;
	// unused when the Clock has none.
	suspendUntil int64
	// jeopardy: the renewals gave up with no evidence of another writer:
	// fenced, renewing on the last ETag until a write lands (recovered)
	// or the loss is final (see jeopardy.go).
	jeopardy bool
	// reservation is the highest Snowflake timestamp (Unix ms) the last
	// landed write allows (Reservation).
	reservation int64
	// lastSent is when the last landed write was sent (Clock.Now).
	lastSent time.Time
	// provenUntil and provenSuspendUntil are the fence the last proof of
	// the lease allows, on both readings: a landed write's
	// (fenceAt), or in read mode a later read's that showed its
	// ETag (proved). Kept when the fence falls: before them no successor
	// can have taken the lease from the claim, expired nor by a
	// challenge, which Close's read-back proof (freedByOurRelease) needs.
	provenUntil, provenSuspendUntil int64
	// fellAt is when the fence fell into jeopardy (Clock.Now); zero: up.
	fellAt time.Time
	// recoveries counts the fences lifted by a landed write, published
	// with the lift: Status tells which side of a recovery it is on.
	recoveries int64
	// answering: the owner's etag is a challenge's (or a confirm's)
	// naming our last landed write (read mode, challenge.go): the next
	// write answers it, and no read on it proves the claim.
	answering bool
}

// inJeopardy reports whether the claim is in jeopardy.
func (c *Claim) inJeopardy() bool { return c.snap.Load().jeopardy }

// setFence replaces the fence with next(cur), cur being the fence now,
// and returns what it replaced and what it published: a compare and swap,
// tried again with the new cur when another writer (Valid's fold, a fence
// that falls) replaced it meanwhile. next must not change what it is
// handed; when it returns cur itself, nothing is published.
func (c *Claim) setFence(next func(cur snapshot) snapshot) (old, now snapshot) {
	for {
		p := c.snap.Load()
		n := next(*p)
		if n == *p || c.snap.CompareAndSwap(p, &n) {
			return *p, n
		}
	}
}

// suspendLeft returns the time left, in nanoseconds, until the deadline on
// the suspend-counting reading of now in s (0 once fenced), and false when
// the Clock has no such reading.
func (c *Claim) suspendLeft(s *snapshot, now time.Time) (int64, bool) {
	if c.p.suspend == nil {
		return 0, false
	}
	if s.suspendUntil == math.MinInt64 {
		return 0, true
	}
	return s.suspendUntil - c.p.suspend.SuspendReading(now), true
}

// suspendFallen reports whether the deadline on the suspend-counting reading
// of now in s has passed.
func (c *Claim) suspendFallen(s *snapshot, now time.Time) bool {
	left, ok := c.suspendLeft(s, now)
	return ok && left <= 0
}

// ValidUntilOn returns when the fence falls (ValidUntil) on another clock,
// one that reads now at this instant (the host's: package node's host clock), in Unix
// ms, capped by the reservation: what an application outside the node may
// use the ID until (the id file's validUntilMs). 0 once fenced.
func (c *Claim) ValidUntilOn(now time.Time) int64 {
	until := c.ValidUntil()
	if until.IsZero() {
		return 0
	}
	return min(c.Reservation(), now.Add(until.Sub(c.p.clock.Now())).UnixMilli())
}

// ValidUntil returns the monotonic instant (on the provider's Clock) at which
// Valid turns false unless a renewal succeeds first; the zero Time once fenced
// or in jeopardy.
func (c *Claim) ValidUntil() time.Time {
	s := c.snap.Load()
	if s.until == math.MinInt64 || (s.jeopardy && !c.p.rules.validInJeopardy) {
		return time.Time{}
	}
	return c.p.base.Add(time.Duration(s.until))
}

// ReadsFailingAt returns, in read mode, the instant (on the provider's
// Clock) from which the claim's reads count as failing: a PollInterval, the
// quarter of it after which a failed read is retried, and that retry's
// StoreTimeout after the send of the last read or write that proved the
// lease. Past it two reads in a row failed or timed out (or one that a
// write in flight held back by up to StoreTimeout, owner.go, took over a
// quarter PollInterval), and the fence falls in less than Window -
// SafetyMargin - that: a process that uses the ID
// outside the claim should stop then, before the fence. When the cap bounds
// the fence (the backstop writes are failing too), the instant is earlier.
// It is kept once the fence fell. The zero Time in write mode, whose
// renewals give up (jeopardy, or a loss) before the fence.
func (c *Claim) ReadsFailingAt() time.Time {
	t := c.p.t
	if !t.readMode() {
		return time.Time{}
	}
	sent := c.p.base.Add(time.Duration(c.snap.Load().provenUntil) - (t.Window - t.SafetyMargin))
	return sent.Add(t.PollInterval + t.PollInterval/4 + t.StoreTimeout)
}

// LossWindow returns the provider's Timings.LossWindow: the time, at most,
// between the moment this claim gives up renewing and its fence, which a
// process that uses the ID outside the claim has to stop after a loss.
func (c *Claim) LossWindow() time.Duration { return c.p.t.LossWindow() }

// Done is closed when the claim ends: lost, or closed by its owner.
func (c *Claim) Done() <-chan struct{} { return c.done }

// Err returns nil while the claim is held, an error wrapping ErrLeaseLost after
// a loss, and ErrClosed after Close.
func (c *Claim) Err() error {
	select {
	case <-c.done:
		return c.err
	default:
		return nil
	}
}

// Check returns Err, or an error while the claim is not Valid (ErrJeopardy
// while in jeopardy): the health checker of a broker.
func (c *Claim) Check() error {
	if err := c.Err(); err != nil {
		return err
	}
	if c.inJeopardy() {
		return ErrJeopardy
	}
	if !c.Valid() {
		return ErrLeaseLost
	}
	return nil
}

// reserveWall returns the wall reading a write of this claim reserves from:
// the Provider's Wall, or the reserve clock when that is later.
func (c *Claim) reserveWall() time.Time {
	wall := c.p.clock.Wall()
	if c.reserveClock != nil {
		if ext := c.reserveClock(); ext.After(wall) {
			return ext
		}
	}
	return wall
}

// ObserveVersion reports a version of this claim's node ID seen elsewhere (in
// gossip). A higher version than the claim's means another task holds the ID:
// the claim fences at once and ends as lost.
//
// During Close it is ignored: the release may land before its answer comes
// back, and a successor's higher version is then expected, not a loss.
func (c *Claim) ObserveVersion(v int64) {
	if v > c.version && !c.closing.Load() {
		c.lose(lostf("a peer runs node %d with version %d, above ours %d", c.id, v, c.version))
	}
}

// Status is a snapshot of a claim for status pages.
type Status struct {
	NodeID             int
	Version            int64
	Valid              bool
	Floor, Reservation int64
	// SinceWrite is the time since the last successful write was sent, on this
	// task's monotonic clock.
	SinceWrite time.Duration
	// Jeopardy reports a claim whose renewals gave up with no evidence of
	// another writer: fenced, renewing on its last write (Config.LossGrace);
	// Fenced is how long ago its fence fell then.
	Jeopardy bool
	Fenced   time.Duration
	// Recoveries counts the times a fence that fell was lifted by a write
	// on the claim's own last ETag that landed (in jeopardy, or by time
	// while the write was in flight). It is read in the same instant as
	// Valid: a snapshot whose Valid is false and a later one whose Valid is
	// true have different Recoveries.
	Recoveries int64
	// Challenged reports a claim answering a challenge of read mode (its
	// renewal met one naming its own write; docs/evidence/design.md section 11).
	Challenged bool
	Err        error
}

// Status returns a snapshot of the claim.
func (c *Claim) Status() Status {
	s, now := c.snap.Load(), c.p.clock.Now()
	st := Status{
		NodeID: c.id, Version: c.version, Valid: c.validOn(s, now), Floor: c.floor,
		Reservation: s.reservation, SinceWrite: now.Sub(s.lastSent), Err: c.Err(),
		Jeopardy: s.jeopardy, Recoveries: s.recoveries, Challenged: s.answering,
	}
	if st.Jeopardy && !s.fellAt.IsZero() {
		st.Fenced = now.Sub(s.fellAt)
	}
	return st
}

// fenceAt returns the fence that a proof of the lease sent at sent, good
// for span, allows: sent + span - SafetyMargin, in nanoseconds after p.base,
// and on the Clock's suspend-counting reading (see SuspendClock; MaxInt64
// when it has none). A landed write proves it for armSpan (LeaseDuration,
// in read mode Window) and caps the reads for LeaseDuration (read mode:
// Backstop); a read that shows its ETag proves it for Window.
func (c *Claim) fenceAt(sent time.Time, span time.Duration) (until, suspendUntil int64) {
	d := c.p.rules.fenceSpan(span, c.p.t.SafetyMargin)
	until, suspendUntil = int64(sent.Sub(c.p.base)+d), math.MaxInt64
	if c.p.suspend != nil {
		suspendUntil = c.p.suspend.SuspendReading(sent) + int64(d)
	}
	return until, suspendUntil
}

// fence stops the claim from issuing IDs, at once and for good.
func (c *Claim) fence() {
	c.setFence(func(s snapshot) snapshot {
		s.until, s.suspendUntil = math.MinInt64, math.MinInt64
		return s
	})
}

// end fences and closes Done with err, once. Any goroutine may end a claim.
func (c *Claim) end(err error) bool {
	ended := false
	c.endOnce.Do(func() {
		c.fence()
		c.stopLoop()
		c.err = err
		close(c.done)
		c.subs.stop(err, true)
		ended = true
	})
	return ended
}

// lose ends the claim as lost.
func (c *Claim) lose(err error) {
	if c.end(err) {
		c.p.log.Error("lost node ID: stopped issuing IDs", "nodeId", c.id, "version", c.version, "err", err)
		c.p.cfg.Observer.Lost(c.id, err)
	}
}
