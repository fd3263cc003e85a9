package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nodeid/nodeid/lease"
	"github.com/nodeid/nodeid/nodeid"
)

// Read mode (keep-alive by reads, docs/evidence/design.md section 11) in the bench:
// the flags that set its timings, the read probe a broker runs at start, a
// stand-in for gossip's failure detection, and a count of challenges.

// keepAliveOpts are read mode's timings; zero leaves nodeid's default.
type keepAliveOpts struct {
	window, backstop, backstopInterval, poll time.Duration
}

// addKeepAliveFlags registers read mode's timing flags (the broker's
// --window, --backstop, --backstop-interval and --poll-interval; --window is
// --read-window here, as steady's --window is its measurement window).
func addKeepAliveFlags(fs *flag.FlagSet, k *keepAliveOpts) {
	fs.DurationVar(&k.window, "read-window", nodeid.DefaultWindow, "read mode: the window W (a read or a write keeps the claim valid for W - margin)")
	fs.DurationVar(&k.backstop, "backstop", nodeid.DefaultBackstop, "read mode: the backstop lease B every record states")
	fs.DurationVar(&k.backstopInterval, "backstop-interval", 0, "read mode: time between backstop writes (0: B/3)")
	fs.DurationVar(&k.poll, "poll-interval", 0, "read mode: time between a holder's conditional reads (0: nodeid's default, W/2 within the poll rule)")
}

// apply puts cfg in read mode with these timings. LeaseDuration and the
// timings derived from it are left for nodeid to derive from the backstop.
func (k keepAliveOpts) apply(cfg *nodeid.Config) {
	cfg.KeepAlive, cfg.Window, cfg.Backstop, cfg.PollInterval = nodeid.KeepAliveRead, k.window, k.backstop, k.poll
	cfg.RenewInterval, cfg.RenewDeadline, cfg.SafetyMargin, cfg.StoreTimeout = k.backstopInterval, 0, 0, 0
}

// derived returns the read-mode timings of k as nodeid derives them: the
// timings a run actually uses (poll interval, backstop interval).
func (k keepAliveOpts) derived() (nodeid.Timings, error) {
	cfg := nodeid.DefaultConfig()
	k.apply(&cfg)
	return cfg.Timings(), cfg.Validate()
}

// keepAliveInfo is read mode's timings as a run used them, for reports.
type keepAliveInfo struct {
	Mode             string `json:"mode"`
	Window           ms     `json:"windowMs,omitempty"`
	Backstop         ms     `json:"backstopMs,omitempty"`
	BackstopInterval ms     `json:"backstopIntervalMs,omitempty"`
	PollInterval     ms     `json:"pollIntervalMs,omitempty"`
	// ReadProbe is the outcome of lease.ProbeReads on the run's store, as a
	// broker runs it at start in read mode.
	ReadProbe string `json:"readProbe,omitempty"`
}

func (i keepAliveInfo) String() string {
	if i.Mode != string(nodeid.KeepAliveRead) {
		return "write mode"
	}
	return fmt.Sprintf("read mode: W %v, backstop %v written every %v, poll every %v; read probe: %s",
		dur(i.Window), dur(i.Backstop), dur(i.BackstopInterval), dur(i.PollInterval), i.ReadProbe)
}

func dur(m ms) time.Duration { return time.Duration(float64(m) * float64(time.Millisecond)) }

// readInfo derives k's timings and runs the read probe on b's store (direct,
// not counted). A store that fails the probe fails the run, as it stops a
// broker.
func readInfo(ctx context.Context, b *backend, k keepAliveOpts) (keepAliveInfo, error) {
	cfg, err := k.derived()
	if err != nil {
		return keepAliveInfo{}, err
	}
	info := keepAliveInfo{Mode: string(nodeid.KeepAliveRead), Window: toMS(cfg.Window), Backstop: toMS(cfg.Backstop),
		BackstopInterval: toMS(cfg.RenewInterval), PollInterval: toMS(cfg.PollInterval)}
	prefix := b.prefix("read-probe")
	a, err := b.directStore(ctx, prefix)
	if err != nil {
		return info, err
	}
	c, err := b.directStore(ctx, prefix)
	if err != nil {
		return info, err
	}
	if _, err := lease.ProbeReads(ctx, a, c); err != nil {
		return info, fmt.Errorf("read probe on %s: %w", b.name(), err)
	}
	info.ReadProbe = "passed"
	return info, nil
}

// fakeGossip stands in for the gossip members of a run's in-process tasks
// (package gossip on memberlist, one member per broker): what each member's
// view reports to its Provider. A cut-off task is seen dead detect after the
// cut (memberlist's failure detection: probe, suspicion, then dead), a claim
// or a release spreads in spread. It implements nodeid.PeerHints and
// nodeid.Tasks per member (see view).
type fakeGossip struct {
	detect, spread time.Duration

	mu      sync.Mutex
	members map[string]*fakeMember // by task ID
	freed   chan struct{}
}

type fakeMember struct {
	live, held bool
	id         int
	version    int64
}

func newFakeGossip(detect, spread time.Duration) *fakeGossip {
	return &fakeGossip{detect: detect, spread: spread, members: map[string]*fakeMember{}, freed: make(chan struct{})}
}

// join adds a live member holding nothing, at once (members join before
// they acquire).
func (g *fakeGossip) join(task string) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.members[task] = &fakeMember{live: true}
}

// after runs f under g.mu after d (at once when d is 0).
func (g *fakeGossip) after(d time.Duration, f func()) {
	run := func() {
		g.mu.Lock()
		defer g.mu.Unlock()
		f()
	}
	if d <= 0 {
		run()
		return
	}
	time.AfterFunc(d, run)
}

// fire wakes every waiter on Freed. Callers hold g.mu.
func (g *fakeGossip) fire() {
	close(g.freed)
	g.freed = make(chan struct{})
}

// claim advertises that task holds id at version, seen spread later.
func (g *fakeGossip) claim(task string, id int, version int64) {
	g.after(g.spread, func() {
		if m := g.members[task]; m != nil && m.live {
			m.held, m.id, m.version = true, id, version
		}
	})
}

// release advertises that task released its ID and left (a broker releases
// on SIGTERM, then leaves gossip and exits), seen spread later.
func (g *fakeGossip) release(task string) {
	g.after(g.spread, func() {
		if m := g.members[task]; m != nil && m.live {
			m.live = false
			if m.held {
				g.fire()
			}
		}
	})
}

// kill marks task dead detect from now, as memberlist would find a member
// that stopped answering.
func (g *fakeGossip) kill(task string) {
	g.after(g.detect, func() {
		if m := g.members[task]; m != nil && m.live {
			m.live = false
			if m.held {
				g.fire()
			}
		}
	})
}

// view returns task's member's view.
func (g *fakeGossip) view(task string) *gossipView { return &gossipView{g: g, self: task} }

// gossipView is one member's view: a nodeid.PeerHints and a nodeid.Tasks.
type gossipView struct {
	g    *fakeGossip
	self string
}

// KnownNodes implements nodeid.Peers: the live members' claims.
func (v *gossipView) KnownNodes() map[int]int64 {
	v.g.mu.Lock()
	defer v.g.mu.Unlock()
	out := map[int]int64{}
	for _, m := range v.g.members {
		if m.live && m.held && m.version > out[m.id] {
			out[m.id] = m.version
		}
	}
	return out
}

// Freed implements nodeid.PeerHints.
func (v *gossipView) Freed() <-chan struct{} {
	v.g.mu.Lock()
	defer v.g.mu.Unlock()
	return v.g.freed
}

// Rank implements nodeid.PeerHints: this member's place, by name, among the
// live members that hold no ID.
func (v *gossipView) Rank() (rank, of int) {
	v.g.mu.Lock()
	defer v.g.mu.Unlock()
	var waiting []string
	for name, m := range v.g.members {
		if m.live && !m.held {
			waiting = append(waiting, name)
		}
	}
	slices.Sort(waiting)
	i := slices.Index(waiting, v.self)
	if i < 0 {
		return 0, 0
	}
	return i, len(waiting)
}

// TaskLive implements nodeid.Tasks.
func (v *gossipView) TaskLive(task string) bool {
	v.g.mu.Lock()
	defer v.g.mu.Unlock()
	m := v.g.members[task]
	return m != nil && m.live
}

// challengeCount counts the challenges a fleet wrote and answered
// (nodeid.ChallengeObserver); one is shared by every task of a run.
type challengeCount struct {
	nodeid.NopObserver
	challenged, confirmed, answered atomic.Int64
	lastConfirm                     atomic.Int64 // Unix ns of the last confirm written, 0 before
	// taken is when a task's Acquire first held an ID it could not return
	// yet (nodeid.ErrAwaitingFloor: its floor is ahead), Unix ns; 0 before.
	taken atomic.Int64

	mu      sync.Mutex
	byTask  map[string]int // challenges written, by the challenger's label
	holders map[string]int // challenges written, by the challenged holder
}

// observer returns the Observer of the task labelled task.
func (c *challengeCount) observer(task string) nodeid.Observer {
	return &taskChallenges{c: c, task: task}
}

type taskChallenges struct {
	nodeid.NopObserver
	c    *challengeCount
	task string
}

// AcquireWaiting implements nodeid.WaitObserver: it records when the task
// first held an ID while Acquire waited for its floor (the take).
func (t *taskChallenges) AcquireWaiting(_ int, err error, _ time.Duration) {
	if errors.Is(err, nodeid.ErrAwaitingFloor) {
		t.c.taken.CompareAndSwap(0, time.Now().UnixNano())
	}
}

// Challenged implements nodeid.ChallengeObserver.
func (t *taskChallenges) Challenged(_ int, holder string, confirmed bool) {
	t.c.challenged.Add(1)
	if confirmed {
		t.c.confirmed.Add(1)
		t.c.lastConfirm.Store(time.Now().UnixNano())
	}
	t.c.mu.Lock()
	defer t.c.mu.Unlock()
	if t.c.byTask == nil {
		t.c.byTask, t.c.holders = map[string]int{}, map[string]int{}
	}
	t.c.byTask[t.task]++
	t.c.holders[holder]++
}

// Answered implements nodeid.ChallengeObserver.
func (t *taskChallenges) Answered(int) { t.c.answered.Add(1) }

// reset zeroes every count.
func (c *challengeCount) reset() {
	c.challenged.Store(0)
	c.confirmed.Store(0)
	c.answered.Store(0)
	c.mu.Lock()
	defer c.mu.Unlock()
	c.byTask, c.holders = nil, nil
}

// perTask returns the mean and the maximum of the challenges
// written by each of n tasks.
func (c *challengeCount) perTask(n int) (mean float64, most int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	total := 0
	for _, k := range c.byTask {
		total += k
		most = max(most, k)
	}
	if n > 0 {
		mean = float64(total) / float64(n)
	}
	return mean, most
}
