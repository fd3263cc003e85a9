package nodeid_test

import (
	"time"

	"github.com/nodeid/nodeid/nodeid"
	"github.com/nodeid/nodeid/snowflake"
)

// Package node's rules for an application that stamps IDs with the host's
// clock, as the simulation runs them. The clock logic is nodeid's
// (internal/hostclock, Claim.ValidUntilOn, WithReserveClock), driven as package
// node drives it; the file and the child are package node's few lines of
// bookkeeping around it, kept in step with node/idfile.go and
// node/supervise.go.
const (
	simIDFileGrace   = 1500 * time.Millisecond // node.Config.IDFileGrace, for 4 s leases
	simIDFileHorizon = simIDFileGrace          // node.Config.IDFileHorizon, no more than the grace
	simKillMargin    = 100 * time.Millisecond  // node.ChildConfig.KillMargin
	simPoll          = 50 * time.Millisecond   // the supervisor's deadlinePoll
)

// simApp is an application outside the node that stamps Snowflake IDs with
// the host's clock: an id-file reader, a process of its own that outlives a
// crashed or paused node and stops at the file's validUntilMs by itself; or a
// supervised child, which dies and freezes with the node, is started once the
// host's clock is past the floor and below the reservation, is killed at the
// fence or before the host's clock reaches the reservation, and also honours
// the id file (docs/evidence/design.md section 8: the supervisor alone leaves a frozen
// supervisor's child, and one resumed with its VM, running for a while).
type simApp struct {
	t     *simTask
	child bool
	c     *nodeid.Claim // the claim it serves

	// The node's side: the id file and the child.
	file        simFile // what the file says, while up
	up          bool    // the file exists
	written     bool    // written at least once
	floorPassed bool    // the host's clock was past the floor: the file may be written
	retired     bool    // removed for good
	graceDone   bool    // the application had its grace after the removal (for the oldIDFileRules mutation)
	maxValidMs  int64   // the highest validUntilMs written
	running     bool    // the child runs
	childRan    bool
	fenceReal   time.Time // the supervisor's fence, on the host's clock

	// The application's side.
	read        simFile // the file as last read
	readOK      bool    // it existed then
	lastTs, seq int64   // its own generator: timestamps never go back
	stopped     bool    // stopped for good (the child ended, the reader saw its node end)
}

// simFile is the id file's content; floorMs is the ID's floor, which the
// application issues above (a child gets it as NODEID_FLOOR_MS).
type simFile struct {
	nodeID       int
	version      int64
	validUntilMs int64
	floorMs      int64
}

// acquired starts serving claim c (whose writes reserve above the host's
// clock: simTask.claimOptions): the file is written (and the child started)
// once the host's clock is past the floor.
func (a *simApp) acquired(c *nodeid.Claim) {
	a.c = c
	a.t.s.schedule(a.t.s.now, a.t, false, a.awaitFloor)
	a.t.s.schedule(a.t.s.now, a.readerTask(), false, a.reread)
	a.t.s.schedule(a.t.s.now, a.readerTask(), false, a.issue)
}

// readerTask is the task whose events the application's are: the node's for a
// child (it freezes and dies with it), none for a reader (a process of its
// own).
func (a *simApp) readerTask() *simTask {
	if a.child {
		return a.t
	}
	return nil
}

// awaitFloor writes the file (and starts the child) once the host's clock is
// past the floor, and for a child, KillMargin below the reservation.
func (a *simApp) awaitFloor() {
	c, t := a.c, a.t
	if isDone(c) || a.stopped {
		return
	}
	host := t.host.Read()
	if ahead := time.Duration(c.Floor()-host.UnixMilli()+1) * time.Millisecond; ahead > 0 {
		t.s.schedule(t.s.now+ahead, t, false, a.awaitFloor)
		return
	}
	if a.child && host.Add(simKillMargin).UnixMilli() >= c.Reservation() {
		t.s.schedule(t.s.now+simPoll, t, false, a.awaitFloor)
		return
	}
	a.floorPassed = true
	a.sync()
	t.s.schedule(t.s.now+simIDFileHorizon/4, t, false, a.tick)
	if a.child {
		a.running, a.childRan = true, true
		a.refreshFence()
		t.s.schedule(t.s.now+simPoll, t, false, a.supervise)
	}
}

// writeFile writes the id file: validUntilMs is the fence on the host's
// clock, capped by the reservation and by the horizon.
func (a *simApp) writeFile() {
	host := a.t.host.Read()
	until := a.c.ValidUntilOn(host)
	if !a.oldRules() {
		until = min(until, host.Add(simIDFileHorizon).UnixMilli())
	}
	a.file = simFile{nodeID: a.c.NodeID(), version: a.c.Version(), validUntilMs: until, floorMs: a.c.Floor()}
	a.up, a.written = true, true
	a.maxValidMs = max(a.maxValidMs, a.file.validUntilMs)
}

// sync is node's idFileState.sync: once the floor has passed and until the
// file is removed for good, it is written while the claim is valid and
// taken down while it is not.
func (a *simApp) sync() {
	if !a.floorPassed || a.retired {
		return
	}
	if a.c.Valid() {
		a.writeFile()
	} else {
		a.up = false
	}
}

// tick is the node's refresh of the file, every horizon/4.
func (a *simApp) tick() {
	if a.retired || isDone(a.c) {
		return
	}
	a.sync()
	a.t.s.schedule(a.t.s.now+simIDFileHorizon/4, a.t, false, a.tick)
}

// renewed rewrites the file after a renewal.
func (a *simApp) renewed(c *nodeid.Claim) {
	a.sync()
	if a.up {
		a.refreshFence()
	}
}

// refreshFence moves the claim's fence onto the host's clock, as the
// supervisor does when it reads a later fence.
func (a *simApp) refreshFence() {
	if v := a.c.ValidUntil(); !v.IsZero() {
		a.fenceReal = a.t.host.Read().Add(v.Sub(a.t.Now()))
	}
}

// supervise is the supervisor's poll: SIGKILL when the fence is within
// KillMargin (on the monotonic clock, or on the host's), or the host's clock
// within KillMargin of the reservation.
func (a *simApp) supervise() {
	if !a.running {
		return
	}
	t, c := a.t, a.c
	host := t.host.Read()
	fence := c.ValidUntil()
	if fence.IsZero() || !t.Now().Before(fence.Add(-simKillMargin)) || !host.Before(a.fenceReal.Add(-simKillMargin)) ||
		host.Add(simKillMargin).UnixMilli() >= c.Reservation() {
		t.s.counts["child killed"]++
		a.running, a.stopped = false, true
		return
	}
	t.s.schedule(t.s.now+simPoll, t, false, a.supervise)
}

// fenced: the claim entered jeopardy. The file is removed (the reader stops at
// its next read, and at validUntilMs anyway); the child is killed at the
// supervisor's next poll (the fence is down).
func (a *simApp) fenced() { a.sync() }

// recovered: a write lifted the fence of the claim in jeopardy; the file is
// written again, if it was before.
func (a *simApp) recovered() {
	if a.c != nil && !a.stopped {
		a.sync()
	}
}

// lost: the node's claim ended lost. It removes the file and stops the child.
func (a *simApp) lost() {
	a.up, a.retired = false, true
	if a.child {
		a.running, a.stopped = false, true
	}
}

// stop is the application's part of a graceful stop: the child is stopped,
// the file removed, and the application given its grace before the release.
func (a *simApp) stop() {
	if a.child {
		a.running, a.stopped = false, true
	}
	wasUp := a.up
	a.up, a.retired = false, true
	if wasUp {
		a.t.s.wait(a.t, simIDFileGrace)
		a.graceDone = true
	}
}

// lowestRelease is node's idFileState.lowestRelease: the reservation the
// release writes, given last, the highest timestamp the node's own generator
// issued.
func (a *simApp) lowestRelease(last int64) int64 {
	if !a.written && !a.childRan {
		return last
	}
	last = max(last, a.t.host.High().UnixMilli())
	if a.oldRules() && a.graceDone {
		return last // the rule before the third review
	}
	return max(last, a.maxValidMs)
}

// oldRules reports whether the run's mutation restores the id file's rules
// before the third review.
func (a *simApp) oldRules() bool {
	m := a.t.s.params.mutation
	return m != nil && m.oldIDFileRules
}

// gone reports whether the application will issue nothing more.
func (a *simApp) gone() bool {
	return a.stopped || a.c == nil || (!a.up && !a.readOK)
}

// reread reads the file, at least every second.
func (a *simApp) reread() {
	if a.stopped {
		return
	}
	a.read, a.readOK = a.file, a.up
	ended := a.t.crashed || a.t.stopped || isDone(a.c)
	if ended && (!a.up || a.t.hostNow().UnixMilli() >= a.file.validUntilMs) {
		a.stopped = true // the file is gone, or its node will never extend it
		return
	}
	a.t.s.schedule(a.t.s.now+a.t.s.between(200*time.Millisecond, time.Second), a.readerTask(), false, a.reread)
}

// issue stamps 1 to 4 IDs with the host's clock, while the file as last read
// allows it and the host's clock is past the floor and before validUntilMs.
func (a *simApp) issue() {
	if a.stopped {
		return
	}
	s, t := a.t.s, a.t
	s.schedule(s.now+s.between(20*time.Millisecond, 250*time.Millisecond), a.readerTask(), false, a.issue)
	if !a.readOK || (a.child && !a.running) {
		return
	}
	f := a.read
	for range 1 + s.rng.IntN(4) {
		ms := t.hostNow().UnixMilli()
		switch {
		case ms >= f.validUntilMs || ms <= f.floorMs || ms < a.lastTs:
			return // not allowed, or the host's clock went back: wait
		case ms == a.lastTs && a.seq == t.cfg.Layout.MaxSequence():
			return
		case ms == a.lastTs:
			a.seq++
		default:
			a.lastTs, a.seq = ms, 0
		}
		id, err := t.cfg.Layout.Compose(snowflake.Parts{TimeMs: ms, NodeID: int64(f.nodeID), Seq: a.seq})
		if err != nil {
			panic(err)
		}
		s.check.issuedOutside(t, f, id)
	}
}
