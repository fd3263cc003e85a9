package nodeid_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/nodeid/nodeid/election"
	"github.com/nodeid/nodeid/internal/hostclock"
	"github.com/nodeid/nodeid/lease"
	"github.com/nodeid/nodeid/nodeid"
	"github.com/nodeid/nodeid/snowflake"
)

// simElection is the one election of electionSimParams.
const simElection = "jobs"

// simTask is one process: a task identity, its clocks, its claim (a node ID,
// or a leadership), and maybe an application stamping IDs with the host's
// clock.
type simTask struct {
	s        *sim
	name     string
	cfg      nodeid.Config
	tm       nodeid.Timings      // cfg's, resolved
	p        *nodeid.Provider    // node-ID mode
	e        *election.Elections // election mode
	claim    *nodeid.Claim
	lead     *election.Leadership
	pending  *nodeid.Claim // the claim the Provider just created (SimHooks.OnClaim)
	drift    float64
	skew     time.Duration // the node's wall clock minus real time
	hostSkew time.Duration // the host's clock minus real time
	monoBase time.Time

	busy, crashed, stopped bool
	closing                bool          // a graceful stop closes the claim: its end is no loss
	troubleUntil           time.Duration // its last trouble (sim_live_test.go) ended then
	// inFlight holds the send times of its store requests not yet
	// answered, by request number (reqs counts them).
	inFlight         map[int]time.Duration
	reqs             int
	jeopardyAt       time.Duration // when jeopardyClaim went into jeopardy; -1: not in jeopardy
	jeopardyClaim    *nodeid.Claim
	started          bool // its first acquire ran
	pausedUntil      time.Duration
	partitionedUntil time.Duration
	gen              *snowflake.Generator // of the current claim
	late             map[string][]func()  // writes of this task still on the wire, by key
	deferred         []*simEvent          // its events due while it was busy
	gossipSeq        int
	bare             bool // closes without WithIssuedFunc
	host             *hostclock.Clock
	app              *simApp // nil: none
}

// startTask starts a new process at time at.
func (s *sim) startTask(at time.Duration) {
	s.nextID++
	skew := time.Duration((s.rng.Float64()*2 - 1) * float64(s.params.maxSkew))
	t := &simTask{
		s: s, name: fmt.Sprintf("task-%03d", s.nextID),
		drift: (s.rng.Float64()*2 - 1) * s.params.maxDrift,
		// The host's clock and the node's agree at start (nodeid.SystemClock
		// reads the host's); faults step them apart.
		skew: skew, hostSkew: skew,
		monoBase:   time.Unix(0, 0).Add(time.Duration(s.rng.Int64N(int64(time.Hour)))),
		jeopardyAt: -1,
	}
	cfg := nodeid.DefaultConfig()
	if !s.params.production {
		cfg = nodeid.DefaultLocalConfig()
		cfg.LeaseDuration = s.between(s.params.minLease, s.params.maxLease-time.Millisecond).Truncate(time.Millisecond)
		cfg.RenewInterval, cfg.RenewDeadline = cfg.LeaseDuration/3, cfg.LeaseDuration*2/3
		cfg.SafetyMargin = s.params.safetyMargin
	}
	if s.params.readMode {
		b := s.params.backstop
		cfg.KeepAlive, cfg.Backstop, cfg.Window, cfg.PollInterval = nodeid.KeepAliveRead, b, (b / 3).Truncate(time.Millisecond), 300*time.Millisecond
		cfg.RenewInterval, cfg.RenewDeadline = b/3, b*2/3
		if s.params.liveTimings {
			cfg.Backstop, cfg.MaxLeaseDuration, cfg.Window = 90*time.Second, 90*time.Second, 1200*time.Millisecond
			cfg.RenewInterval, cfg.RenewDeadline, cfg.StoreTimeout = 2*time.Second, 88*time.Second, 500*time.Millisecond
		}
	}
	cfg.TaskID, cfg.ClusterSize, cfg.FirstNodeID, cfg.Clock = t.name, s.params.ids, s.params.firstID, t
	if s.rng.Float64() < s.params.shortWait {
		cfg.MaxClockWait = 500 * time.Millisecond
	}
	if s.params.liveTimings {
		cfg.MaxClockWait = 2 * time.Minute // a successor takes, then waits for a floor a backstop ahead
	}
	if s.params.gossip {
		cfg.Peers = s.gossip.hints(t)
		s.gossip.advertise(t, gossipEntry{}, false)
	}
	// A patient task: an Acquire looks for a minute before it gives up (a
	// bug that leaves a takeable ID untaken then shows within the progress
	// bound, not only across Acquires).
	cfg.AcquireTimeout, cfg.LossGrace = time.Minute, s.params.lossGrace
	cfg.Observer = simObserver{t: t}
	hooks := nodeid.SimHooks{OnClaim: func(c *nodeid.Claim) { t.pending = c }}
	var rules nodeid.SimRules
	if m := s.params.mutation; m != nil {
		if m.config != nil {
			m.config(&cfg)
		}
		if m.rules != nil {
			m.rules(&rules, t, cfg)
		}
	}
	cfg = nodeid.WithSimHooks(nodeid.WithSimRules(cfg, rules), hooks)
	if err := cfg.Validate(); err != nil {
		panic(err)
	}
	t.cfg, t.tm = cfg, cfg.Timings() // the timings the simulation reads
	var err error
	if s.params.election {
		t.e, err = election.New(simStore{t}, cfg)
	} else {
		t.p, err = nodeid.New(simStore{t}, cfg)
		t.bare = s.rng.Float64() < s.params.bare
		if s.rng.Float64() < s.params.external {
			t.app = &simApp{t: t, child: s.rng.IntN(2) == 0}
		}
	}
	if err != nil {
		panic(err)
	}
	hostNow := t.hostNow
	if m := s.params.mutation; m != nil && m.hostOnWall {
		hostNow = t.Wall // the bug: the host's clock taken to be the node's
	}
	t.host = hostclock.New(hostNow, t)
	s.tasks = append(s.tasks, t)
	s.schedule(at, t, true, t.acquire)
}

// acquire takes a node ID (or campaigns), and on success starts the claim's
// life: the generator, the application, gossip, and the watch for its loss.
// The claim's own renewal loop (its owner) and its requests run as procs
// of the task (simTask.Go).
func (t *simTask) acquire() {
	s := t.s
	t.started = true
	began := s.now
	var c *nodeid.Claim
	var err error
	if t.e != nil {
		var l *election.Leadership
		if l, err = t.e.Campaign(context.Background(), simElection, t.name); err == nil {
			t.lead, c = l, t.pending
		}
	} else {
		c, err = t.p.Acquire(context.Background(), t.claimOptions()...)
	}
	switch {
	case t.crashed:
		return
	case err != nil:
		s.tracef("%s: acquire failed: %v", t.name, err)
		s.counts["acquire failed"]++
		s.check.acquireFailed(t, began, err)
		s.schedule(s.now+s.between(200*time.Millisecond, 2*time.Second), t, true, t.acquire)
		return
	}
	t.claim = c
	s.tracef("%s: acquired node %d version %d", t.name, c.NodeID(), c.Version())
	s.counts["acquired"]++
	s.check.acquired(t, c)
	if s.params.gossip {
		s.gossip.advertise(t, gossipEntry{id: c.NodeID(), version: c.Version(), held: true}, false)
	}
	s.schedule(s.now, t, false, func() { t.watch(c) })
	if t.p != nil {
		t.startGenerator(c)
	}
	if t.app != nil {
		t.app.acquired(c)
	}
}

// startGenerator builds the real generator, wired as package node wires it, on
// the claim's clock. Its waits (for the floor, for the reservation) are zero:
// a waiting generator would sleep inside the event that called it, while
// that task's renewal may be further up the same stack; the caller retries
// at its next issue event instead.
func (t *simTask) startGenerator(c *nodeid.Claim) {
	gen, err := snowflake.New(snowflake.Config{
		Layout: t.cfg.Layout, NodeID: int64(c.NodeID()),
		Fence: snowflake.FenceFunc(c.Valid), FloorMs: c.Floor(), Reservation: c.Reservation,
		Clock: nodeid.SnowflakeClock(t),
	})
	if err != nil {
		panic(err)
	}
	t.gen = gen
	if t.app != nil {
		// The application is the ID's one user: the node serves no IDs of
		// its own beside an id file or a child (one ID source).
		return
	}
	t.s.schedule(t.s.now, t, false, t.issue)
}

// watch parks until the claim ends, as package node waits on Done: a loss
// (by its owner, or fenced by gossip) ends the process.
func (t *simTask) watch(c *nodeid.Claim) {
	for !isDone(c) {
		_ = t.SleepOrWake(context.Background(), time.Hour, c.Done())
	}
	if t.closing || c != t.claim {
		return
	}
	t.s.tracef("%s: lost node %d: %v", t.name, c.NodeID(), c.Err())
	t.s.counts["lost"]++
	t.exit()
}

// exit ends the process after a lost lease (node.Node removes the id file and
// exits 3); a replacement starts.
func (t *simTask) exit() {
	if t.app != nil {
		t.app.lost()
	}
	t.leave()
	t.stopped = true
	t.s.replace(time.Second, 4*time.Second)
}

// leave takes t out of gossip, as node.Node does once released or lost.
func (t *simTask) leave() {
	if t.s.params.gossip {
		t.s.gossip.advertise(t, gossipEntry{}, true)
	}
}

// issue asks the claim's generator for 1 to 4 IDs, as a broker's client would
// (Next or NextN), and checks each.
func (t *simTask) issue() {
	s, c := t.s, t.claim
	if c == nil || isDone(c) || t.crashed || t.stopped {
		return
	}
	var r snowflake.Range
	var err error
	if n := 1 + s.rng.IntN(4); n == 1 {
		var id snowflake.ID
		id, err = t.gen.Next()
		r = snowflake.Range{First: id, N: 1}
	} else {
		r, err = t.gen.NextN(n)
	}
	switch {
	case err == nil:
		for id := range r.All() {
			s.check.issued(t, c, id)
		}
	case errors.Is(err, snowflake.ErrFenced):
		s.counts["issue fenced"]++
	case errors.Is(err, snowflake.ErrReservationExhausted), errors.Is(err, snowflake.ErrClockBackwards):
		s.counts["issue waited"]++
	default:
		s.check.fail(violationRule, "%s: generator of node %d: %v", t.name, c.NodeID(), err)
	}
	s.schedule(s.now+s.between(20*time.Millisecond, 250*time.Millisecond), t, false, t.issue)
}

// gracefulStop stops the task as SIGTERM stops node.Node: its application
// first, then the release (or the resignation).
func (t *simTask) gracefulStop() {
	if t.claim != nil {
		t.closing = true
		if t.app != nil {
			t.app.stop()
		}
		if t.lead != nil {
			_ = t.lead.Resign(context.Background())
		} else {
			_ = t.claim.Close(context.Background())
		}
	}
	t.leave()
	t.stopped = true
	t.s.replace(100*time.Millisecond, 2*time.Second)
}

// crash kills the process: no release, and gossip finds it dead a while
// later. An id-file reader, a process of its own, goes on.
func (t *simTask) crash() {
	t.s.check.crashed(t)
	t.crashed = true
	if t.app != nil && t.app.child {
		t.app.running, t.app.stopped = false, true // the parent-death signal
	}
	if t.s.params.gossip {
		t.s.gossip.dead(t)
	}
	t.s.replace(time.Second, 5*time.Second)
}

// replace starts a task in place of one that ended, lo to hi from now (or
// after the run's own replacement delay, when it sets one).
func (s *sim) replace(lo, hi time.Duration) {
	if d := s.params.replaceDelay; d[1] > 0 {
		lo, hi = d[0], d[1]
	}
	s.startTask(s.now + s.between(lo, hi))
}

// live returns the tasks that run (not crashed or stopped).
func (s *sim) live() []*simTask {
	return slices.DeleteFunc(slices.Clone(s.tasks), func(t *simTask) bool { return t.crashed || t.stopped })
}

// fault injects one random fault and schedules the next.
func (s *sim) fault() {
	// Forget the processes that ended: their events are dropped anyway, and
	// the checker runs over s.tasks after every event.
	s.tasks = slices.DeleteFunc(s.tasks, func(t *simTask) bool {
		return (t.crashed || t.stopped) && (t.app == nil || t.app.gone())
	})
	lease := s.params.maxLease
	if live := s.live(); len(live) > 0 {
		t := live[s.rng.IntN(len(live))]
		k := s.rng.IntN(7)
		s.tracef("fault %d on %s", k, t.name)
		switch k {
		case 0:
			s.counts["crash"]++
			t.crash()
		case 1:
			s.counts["pause"]++
			// A pause during a pause ends at the later end: the procs held
			// by the first resume at its end, not before.
			t.pausedUntil = max(t.pausedUntil, s.now+s.between(lease/2, 3*lease))
			t.trouble(t.pausedUntil)
		case 2:
			s.counts["partition"]++
			t.partitionedUntil = s.now + s.between(lease/2, 3*lease)
			t.trouble(t.partitionedUntil)
		case 3:
			s.counts["graceful stop"]++
			s.schedule(s.now, t, true, t.gracefulStop)
		case 4:
			s.counts["wall step"]++
			t.skew += s.between(-2*time.Second, 2*time.Second)
		case 5:
			s.counts["host step"]++
			t.hostSkew += s.between(-2*time.Second, 2*time.Second)
		case 6:
			// nothing: quiet period
		}
	}
	s.schedule(s.now+s.between(200*time.Millisecond, 3*time.Second), nil, false, s.fault)
}

// badPeer turns the misbehaving member's advertisement on or off, now and then.
func (s *sim) badPeer() {
	s.gossip.setBad(!s.gossip.bad)
	s.schedule(s.now+s.between(10*time.Second, 40*time.Second), nil, false, s.badPeer)
}

func (s *sim) run() {
	for range s.params.tasks {
		s.startTask(s.between(0, 2*time.Second))
	}
	s.schedule(3*time.Second, nil, false, s.fault)
	if s.params.badPeer {
		s.schedule(s.between(5*time.Second, 20*time.Second), nil, false, s.badPeer)
	}
	var tick func()
	tick = func() { s.schedule(s.now+50*time.Millisecond, nil, false, tick) }
	tick()
	s.runUntil(s.params.duration)
	s.kill()
	s.check.final()
}

// simObserver tells a task's application of its claim's jeopardy and
// recovery, as package node's observer does: the id file is removed at the
// fence and written again after a recovery; a child is killed at the fence.
type simObserver struct {
	nodeid.NopObserver
	t *simTask
}

// Renewed tells the application of a renewal, which it rewrites its id file
// after.
func (o simObserver) Renewed(int, time.Duration) {
	if c := o.t.claim; o.t.app != nil && c != nil && !isDone(c) {
		o.t.app.renewed(c)
	}
}

func (o simObserver) Jeopardy(int, error) {
	o.t.s.counts["jeopardy"]++
	o.t.jeopardyAt, o.t.jeopardyClaim = o.t.s.now, o.t.claim
	o.t.s.tracef("%s: in jeopardy", o.t.name)
	if o.t.app != nil {
		o.t.app.fenced()
	}
}

func (o simObserver) Recovered(int, time.Duration) {
	o.t.s.counts["recovered"]++
	o.t.jeopardyAt = -1
	o.t.s.tracef("%s: recovered", o.t.name)
	if o.t.app != nil {
		o.t.app.recovered()
	}
}

func isDone(c *nodeid.Claim) bool {
	select {
	case <-c.Done():
		return true
	default:
		return false
	}
}

// recordKey returns the key of the lease object of node id (or of the
// election) in the simulation's store.
func (s *sim) recordKey(id int) string {
	if s.params.election {
		return election.Dir + simElection + "/" + lease.RecordKey(0)
	}
	return lease.RecordKey(id)
}
