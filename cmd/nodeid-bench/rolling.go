package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"math/rand/v2"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/nodeid/nodeid/cmd/nodeid-bench/internal/latproxy"
	"github.com/nodeid/nodeid/internal/ctxtime"
	"github.com/nodeid/nodeid/nodeid"
)

// The rolling scenario: N old tasks hold all N IDs and are replaced by N new
// ones the way an ECS service deployment does it. ECS keeps at most
// maximumPercent of the desired count running (old tasks not yet stopped plus
// new tasks started) and at least minimumHealthyPercent healthy (old tasks not
// yet told to stop plus new tasks holding an ID: the broker's health check
// passes only then). --batch P sets maximumPercent to 100 + P, so P % of N
// new tasks start at once; --min-healthy Q (default 100 - P) sets
// minimumHealthyPercent. An old task told to stop (SIGTERM) releases its ID
// (Claim.Close); a new task's start waits for room under maximumPercent, an
// old task's stop for enough healthy tasks, so with Q > 0 the stops follow the
// new tasks becoming healthy. With Q = 100 and every ID held no new task can
// ever become healthy and no old task may stop: the deployment is stuck, so
// the scenario refuses it.

type rollingOpts struct {
	common
	leaseOpts
	keepAliveOpts
	batches    string
	minHealthy int // percent; -1: 100 - batch
	stopDelay  time.Duration
	keepAlive  string
	gossip     bool
	spread     time.Duration
}

func (o rollingOpts) readMode() bool { return o.keepAlive == string(nodeid.KeepAliveRead) }

// taskConfig is the configuration of the task named name, in the run's mode,
// with its gossip view when g is not nil, and obs as its Observer.
func (o rollingOpts) taskConfig(name string, g *fakeGossip, obs nodeid.Observer) nodeid.Config {
	cfg := o.providerConfig(name, nodeid.OrderSpread)
	if o.readMode() {
		o.keepAliveOpts.apply(&cfg)
	}
	if g != nil {
		v := g.view(name)
		cfg.Peers, cfg.Tasks = v, v
	}
	cfg.Observer = obs
	return cfg
}

// rollingRun is the result of one deployment.
type rollingRun struct {
	Batch      int `json:"batchPercent"`
	MinHealthy int `json:"minHealthyPercent"`
	// MaxRunning and MinHealthyTasks are the percentages in tasks.
	MaxRunning      int `json:"maxRunningTasks"`
	MinHealthyTasks int `json:"minHealthyTasks"`
	// PeakRunning and LowestHealthy are what the deployment reached: at most
	// MaxRunning, at least MinHealthyTasks.
	PeakRunning   int `json:"peakRunningTasks"`
	LowestHealthy int `json:"lowestHealthyTasks"`
	Tasks         int `json:"tasks"`
	Acquired      int `json:"acquired"`
	Released      int `json:"released"`
	// Distinct is true when no two tasks held one ID at the same time, old or
	// new: each ID's next holder took it after the previous one stopped
	// issuing IDs, with a higher version.
	Distinct bool     `json:"distinct"`
	Lost     int      `json:"lostDuringRun"`
	Errors   []string `json:"errors,omitempty"`
	// Requests are the new tasks' acquisitions (the old tasks' releases and
	// every renewal are not counted).
	Requests opCounts       `json:"requests"`
	ByStatus map[string]int `json:"byStatus"`
	perTask
	// TimeToID is from a new task's start to its Acquire's return.
	TimeToID durations `json:"timeToId"`
	// ReleaseToRetake is from an old task's release (Close returned: the
	// release was written) until a new task's Acquire returned with that ID.
	ReleaseToRetake durations `json:"releaseToRetake"`
	// Elapsed is from the first new task's start to the last one's take.
	Elapsed ms `json:"elapsedMs"`
	// Settled is how long every claim was held after the deployment before
	// the losses and answers were counted (read mode: W + P + 3 s, so that a
	// confirm left unanswered would have been taken).
	Settled ms `json:"settledMs,omitempty"`
	// Challenges the new tasks wrote (read mode), the confirms among them,
	// and the challenges holders answered. Every holder in a deployment is
	// live: each challenge is of a live holder.
	Challenges        int     `json:"challenges"`
	Confirms          int     `json:"confirms"`
	Answered          int     `json:"answered"`
	ChallengesPerTask float64 `json:"challengesPerNewTask"`
	ChallengesMax     int     `json:"challengesMaxPerNewTask"`
}

type rollingReport struct {
	header
	KeepAlive keepAliveInfo `json:"keepAlive"`
	// Gossip describes the stand-in for gossip, if any.
	Gossip        string       `json:"gossip,omitempty"`
	IDs           int          `json:"ids"`
	LeaseDuration ms           `json:"leaseDurationMs"`
	StopDelay     ms           `json:"stopDelayMs"`
	Runs          []rollingRun `json:"runs"`
	Targets       []target     `json:"targets,omitempty"`
}

func runRolling(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	var o rollingOpts
	fs := flag.NewFlagSet("nodeid-bench rolling", flag.ContinueOnError)
	addCommon(fs, &o.common)
	addLeaseFlags(fs, &o.leaseOpts)
	fs.StringVar(&o.batches, "batch", "100%,50%", "comma-separated deployments to run, each on a fresh prefix: the share of N new tasks started at once (ECS maximumPercent - 100)")
	fs.IntVar(&o.minHealthy, "min-healthy", -1, "ECS minimumHealthyPercent, 0..99 (-1: 100 - batch)")
	fs.DurationVar(&o.stopDelay, "stop-delay", time.Second, "time from the first new tasks' start until the first old task may be told to stop (the new tasks find every ID held and wait)")
	fs.StringVar(&o.keepAlive, "keepalive", "write", "keep-alive mode: write (--lease-duration), or read (--read-window, --backstop, --backstop-interval, --poll-interval)")
	addKeepAliveFlags(fs, &o.keepAliveOpts)
	fs.BoolVar(&o.gossip, "gossip", false, "give every task a stand-in for gossip (nodeid.Peers with hints, and nodeid.Tasks): a claim or a release is seen --spread after it")
	fs.DurationVar(&o.spread, "spread", 100*time.Millisecond, "with --gossip: time for a claim or a release to reach the other members")
	if code, ok := parseFlags(fs, args, stdout, stderr); !ok {
		return code
	}
	batches, err := parseBatches(o.batches)
	if err == nil && (o.minHealthy < -1 || o.minHealthy > 99) {
		err = fmt.Errorf("--min-healthy %d: want 0..99 (at 100 with every ID held, no new task can become healthy and no old task may stop), or -1", o.minHealthy)
	}
	if err == nil && (o.ids < 1 || o.ids > 1024 || o.stopDelay < 0) {
		err = fmt.Errorf("want --ids in 1..1024 and --stop-delay >= 0")
	}
	if err == nil && o.keepAlive != string(nodeid.KeepAliveWrite) && !o.readMode() {
		err = fmt.Errorf("--keepalive %q: want write or read", o.keepAlive)
	}
	if err == nil && o.readMode() {
		_, err = o.keepAliveOpts.derived()
	}
	if err != nil {
		fmt.Fprintf(stderr, "nodeid-bench rolling: %v\n", err)
		return 2
	}
	rep, code := runOnBackend(ctx, "rolling", o.common, false, stdout, stderr,
		func(b *backend) (*rollingReport, error) { return rolling(ctx, b, o, batches, args) }, printRolling)
	if code != 0 {
		return code
	}
	for _, r := range rep.Runs {
		if !r.Distinct || r.Acquired != r.Tasks || r.Released != r.Tasks {
			fmt.Fprintf(stderr, "nodeid-bench rolling: FAILED: batch %d%%: %d of %d new tasks acquired, %d of %d old released, distinct=%v\n",
				r.Batch, r.Acquired, r.Tasks, r.Released, r.Tasks, r.Distinct)
			return 1
		}
	}
	return 0
}

// parseBatches parses "100%,50%" (the % is optional) into percentages 1..100.
func parseBatches(s string) ([]int, error) {
	var out []int
	for f := range strings.SplitSeq(s, ",") {
		p, err := strconv.Atoi(strings.TrimSuffix(strings.TrimSpace(f), "%"))
		if err != nil || p < 1 || p > 100 {
			return nil, fmt.Errorf("--batch %q: want percentages in 1..100, e.g. 100%%,50%%", f)
		}
		out = append(out, p)
	}
	return out, nil
}

// rolling runs one deployment per batch, each on a fresh prefix.
func rolling(ctx context.Context, b *backend, o rollingOpts, batches []int, args []string) (*rollingReport, error) {
	rep := &rollingReport{header: newHeader("rolling", b, args), KeepAlive: keepAliveInfo{Mode: string(nodeid.KeepAliveWrite)}, IDs: o.ids,
		LeaseDuration: toMS(o.leaseDuration), StopDelay: toMS(o.stopDelay)}
	if o.readMode() {
		info, err := readInfo(ctx, b, o.keepAliveOpts)
		if err != nil {
			return nil, err
		}
		rep.KeepAlive, rep.LeaseDuration = info, info.Backstop
	}
	if o.gossip {
		rep.Gossip = fmt.Sprintf("stand-in: a claim or a release seen by every member %v after it", o.spread)
	}
	for _, p := range batches {
		r, err := rollingDeploy(ctx, b, o, p)
		if err != nil {
			return nil, fmt.Errorf("batch %d%%: %w", p, err)
		}
		rep.Runs = append(rep.Runs, *r)
	}
	note := ""
	if o.ids != 256 || o.latency != 20*time.Millisecond {
		note = "target is for N = 256 at 20 ms"
	}
	for _, r := range rep.Runs {
		if o.readMode() {
			rep.Targets = append(rep.Targets, target{What: fmt.Sprintf("rolling %d%% (read mode): live holders lost; challenges of live holders", r.Batch),
				Target:   "0 lost; challenges rare with gossip",
				Measured: fmt.Sprintf("%d lost; %d challenges (%d confirmed, %d answered), %.3f per new task, max %d", r.Lost, r.Challenges, r.Confirms, r.Answered, r.ChallengesPerTask, r.ChallengesMax),
				Met:      r.Lost == 0 && r.Distinct})
		}
		worst := time.Duration(float64(r.ReleaseToRetake.Max) * float64(time.Millisecond))
		rep.Targets = append(rep.Targets,
			target{What: fmt.Sprintf("rolling %d%%: requests per new task (mean)", r.Batch), Target: "<= 4",
				Measured: fmt.Sprintf("%.2f (max %d)", r.PerTaskMean, r.PerTaskMax), Met: r.PerTaskMean <= 4, Note: note},
			target{What: fmt.Sprintf("rolling %d%%: release to re-take, every ID", r.Batch), Target: "<= 1s",
				Measured: fmt.Sprintf("%v (p50 %vms, p99 %vms)", worst, r.ReleaseToRetake.P50, r.ReleaseToRetake.P99), Met: worst <= time.Second, Note: note})
	}
	return rep, nil
}

// member is one simulated task running a Provider.
type member struct {
	*task
	p *nodeid.Provider
}

// newFleet makes n members labelled label+i on prefix, each with the
// Provider configuration cfg(i).
func (b *backend) newFleet(ctx context.Context, n int, label, prefix string, cfg func(i int) nodeid.Config) ([]*member, error) {
	ms := make([]*member, n)
	for i := range ms {
		t, err := b.newTask(ctx, fmt.Sprintf("%s%d", label, i), prefix)
		if err != nil {
			return nil, err
		}
		p, err := nodeid.New(t.store, cfg(i))
		if err != nil {
			return nil, err
		}
		ms[i] = &member{task: t, p: p}
	}
	return ms, nil
}

// deployEvent is a new task's Acquire returning, or an old task's stop.
type deployEvent struct {
	task  int
	stop  bool // an old task's stop (else a new task's take)
	at    time.Time
	claim *nodeid.Claim
	err   error
}

// deployment is the state of one rolling deployment: ECS's bookkeeping and
// what each task did, times since t0.
type deployment struct {
	n, maxRunning, minHealthy int
	t0                        time.Time
	stopOrder                 []int // old tasks in the order they are told to stop

	started, taken, stopsSent, stopsDone int // counts of events
	healthyNew, failedNew                int
	peakRunning, lowestHealthy           int

	newStart, newTook []time.Duration // by new task
	newClaims         []*nodeid.Claim
	stoppedAt         []time.Duration // by old task: when told to stop (it fences at once)
	releasedAt        []time.Duration // by old task: when its release was written
	releaseErrs       []error         // by old task
	newErrs           []error         // by new task
}

func (d *deployment) running() int { return d.n - d.stopsDone + d.started }
func (d *deployment) healthy() int { return d.n - d.stopsSent + d.healthyNew }

// track records the peak of running tasks and the low of healthy ones.
func (d *deployment) track() {
	d.peakRunning, d.lowestHealthy = max(d.peakRunning, d.running()), min(d.lowestHealthy, d.healthy())
}

// rollingDeploy fills a fresh prefix with n old tasks (not counted), then
// replaces them as an ECS deployment with maximumPercent 100 + pct does.
func rollingDeploy(ctx context.Context, b *backend, o rollingOpts, pct int) (*rollingRun, error) {
	n := o.ids
	minPct := o.minHealthy
	if minPct < 0 {
		minPct = 100 - pct
	}
	d := &deployment{n: n, maxRunning: n + ceilDiv(pct*n, 100), minHealthy: ceilDiv(minPct*n, 100),
		newStart: make([]time.Duration, n), newTook: make([]time.Duration, n), newClaims: make([]*nodeid.Claim, n),
		stoppedAt: make([]time.Duration, n), releasedAt: make([]time.Duration, n), releaseErrs: make([]error, n), newErrs: make([]error, n)}
	d.minHealthy = min(d.minHealthy, n-1)
	d.lowestHealthy = n
	prefix := b.prefix(fmt.Sprintf("rolling-%d", pct))
	label := fmt.Sprintf("rolling-%d/", pct)
	var g *fakeGossip
	if o.gossip {
		g = newFakeGossip(0, o.spread)
	}
	count := &challengeCount{}
	oldName := func(i int) string { return fmt.Sprintf("bench-%d-rolling-%d-old-%d", o.seed, pct, i) }
	newName := func(i int) string { return fmt.Sprintf("bench-%d-rolling-%d-new-%d", o.seed, pct, i) }
	olds, err := b.newFleet(ctx, n, label+"old-", prefix, func(i int) nodeid.Config {
		if g != nil {
			g.join(oldName(i))
		}
		return o.taskConfig(oldName(i), g, count.observer(oldName(i)))
	})
	if err != nil {
		return nil, err
	}
	news, err := b.newFleet(ctx, n, label+"new-", prefix, func(i int) nodeid.Config {
		return o.taskConfig(newName(i), g, count.observer(newName(i)))
	})
	if err != nil {
		return nil, err
	}
	// As a broker's generator does (node.Node): IDs issued up to the
	// release, so the release lowers the floor to about then. Without it the
	// release keeps the reservation, up to a lease ahead, and a successor
	// more than MaxClockWait behind it skips the ID (ErrClockBehind).
	oldClaims, oldTook, err := fillFleet(ctx, olds, nodeid.WithIssuedFunc(func() int64 { return time.Now().UnixMilli() }))
	defer closeAll(oldClaims)
	if err != nil {
		return nil, fmt.Errorf("the old fleet: %w", err)
	}
	if g != nil {
		for i, c := range oldClaims {
			g.claim(oldName(i), c.NodeID(), c.Version())
		}
		time.Sleep(o.spread) // the old fleet's claims seen before the deployment starts
	}
	// Challenges during the deployment only (none are expected while the old
	// fleet fills an empty cluster; reset all the same).
	count.reset()
	defer func() { closeAll(d.newClaims) }()

	ends := &endLog{ended: map[string]time.Duration{}}
	events := make(chan deployEvent, 2*n)
	d.stopOrder = rand.New(rand.NewPCG(o.seed, uint64(pct))).Perm(n)
	dctx, cancel := context.WithCancel(ctx)
	defer cancel()
	d.t0 = time.Now()
	ends.t0 = d.t0
	for i, c := range oldClaims {
		ends.watch(fmt.Sprintf("old %d", i), c)
	}
	schedule := func(stopsAllowed bool) {
		for d.started < n && d.running() < d.maxRunning {
			i := d.started
			d.started++
			d.newStart[i] = time.Since(d.t0)
			if g != nil {
				g.join(newName(i)) // its gossip member starts before it acquires
			}
			go func() {
				c, err := news[i].p.Acquire(dctx)
				if err == nil && g != nil {
					g.claim(newName(i), c.NodeID(), c.Version())
				}
				events <- deployEvent{task: i, at: time.Now(), claim: c, err: err}
			}()
			d.track()
		}
		for stopsAllowed && d.stopsSent < n && d.healthy()-1 >= d.minHealthy {
			j := d.stopOrder[d.stopsSent]
			d.stopsSent++
			d.stoppedAt[j] = time.Since(d.t0)
			go func() {
				cctx, cancel := context.WithTimeout(context.WithoutCancel(dctx), 10*time.Second)
				defer cancel()
				err := oldClaims[j].Close(cctx)
				if g != nil {
					g.release(oldName(j))
				}
				events <- deployEvent{task: j, stop: true, at: time.Now(), err: err}
			}()
			d.track()
		}
	}
	schedule(false)
	stopsAllowed := time.After(o.stopDelay)
	allowed := false
	for d.taken < n || d.stopsDone < d.stopsSent || (d.stopsSent < n && !allowed) {
		if allowed && d.started == d.taken && d.stopsSent == d.stopsDone {
			break // nothing in flight and nothing more may start or stop: stuck
		}
		select {
		case <-stopsAllowed:
			allowed = true
		case e := <-events:
			d.record(e, news)
			if e.claim != nil {
				ends.watch(fmt.Sprintf("new %d", e.task), e.claim)
			}
		case <-ctx.Done():
			return nil, ctx.Err()
		}
		schedule(allowed)
	}
	elapsed := time.Since(d.t0)
	var settled time.Duration
	if o.readMode() {
		// A challenge of a live holder is answered at its next poll, and an
		// unanswered confirm would be taken a window after it: hold every
		// claim that long before counting the losses and the answers.
		cfg, _ := o.keepAliveOpts.derived()
		settled = cfg.Window + cfg.PollInterval + 3*time.Second
		if err := ctxtime.Sleep(ctx, settled); err != nil {
			return nil, err
		}
	}
	endedAt := ends.snapshot()
	counts := b.meter.Counts().Where(func(k latproxy.Key) bool {
		return strings.HasPrefix(k.Label, label+"new-") && strings.HasSuffix(k.Label, "/acquire")
	})
	run := d.result(pct, minPct, oldClaims, oldTook, endedAt)
	run.Requests, run.ByStatus, run.Elapsed, run.Settled = countOps(counts), counts.ByStatus(), toMS(elapsed), toMS(settled)
	run.perTask = perTaskOf(counts, n)
	run.Challenges, run.Confirms, run.Answered = int(count.challenged.Load()), int(count.confirmed.Load()), int(count.answered.Load())
	run.ChallengesPerTask, run.ChallengesMax = count.perTask(n)
	return run, nil
}

// record books one event.
func (d *deployment) record(e deployEvent, news []*member) {
	at := e.at.Sub(d.t0)
	if e.stop {
		d.stopsDone++
		d.releasedAt[e.task], d.releaseErrs[e.task] = at, e.err
		return
	}
	d.taken++
	news[e.task].setPhase("hold")
	if e.err != nil {
		d.failedNew++
		d.newErrs[e.task] = e.err
		return
	}
	d.healthyNew++
	d.newClaims[e.task], d.newTook[e.task] = e.claim, at
}

// result checks the deployment and summarises it.
func (d *deployment) result(pct, minPct int, oldClaims []*nodeid.Claim, oldTook []time.Time, endedAt map[string]time.Duration) *rollingRun {
	run := &rollingRun{Batch: pct, MinHealthy: minPct, MaxRunning: d.maxRunning, MinHealthyTasks: d.minHealthy,
		PeakRunning: d.peakRunning, LowestHealthy: d.lowestHealthy, Tasks: d.n, Distinct: true}
	errorf := func(format string, a ...any) {
		if len(run.Errors) < 8 {
			run.Errors = append(run.Errors, fmt.Sprintf(format, a...))
		}
	}
	var holds []holding
	released := map[int]time.Duration{} // node ID -> its old holder's release
	stopped := map[int]bool{}
	for _, j := range d.stopOrder[:d.stopsSent] {
		stopped[j] = true
	}
	for j, c := range oldClaims {
		h := holding{task: fmt.Sprintf("old %d", j), id: c.NodeID(), version: c.Version(), took: oldTook[j].Sub(d.t0)}
		end, ended := endedAt[h.task]
		switch {
		case ended && (!stopped[j] || end < d.stoppedAt[j]):
			run.Lost++
			errorf("old task %d lost node %d %v after the start: %v", j, h.id, end.Round(time.Millisecond), c.Err())
			h.ended, h.hasEnded = end, true
		case stopped[j]:
			h.ended, h.hasEnded = d.stoppedAt[j], true
		}
		holds = append(holds, h)
		switch {
		case !stopped[j]:
			errorf("old task %d (node %d) was never told to stop", j, h.id)
		case d.releaseErrs[j] != nil:
			errorf("old task %d: release of node %d: %v", j, h.id, d.releaseErrs[j])
		default:
			run.Released++
			released[h.id] = d.releasedAt[j]
		}
	}
	var took, retake []time.Duration
	for i, c := range d.newClaims {
		if c == nil {
			if d.newErrs[i] != nil {
				errorf("new task %d: %v", i, d.newErrs[i])
			}
			continue
		}
		run.Acquired++
		took = append(took, d.newTook[i]-d.newStart[i])
		h := holding{task: fmt.Sprintf("new %d", i), id: c.NodeID(), version: c.Version(), took: d.newTook[i]}
		if end, ended := endedAt[h.task]; ended {
			run.Lost++
			errorf("new task %d lost node %d %v after the start: %v", i, h.id, end.Round(time.Millisecond), c.Err())
			h.ended, h.hasEnded = end, true
		}
		holds = append(holds, h)
		if r, ok := released[h.id]; ok {
			retake = append(retake, d.newTook[i]-r)
		}
	}
	if errs := handoverErrors(holds); len(errs) > 0 {
		run.Distinct = false
		run.Errors = append(run.Errors, errs...)
	}
	if len(retake) != run.Released {
		errorf("%d released IDs, %d re-taken by a new task", run.Released, len(retake))
	}
	run.TimeToID, run.ReleaseToRetake = summarize(took), summarize(retake)
	return run
}

// fillFleet has every member acquire at once (uncounted: the caller filters on
// its labels) and returns their claims and when each was taken. It fails when
// any member could not acquire, after closing the claims taken. opts
// configure every claim.
func fillFleet(ctx context.Context, ms []*member, opts ...nodeid.ClaimOption) ([]*nodeid.Claim, []time.Time, error) {
	claims := make([]*nodeid.Claim, len(ms))
	took := make([]time.Time, len(ms))
	err := parallel(len(ms), len(ms), func(i int) error {
		c, err := ms[i].p.Acquire(ctx, opts...)
		took[i] = time.Now()
		ms[i].setPhase("hold")
		if err != nil {
			return fmt.Errorf("task %s: %w", ms[i].name, err)
		}
		claims[i] = c
		return nil
	})
	if err != nil {
		closeAll(claims)
		return nil, nil, err
	}
	return claims, took, nil
}

func ceilDiv(a, b int) int { return (a + b - 1) / b }

func printRolling(w io.Writer, r *rollingReport) {
	printHeader(w, r.header)
	fmt.Fprintf(w, "N = %d old tasks hold every ID and are replaced as an ECS deployment does it (lease %v; old tasks may stop %v after the first new tasks start)\n",
		r.IDs, time.Duration(float64(r.LeaseDuration)*float64(time.Millisecond)), time.Duration(float64(r.StopDelay)*float64(time.Millisecond)))
	fmt.Fprintf(w, "%s\n", r.KeepAlive)
	if r.Gossip != "" {
		fmt.Fprintf(w, "gossip: %s\n", r.Gossip)
	}
	fmt.Fprintln(w)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "batch\tmin healthy\tacquired\treleased\tdistinct\tlost\ttotal\tLIST\tGET\tPUT-create\tPUT-update\tother\tper task\tmax/task\tp50\tp99\tmax\tre-take p50\tp99\tmax\telapsed\t")
	for _, x := range r.Runs {
		fmt.Fprintf(tw, "%d%%\t%d%%\t%d/%d\t%d/%d\t%v\t%d\t%d\t%d\t%d\t%d\t%d\t%d\t%.2f\t%d\t%vms\t%vms\t%vms\t%vms\t%vms\t%vms\t%vms\t\n",
			x.Batch, x.MinHealthy, x.Acquired, x.Tasks, x.Released, x.Tasks, x.Distinct, x.Lost, x.Requests.Total, x.Requests.List, x.Requests.Get,
			x.Requests.Create, x.Requests.Update, x.Requests.Other, x.PerTaskMean, x.PerTaskMax,
			x.TimeToID.P50, x.TimeToID.P99, x.TimeToID.Max, x.ReleaseToRetake.P50, x.ReleaseToRetake.P99, x.ReleaseToRetake.Max, x.Elapsed)
	}
	_ = tw.Flush()
	fmt.Fprintln(w)
	for _, x := range r.Runs {
		fmt.Fprintf(w, "batch %d%%: at most %d tasks running (peak %d), at least %d healthy (low %d); time-to-ID from a new task's start, re-take from the release written\n  by status: %s\n",
			x.Batch, x.MaxRunning, x.PeakRunning, x.MinHealthyTasks, x.LowestHealthy, statusMap(x.ByStatus))
		fmt.Fprintf(w, "  challenges of live holders: %d (%d confirmed, %d answered), %.3f per new task, max %d; lost and answers counted %v after the deployment\n",
			x.Challenges, x.Confirms, x.Answered, x.ChallengesPerTask, x.ChallengesMax, dur(x.Settled))
		for _, e := range x.Errors {
			fmt.Fprintf(w, "  error: %s\n", e)
		}
	}
	printTargets(w, r.Targets)
}
