package nodeid

// The deterministic simulation: dozens of tasks run the real Provider code on
// one goroutine against the in-memory store, under per-task clock skew and rate
// drift, wall-clock steps, crashes, long pauses, store partitions, latency,
// ambiguous writes and 409s. Store calls take simulated time: while one task's
// request is in flight, the rest of the world runs (nested event processing), so
// requests interleave as they would on a network. A checker asserts, on the
// simulated real-time line, the safety claims of docs/design.md section 6.

import (
	"container/heap"
	"context"
	"errors"
	"flag"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/nodeid/nodeid/lease"
	"github.com/nodeid/nodeid/lease/storetest"
)

var (
	simSeeds = flag.Int("sim.seeds", 200, "seeds of the deterministic simulation")
	simSeed  = flag.Uint64("sim.seed", 0, "run only this simulation seed (to reproduce a failure)")
)

// simParams shape one simulated run.
type simParams struct {
	tasks    int           // tasks alive at once
	ids      int           // cluster size
	duration time.Duration // simulated real time
	maxSkew  time.Duration // wall-clock offset of a task, either way
	maxDrift float64       // monotonic clock rate error, either way
	mutate   func(p *Provider)
}

func defaultSimParams() simParams {
	return simParams{tasks: 12, ids: 6, duration: 90 * time.Second, maxSkew: 4 * time.Second, maxDrift: 0.02}
}

type simEvent struct {
	at        time.Duration
	seq       int
	task      *simTask // nil: a world event
	needsIdle bool     // calls the store: wait while the task is busy
	fn        func()
}

type eventQueue []*simEvent

func (q eventQueue) Len() int { return len(q) }
func (q eventQueue) Less(i, j int) bool {
	return q[i].at < q[j].at || (q[i].at == q[j].at && q[i].seq < q[j].seq)
}
func (q eventQueue) Swap(i, j int) { q[i], q[j] = q[j], q[i] }
func (q *eventQueue) Push(x any)   { *q = append(*q, x.(*simEvent)) }
func (q *eventQueue) Pop() any {
	old := *q
	e := old[len(old)-1]
	*q = old[:len(old)-1]
	return e
}

// simTask is one process: a task identity, its clocks and its claim.
type simTask struct {
	s        *sim
	name     string
	p        *Provider
	claim    *Claim
	drift    float64
	skew     time.Duration
	monoBase time.Time

	busy             bool
	crashed, stopped bool
	pausedUntil      time.Duration
	partitionedUntil time.Duration
	lastIssued       int64
}

// sim is the world: real time, the event queue, the store and the checker.
type sim struct {
	seed   uint64
	params simParams
	rng    *rand.Rand
	now    time.Duration
	epoch  time.Time
	seq    int
	queue  eventQueue
	mem    *storetest.MemStore
	tasks  []*simTask
	nextID int
	check  *simChecker
	counts map[string]int
}

func newSim(seed uint64, params simParams) *sim {
	s := &sim{
		seed: seed, params: params, rng: rand.New(rand.NewPCG(seed, 0x5eed)),
		epoch: time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC), counts: map[string]int{},
	}
	s.mem = storetest.NewMemStore(storetest.WithClock(func() time.Time { return s.epoch.Add(s.now) }))
	s.check = newSimChecker(s)
	return s
}

func (s *sim) schedule(at time.Duration, t *simTask, needsIdle bool, fn func()) {
	s.seq++
	heap.Push(&s.queue, &simEvent{at: max(at, s.now), seq: s.seq, task: t, needsIdle: needsIdle, fn: fn})
}

func (s *sim) between(lo, hi time.Duration) time.Duration {
	return lo + time.Duration(s.rng.Int64N(int64(hi-lo)+1))
}

// runUntil processes every event due by target, in time order. It is re-entered
// by store calls and sleeps of busy tasks: their own events wait, all others run.
func (s *sim) runUntil(target time.Duration) {
	var deferred []*simEvent
	for len(s.queue) > 0 && s.queue[0].at <= target {
		ev := heap.Pop(&s.queue).(*simEvent)
		t := ev.task
		switch {
		case t != nil && (t.crashed || t.stopped):
			continue
		case t != nil && t.pausedUntil > ev.at:
			ev.at = t.pausedUntil
			heap.Push(&s.queue, ev)
			continue
		case t != nil && ev.needsIdle && t.busy:
			deferred = append(deferred, ev)
			continue
		}
		s.now = max(s.now, ev.at)
		s.dispatch(ev)
		s.check.holders()
	}
	for _, ev := range deferred {
		heap.Push(&s.queue, ev)
	}
	s.now = max(s.now, target)
}

// errProcessDead unwinds the stack of a task that crashed while it was busy: a
// dead process runs no more code.
var errProcessDead = errors.New("sim: process is dead")

// dispatch runs one event; a task's stack ends where its event began.
func (s *sim) dispatch(ev *simEvent) {
	t := ev.task
	if t == nil {
		ev.fn()
		return
	}
	defer func() {
		if r := recover(); r != nil && r != errProcessDead { //nolint:errorlint // a sentinel value
			panic(r)
		}
	}()
	if !ev.needsIdle {
		ev.fn()
		return
	}
	t.busy = true
	defer func() { t.busy = false }()
	ev.fn()
}

// wait lets d of real time pass for task t, and any pause of t on top. A task
// that crashed meanwhile does not come back.
func (s *sim) wait(t *simTask, d time.Duration) {
	s.runUntil(s.now + d)
	for t.pausedUntil > s.now {
		s.runUntil(t.pausedUntil)
	}
	if t.crashed {
		panic(errProcessDead)
	}
}

// The task's clocks: monotonic with a rate error, wall with an offset too.
func (t *simTask) mono() time.Time {
	return t.monoBase.Add(time.Duration(float64(t.s.now) * (1 + t.drift)))
}
func (t *simTask) Now() time.Time  { return t.mono() }
func (t *simTask) Wall() time.Time { return t.s.epoch.Add(t.mono().Sub(t.monoBase)).Add(t.skew) }
func (t *simTask) Sleep(ctx context.Context, d time.Duration) error {
	if d > 0 {
		t.s.wait(t, time.Duration(float64(d)/(1+t.drift)))
	}
	return ctx.Err()
}

// simStore is a task's view of the store: every call takes simulated time and
// may meet a partition, an ambiguous answer, a 409 or a slow network.
type simStore struct{ t *simTask }

func (ss simStore) call(op storetest.Op, key string, do func() error) error {
	t, s := ss.t, ss.t.s
	if t.crashed {
		panic(errProcessDead)
	}
	// The request is on the wire: it arrives even if its sender dies or
	// pauses meanwhile.
	s.runUntil(s.now + s.latency())
	if t.partitionedUntil > s.now {
		s.counts["partitioned "+string(op)]++
		s.wait(t, t.p.cfg.StoreTimeout)
		return storetest.Unknown(op, key)
	}
	write := op == storetest.OpCreate || op == storetest.OpUpdate
	r := s.rng.Float64()
	switch {
	case write && r < 0.04:
		s.counts["ambiguous landed"]++
		err := do()
		s.wait(t, s.latency())
		if err != nil {
			return err
		}
		return storetest.Unknown(op, key)
	case write && r < 0.07:
		s.counts["ambiguous lost"]++
		s.wait(t, s.latency())
		return storetest.Unknown(op, key)
	case write && r < 0.075:
		s.counts["409"]++
		return lease.ErrPreconditionFailed
	case !write && r < 0.03:
		s.counts["read error"]++
		return errors.New("sim: read failed")
	}
	err := do()
	s.wait(t, s.latency())
	return err
}

// latency is one network leg: mostly a few ms, sometimes a slow second or two.
func (s *sim) latency() time.Duration {
	if s.rng.Float64() < 0.02 {
		return s.between(500*time.Millisecond, 2500*time.Millisecond)
	}
	return s.between(time.Millisecond, 40*time.Millisecond)
}

func (ss simStore) List(ctx context.Context) (l lease.Listing, err error) {
	err = ss.call(storetest.OpList, "", func() (e error) { l, e = ss.t.s.mem.List(ctx); return e })
	return l, err
}

func (ss simStore) Get(ctx context.Context, key string) (b []byte, m lease.Meta, err error) {
	err = ss.call(storetest.OpGet, key, func() (e error) { b, m, e = ss.t.s.mem.Get(ctx, key); return e })
	return b, m, err
}

func (ss simStore) Create(ctx context.Context, key string, body []byte) (m lease.Meta, err error) {
	err = ss.call(storetest.OpCreate, key, func() (e error) {
		if m, e = ss.t.s.mem.Create(ctx, key, body); e == nil {
			ss.t.s.check.written(key, body)
		}
		return e
	})
	return m, err
}

func (ss simStore) Update(ctx context.Context, key string, body []byte, etag string) (m lease.Meta, err error) {
	err = ss.call(storetest.OpUpdate, key, func() (e error) {
		if m, e = ss.t.s.mem.Update(ctx, key, body, etag); e == nil {
			ss.t.s.check.written(key, body)
		}
		return e
	})
	return m, err
}

// startTask starts a new process at time at.
func (s *sim) startTask(at time.Duration) {
	s.nextID++
	t := &simTask{
		s: s, name: fmt.Sprintf("task-%03d", s.nextID),
		drift:    (s.rng.Float64()*2 - 1) * s.params.maxDrift,
		skew:     time.Duration((s.rng.Float64()*2 - 1) * float64(s.params.maxSkew)),
		monoBase: time.Unix(0, 0).Add(time.Duration(s.rng.Int64N(int64(time.Hour)))),
	}
	cfg := DefaultLocalConfig()
	cfg.TaskID, cfg.ClusterSize, cfg.Clock, cfg.AcquireTimeout = t.name, s.params.ids, t, 0
	p, err := New(simStore{t}, cfg)
	if err != nil {
		panic(err)
	}
	p.hooks = &testHooks{sequential: true}
	if s.params.mutate != nil {
		s.params.mutate(p)
	}
	t.p = p
	s.tasks = append(s.tasks, t)
	s.schedule(at, t, true, t.acquire)
}

func (t *simTask) acquire() {
	s := t.s
	c, err := t.p.Acquire(context.Background())
	switch {
	case t.crashed:
		return
	case err != nil:
		s.counts["acquire failed"]++
		s.schedule(s.now+s.between(200*time.Millisecond, 2*time.Second), t, true, t.acquire)
		return
	}
	t.claim = c
	c.SetIssuedFunc(func() int64 { return t.lastIssued })
	s.counts["acquired"]++
	s.check.acquired(t, c)
	t.scheduleRenewal()
	s.schedule(s.now, t, false, t.issue)
}

// scheduleRenewal does what renewLoop does: renew RenewInterval after the last
// successful write, measured on the task's monotonic clock.
func (t *simTask) scheduleRenewal() {
	t.claim.mu.Lock()
	next := t.claim.lastSent.Add(t.p.cfg.RenewInterval)
	t.claim.mu.Unlock()
	d := time.Duration(float64(next.Sub(t.mono())) / (1 + t.drift))
	t.s.schedule(t.s.now+d, t, true, t.renew)
}

func (t *simTask) renew() {
	c := t.claim
	if c == nil || isDone(c) {
		return
	}
	if err := c.renewRound(context.Background()); err != nil {
		c.lose(err)
		t.s.counts["lost"]++
		t.exit()
		return
	}
	t.scheduleRenewal()
}

// exit ends the process after a lost lease; a replacement starts.
func (t *simTask) exit() {
	t.stopped = true
	t.s.startTask(t.s.now + t.s.between(time.Second, 4*time.Second))
}

// issue models the Snowflake generator: a timestamp above the floor and the last
// one issued, at most the reservation, near the wall clock; only while Valid.
func (t *simTask) issue() {
	s, c := t.s, t.claim
	if c == nil || isDone(c) || t.crashed || t.stopped {
		return
	}
	if c.Valid() {
		ts := max(t.Wall().UnixMilli(), t.lastIssued+1, c.Floor()+1)
		if ts <= c.Reservation() {
			t.lastIssued = ts
			s.check.issued(t, c, ts)
		} else {
			s.counts["issue waited"]++
		}
	}
	s.schedule(s.now+s.between(20*time.Millisecond, 250*time.Millisecond), t, false, t.issue)
}

func (t *simTask) gracefulStop() {
	if t.claim != nil {
		_ = t.claim.Close(context.Background())
	}
	t.stopped = true
	t.s.startTask(t.s.now + t.s.between(100*time.Millisecond, 2*time.Second))
}

// live returns a random task that runs (not crashed or stopped), or nil.
func (s *sim) live() *simTask {
	var live []*simTask
	for _, t := range s.tasks {
		if !t.crashed && !t.stopped {
			live = append(live, t)
		}
	}
	if len(live) == 0 {
		return nil
	}
	return live[s.rng.IntN(len(live))]
}

// fault injects one random fault and schedules the next.
func (s *sim) fault() {
	t := s.live()
	lease := 3 * time.Second
	if t != nil {
		switch k := s.rng.IntN(6); k {
		case 0:
			s.counts["crash"]++
			t.crashed = true
			s.startTask(s.now + s.between(time.Second, 5*time.Second))
		case 1:
			s.counts["pause"]++
			t.pausedUntil = s.now + s.between(lease/2, 3*lease)
		case 2:
			s.counts["partition"]++
			t.partitionedUntil = s.now + s.between(lease/2, 3*lease)
		case 3:
			s.counts["graceful stop"]++
			s.schedule(s.now, t, true, t.gracefulStop)
		case 4:
			s.counts["wall step"]++
			t.skew += s.between(-2*time.Second, 2*time.Second)
		case 5:
			// nothing: quiet period
		}
	}
	s.schedule(s.now+s.between(200*time.Millisecond, 3*time.Second), nil, false, s.fault)
}

func (s *sim) run() {
	for range s.params.tasks {
		s.startTask(s.between(0, 2*time.Second))
	}
	s.schedule(3*time.Second, nil, false, s.fault)
	var tick func()
	tick = func() { s.schedule(s.now+50*time.Millisecond, nil, false, tick) }
	tick()
	s.runUntil(s.params.duration)
	s.check.final()
}

// simChecker checks the safety claims on the simulated real-time line.
type simChecker struct {
	s          *sim
	violations []string
	steps      int
	issuedIDs  int
	ids        map[[2]int64]string     // (nodeId, timestamp) -> holder
	maxIssued  map[[2]int64]int64      // (nodeId, version) -> highest timestamp
	floors     map[[2]int64]int64      // (nodeId, version) -> floor
	versions   map[[2]int64]string     // (nodeId, version) -> task that acquired it
	last       map[string]lease.Record // key -> last record written
}

func newSimChecker(s *sim) *simChecker {
	return &simChecker{s: s, ids: map[[2]int64]string{}, maxIssued: map[[2]int64]int64{},
		floors: map[[2]int64]int64{}, versions: map[[2]int64]string{}, last: map[string]lease.Record{}}
}

func (k *simChecker) fail(format string, args ...any) {
	if len(k.violations) < 10 {
		k.violations = append(k.violations, fmt.Sprintf("t=%v: ", k.s.now)+fmt.Sprintf(format, args...))
	}
}

// holders: at most one running task holds a valid claim per node ID.
func (k *simChecker) holders() {
	k.steps++
	valid := map[int]string{}
	for _, t := range k.s.tasks {
		c := t.claim
		if c == nil || t.crashed || t.pausedUntil > k.s.now || !c.Valid() {
			continue
		}
		if other, ok := valid[c.NodeID()]; ok {
			k.fail("node %d valid in two tasks at once: %s and %s (version %d)", c.NodeID(), other, t.name, c.Version())
		}
		valid[c.NodeID()] = t.name
	}
}

func (k *simChecker) acquired(t *simTask, c *Claim) {
	// Claims can come back out of order (a paused task learns of its take late);
	// the order in the bucket is checked by written. Here: no version twice.
	vk := [2]int64{int64(c.NodeID()), c.Version()}
	if other, ok := k.versions[vk]; ok {
		k.fail("node %d version %d acquired twice: by %s and %s", c.NodeID(), c.Version(), other, t.name)
	}
	k.versions[vk] = t.name
	k.floors[vk] = c.Floor()
}

func (k *simChecker) issued(t *simTask, c *Claim, ts int64) {
	k.issuedIDs++
	key := [2]int64{int64(c.NodeID()), ts}
	if prev, ok := k.ids[key]; ok {
		k.fail("ID repeated: node %d timestamp %d issued by %s and %s", c.NodeID(), ts, prev, t.name)
	}
	k.ids[key] = t.name
	vk := [2]int64{int64(c.NodeID()), c.Version()}
	k.maxIssued[vk] = max(k.maxIssued[vk], ts)
}

// written checks each applied write: versions never go back, and each change of
// holder to a new task is an acquisition with version + 1.
func (k *simChecker) written(key string, body []byte) {
	id, ok := lease.ParseRecordKey(key)
	if !ok {
		return
	}
	r, err := lease.DecodeRecord(body, id)
	if err != nil {
		k.fail("corrupt record written to %s: %v", key, err)
		return
	}
	prev, seen := k.last[key]
	switch {
	case seen && r.Version < prev.Version:
		k.fail("%s version went back from %d to %d", key, prev.Version, r.Version)
	case seen && r.Holder != "" && r.Holder != prev.Holder && r.Version != prev.Version+1:
		k.fail("%s taken by %s with version %d after %d", key, r.Holder, r.Version, prev.Version)
	case seen && r.ReservedUntilMs < prev.ReservedUntilMs && r.Holder != "":
		k.fail("%s reservation lowered from %d to %d while held", key, prev.ReservedUntilMs, r.ReservedUntilMs)
	}
	k.last[key] = r
}

// final: every successor's floor is at or above every timestamp issued under an
// earlier version of its node ID.
func (k *simChecker) final() {
	for fk, floor := range k.floors {
		for ik, issued := range k.maxIssued {
			if ik[0] == fk[0] && ik[1] < fk[1] && issued > floor {
				k.fail("node %d version %d starts above floor %d, but version %d issued %d", fk[0], fk[1], floor, ik[1], issued)
			}
		}
	}
}

func (k *simChecker) summary() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%d checks, %d IDs issued", k.steps, k.issuedIDs)
	for _, name := range []string{"acquired", "lost", "crash", "pause", "partition", "graceful stop", "wall step",
		"ambiguous landed", "ambiguous lost", "409", "read error", "issue waited", "acquire failed"} {
		fmt.Fprintf(&b, ", %s %d", name, k.s.counts[name])
	}
	return b.String()
}

func runSim(seed uint64, params simParams) *simChecker {
	s := newSim(seed, params)
	s.run()
	return s.check
}

func simSeedList() []uint64 {
	if *simSeed != 0 {
		return []uint64{*simSeed}
	}
	n := *simSeeds
	seeds := make([]uint64, n)
	for i := range seeds {
		seeds[i] = uint64(i + 1)
	}
	return seeds
}

func TestSimulation(t *testing.T) {
	var total simChecker
	for _, seed := range simSeedList() {
		k := runSim(seed, defaultSimParams())
		if len(k.violations) > 0 {
			t.Fatalf("seed %d (reproduce: go test ./nodeid -run TestSimulation -sim.seed %d -v):\n%s\n%s",
				seed, seed, strings.Join(k.violations, "\n"), k.summary())
		}
		total.steps += k.steps
		total.issuedIDs += k.issuedIDs
		if seed == 1 {
			t.Logf("seed 1: %s", k.summary())
		}
	}
	t.Logf("%d seeds, %d checks, %d IDs issued, no violation", len(simSeedList()), total.steps, total.issuedIDs)
}

func TestSimulationIsDeterministic(t *testing.T) {
	a, b := runSim(7, defaultSimParams()), runSim(7, defaultSimParams())
	if a.summary() != b.summary() {
		t.Fatalf("same seed, different runs:\n%s\n%s", a.summary(), b.summary())
	}
}

// The checker must catch broken rules: each mutation must produce a violation
// within a few seeds.
func TestSimulationCatchesBrokenRules(t *testing.T) {
	mutations := map[string]func(p *Provider){
		"expiry judged on the local wall clock": func(p *Provider) {
			p.hooks.stateOf = func(r *lease.Record, m lease.Meta) lease.State {
				switch {
				case r.Free():
					return lease.StateFree
				case p.clock.Wall().After(r.ExpiresAt):
					return lease.StateExpired
				}
				return lease.StateHeld
			}
		},
		"fence outlives the lease":    func(p *Provider) { p.hooks.fenceExtra = 3 * time.Second },
		"successor ignores the floor": func(p *Provider) { p.hooks.ignoreFloor = true },
		"no clock margin": func(p *Provider) {
			p.hooks.stateOf = func(r *lease.Record, m lease.Meta) lease.State {
				if r.Free() {
					return lease.StateFree
				}
				if age, ok := lease.StoreAge(m.LastModified, m.Date); ok && age > r.Lease()-2*time.Second {
					return lease.StateExpired
				}
				return lease.StateHeld
			}
		},
	}
	for name, mutate := range mutations {
		t.Run(name, func(t *testing.T) {
			params := defaultSimParams()
			params.mutate = mutate
			for seed := uint64(1); seed <= 20; seed++ {
				if k := runSim(seed, params); len(k.violations) > 0 {
					t.Logf("caught at seed %d: %s", seed, k.violations[0])
					return
				}
			}
			t.Fatalf("the checker found no violation in 20 seeds with the bug %q", name)
		})
	}
}
