package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"math/rand/v2"
	"slices"
	"strings"
	"sync/atomic"
	"text/tabwriter"
	"time"

	"github.com/nodeid/nodeid/cmd/nodeid-bench/internal/latproxy"
	"github.com/nodeid/nodeid/internal/ctxtime"
	"github.com/nodeid/nodeid/lease"
	"github.com/nodeid/nodeid/node"
	"github.com/nodeid/nodeid/nodeid"
)

type failoverOpts struct {
	common
	keepAliveOpts
	ids, runs     int
	leaseDuration time.Duration
	renewInterval time.Duration
	keepAlive     string
	kinds         string
	gossip        bool
	detect        time.Duration
	spread        time.Duration
}

// The failover kinds: what happens to the holder.
const (
	// kindCrash: an ID issuer (a broker issuing Snowflake IDs) is cut off,
	// as by kill -9: no release, its requests hang.
	kindCrash = "crash"
	// kindNoIDs: a claim that issues no IDs (Config.IssuesNoIDs: an election
	// or a lock) is cut off.
	kindNoIDs = "noids"
	// kindRelease: the holder releases its ID (SIGTERM, Claim.Close), as a
	// broker does, its floor lowered to the IDs it issued.
	kindRelease = "release"
)

func (o failoverOpts) readMode() bool { return o.keepAlive == string(nodeid.KeepAliveRead) }

type failoverRun struct {
	Kind    string `json:"kind"`
	Victim  int    `json:"victimNodeId"`
	Version int64  `json:"newVersion"`
	// KillToTake is the time from cutting the holder off until the waiting
	// task's Acquire returned with its ID.
	KillToTake ms `json:"killToTakeMs"`
	// LastWriteToTake is the time from the victim's last successful write
	// (when the proxy answered it) until the take: the protocol's own part.
	LastWriteToTake ms `json:"lastWriteToTakeMs"`
	// SinceLastWrite is how long before the kill the victim's last write was.
	SinceLastWrite ms `json:"killAfterLastWriteMs"`
	// WaiterRequests is what the waiting task sent from its start to the take.
	WaiterRequests opCounts       `json:"waiterRequests"`
	WaiterByStatus map[string]int `json:"waiterByStatus"`
	WaitedTotal    ms             `json:"waiterTotalMs"`
	// Challenges and Confirms are what the waiting task wrote (read mode).
	Challenges int `json:"challenges"`
	Confirms   int `json:"confirms"`
	// KillToConfirm is from the cut until the waiting task's last confirm
	// landed (its challenge and confirm answered 2xx); the take may come a
	// window (W + 1 s + ClockMargin, whole seconds on the store's clock)
	// after it.
	KillToConfirm ms `json:"killToConfirmMs,omitempty"`
	// KillToFirstID is from the cut (or the release's start) until the
	// successor's generator issued its first Snowflake ID (kind crash and
	// release, which issue IDs).
	KillToFirstID ms `json:"killToFirstIdMs,omitempty"`
	// VictimIssued and SuccessorIDs count the IDs each issued (the
	// successor's until the next run). Overlap is true when the successor's
	// first ID is not above the old holder's highest: both issue under one
	// node ID, strictly increasing, so without an overlap no ID repeats.
	VictimIssued int64 `json:"victimIssued,omitempty"`
	SuccessorIDs int64 `json:"successorIssued,omitempty"`
	Overlap      bool  `json:"overlap"`
}

type failoverReport struct {
	header
	KeepAlive keepAliveInfo `json:"keepAlive"`
	// Gossip is the stand-in for gossip's failure detection, if any.
	Gossip        string        `json:"gossip,omitempty"`
	IDs           int           `json:"ids"`
	LeaseDuration ms            `json:"leaseDurationMs"`
	RenewInterval ms            `json:"renewIntervalMs"`
	Bound         ms            `json:"boundMs"`
	Runs          []failoverRun `json:"runs"`
	Worst         ms            `json:"worstKillToTakeMs"`
	Targets       []target      `json:"targets,omitempty"`
}

func runFailover(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	var o failoverOpts
	fs := flag.NewFlagSet("nodeid-bench failover", flag.ContinueOnError)
	addCommon(fs, &o.common)
	addKeepAliveFlags(fs, &o.keepAliveOpts)
	fs.IntVar(&o.ids, "ids", 8, "cluster size; every ID is held")
	fs.IntVar(&o.runs, "runs", 3, "holders lost per kind, one after the other (a new waiting task each time)")
	fs.DurationVar(&o.leaseDuration, "lease-duration", 5*time.Second, "write mode: lease duration of every task")
	fs.DurationVar(&o.renewInterval, "renew-interval", 0, "write mode: renew interval (0: lease/3)")
	fs.StringVar(&o.keepAlive, "keepalive", "write", "keep-alive mode: write, or read (--read-window, --backstop, --backstop-interval, --poll-interval)")
	fs.StringVar(&o.kinds, "kinds", kindCrash, "comma-separated: crash (an ID issuer cut off, as by kill -9), noids (a claim issuing no IDs, as an election's, cut off), release (the holder releases, as on SIGTERM)")
	fs.BoolVar(&o.gossip, "gossip", false, "give every task a stand-in for gossip (nodeid.Peers with hints, and nodeid.Tasks): a cut-off task is seen dead --detect after the cut, a claim or a release --spread after it (default: on in read mode)")
	fs.DurationVar(&o.detect, "detect", 3*time.Second, "with --gossip: time from a cut until gossip shows the task dead (memberlist's failure detection)")
	fs.DurationVar(&o.spread, "spread", 100*time.Millisecond, "with --gossip: time for a claim or a release to reach the other members")
	if code, ok := parseFlags(fs, args, stdout, stderr); !ok {
		return code
	}
	gossipSet := false
	fs.Visit(func(f *flag.Flag) { gossipSet = gossipSet || f.Name == "gossip" })
	if !gossipSet {
		o.gossip = o.readMode()
	}
	if o.renewInterval == 0 {
		o.renewInterval = o.leaseDuration / 3
	}
	kinds, err := parseKinds(o.kinds)
	switch {
	case err != nil:
	case o.ids < 1 || o.ids > 1024 || o.runs < 1:
		err = fmt.Errorf("want --ids in 1..1024 and --runs >= 1")
	case o.keepAlive != string(nodeid.KeepAliveWrite) && !o.readMode():
		err = fmt.Errorf("--keepalive %q: want write or read", o.keepAlive)
	case o.readMode():
		_, err = o.keepAliveOpts.derived()
	}
	if err != nil {
		fmt.Fprintf(stderr, "nodeid-bench failover: %v\n", err)
		return 2
	}
	_, code := runOnBackend(ctx, "failover", o.common, true, stdout, stderr,
		func(b *backend) (*failoverReport, error) { return failover(ctx, b, o, kinds, args) }, printFailover)
	return code
}

// parseKinds parses --kinds.
func parseKinds(s string) ([]string, error) {
	var out []string
	for k := range strings.SplitSeq(s, ",") {
		k = strings.TrimSpace(k)
		if k != kindCrash && k != kindNoIDs && k != kindRelease || slices.Contains(out, k) {
			return nil, fmt.Errorf("--kinds %q: want a list of crash, noids and release, each once", s)
		}
		out = append(out, k)
	}
	return out, nil
}

// config is the configuration of the task named task for kind.
func (o failoverOpts) config(task, kind string) nodeid.Config {
	cfg := nodeid.DefaultConfig()
	cfg.TaskID, cfg.ClusterSize = task, o.ids
	if o.readMode() {
		o.keepAliveOpts.apply(&cfg)
	} else {
		cfg.LeaseDuration, cfg.RenewInterval, cfg.RenewDeadline = o.leaseDuration, o.renewInterval, o.leaseDuration*2/3
	}
	cfg.IssuesNoIDs = kind == kindNoIDs
	cfg.AcquireTimeout = 30 * time.Minute
	return cfg
}

type holder struct {
	name, task string
	claim      *nodeid.Claim
	node       *node.Node // the broker that holds claim; nil when the kind issues no IDs (a bare claim)
	issuer     *issuer    // nil when the kind issues no IDs
}

// close releases the holder's ID: its node's Close, or the bare claim's.
func (h *holder) close(ctx context.Context) {
	if h.node != nil {
		_ = h.node.Close(ctx)
		return
	}
	_ = h.claim.Close(ctx)
}

// startNode starts a broker's node (node.Node, the one composition of a
// claim and its fenced generator) on store with cfg, and returns it once it
// holds a node ID and serves. Gossip is the caller's (cfg.Peers, cfg.Tasks);
// the node runs no store probe.
func startNode(ctx context.Context, store lease.Store, cfg nodeid.Config) (*node.Node, error) {
	nc := node.DefaultConfig()
	nc.Provider, nc.SkipProbe = cfg, true
	n, err := node.New(store, nc)
	if err != nil {
		return nil, err
	}
	if err := n.Start(ctx); err != nil {
		_ = n.Close(context.WithoutCancel(ctx))
		return nil, err
	}
	return n, nil
}

// issuer issues Snowflake IDs from a node, as a broker's clients ask for
// them, and keeps the highest it issued.
type issuer struct {
	node    *node.Node
	stop    chan struct{}
	done    chan struct{}
	n       atomic.Int64
	high    atomic.Int64
	first   atomic.Int64 // Unix ns of the first ID, 0 before
	firstID atomic.Int64
}

// startIssuer issues a batch from n every few milliseconds until stopped;
// failures (fenced, the clock behind the floor) are retried.
func startIssuer(n *node.Node) *issuer {
	is := &issuer{node: n, stop: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(is.done)
		t := time.NewTicker(5 * time.Millisecond)
		defer t.Stop()
		for {
			if r, err := n.NextN(16); err == nil {
				if is.first.Load() == 0 {
					is.first.Store(time.Now().UnixNano())
				}
				is.n.Add(int64(r.N))
				is.high.Store(int64(r.First) + int64(r.N) - 1)
				if is.firstID.Load() == 0 {
					is.firstID.Store(int64(r.First))
				}
			}
			select {
			case <-is.stop:
				return
			case <-t.C:
			}
		}
	}()
	return is
}

func (is *issuer) halt() {
	if is != nil {
		select {
		case <-is.stop:
		default:
			close(is.stop)
		}
		<-is.done
	}
}

// firstIDAt returns when the first ID was issued; zero before.
func (is *issuer) firstIDAt() time.Time {
	if ns := is.first.Load(); ns != 0 {
		return time.Unix(0, ns)
	}
	return time.Time{}
}

// failoverBound is the bound on kill (or release) to take for kind.
func (o failoverOpts) failoverBound(kind string) (time.Duration, string) {
	switch {
	case kind == kindRelease:
		return 200 * time.Millisecond, "<= 0.2s"
	case o.readMode():
		return o.window + 7*time.Second, fmt.Sprintf("<= W + 7s = %v", o.window+7*time.Second)
	}
	b := o.leaseDuration + o.renewInterval + 2*time.Second
	return b, fmt.Sprintf("<= lease + renew interval + 2s = %v", b)
}

func failover(ctx context.Context, b *backend, o failoverOpts, kinds []string, args []string) (*failoverReport, error) {
	bound, _ := o.failoverBound(kindCrash)
	rep := &failoverReport{header: newHeader("failover", b, args), KeepAlive: keepAliveInfo{Mode: string(nodeid.KeepAliveWrite)}, IDs: o.ids,
		LeaseDuration: toMS(o.leaseDuration), RenewInterval: toMS(o.renewInterval), Bound: toMS(bound)}
	if o.readMode() {
		info, err := readInfo(ctx, b, o.keepAliveOpts)
		if err != nil {
			return nil, err
		}
		rep.KeepAlive, rep.LeaseDuration, rep.RenewInterval = info, info.Backstop, info.BackstopInterval
	}
	if o.gossip {
		rep.Gossip = fmt.Sprintf("stand-in: a cut-off task seen dead %v after the cut, a claim or release %v after it", o.detect, o.spread)
	}
	for _, kind := range kinds {
		runs, err := failoverKind(ctx, b, o, kind)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", kind, err)
		}
		rep.Runs = append(rep.Runs, runs...)
		var worst, worstID time.Duration
		dups := 0
		for _, r := range runs {
			worst, worstID = max(worst, dur(r.KillToTake)), max(worstID, dur(r.KillToFirstID))
			if r.Overlap {
				dups++
			}
		}
		if kind != kindRelease {
			rep.Worst = toMS(max(dur(rep.Worst), worst))
		}
		bound, want := o.failoverBound(kind)
		what := map[string]string{kindCrash: "an ID issuer cut off: kill to take", kindNoIDs: "a claim issuing no IDs cut off: kill to take",
			kindRelease: "release (Close called) to take"}[kind]
		rep.Targets = append(rep.Targets, target{What: fmt.Sprintf("failover (%s): %s", modeName(o), what), Target: want,
			Measured: fmt.Sprintf("%v (worst of %d)", worst.Round(time.Millisecond), len(runs)), Met: worst <= bound})
		if kind != kindNoIDs {
			idBound, idWant := bound, "as the take"
			if o.readMode() && kind == kindCrash {
				idBound = o.backstop + o.window
				idWant = fmt.Sprintf("<= B + W = %v", idBound)
			}
			rep.Targets = append(rep.Targets, target{What: fmt.Sprintf("failover (%s, %s): to the successor's first Snowflake ID, 0 duplicates", modeName(o), kind),
				Target: idWant, Measured: fmt.Sprintf("%v (worst), %d runs of %d where IDs may repeat", worstID.Round(time.Millisecond), dups, len(runs)),
				Met: dups == 0 && (kind != kindCrash || !o.readMode() || worstID <= idBound)})
		}
	}
	return rep, nil
}

func modeName(o failoverOpts) string {
	if o.readMode() {
		return fmt.Sprintf("read mode, W %v, backstop %v", o.window, o.backstop)
	}
	return fmt.Sprintf("write mode, lease %v", o.leaseDuration)
}

// failoverKind fills a fresh prefix with o.ids holders and, o.runs times,
// starts a waiting task and loses one holder as kind says.
func failoverKind(ctx context.Context, b *backend, o failoverOpts, kind string) ([]failoverRun, error) {
	prefix := b.prefix("failover-" + kind)
	var g *fakeGossip
	if o.gossip {
		g = newFakeGossip(o.detect, o.spread)
	}
	withGossip := func(cfg nodeid.Config) nodeid.Config {
		if g != nil {
			v := g.view(cfg.TaskID)
			cfg.Tasks = v
			if kind != kindNoIDs { // elections keep Tasks and drop Peers
				cfg.Peers = v
			}
			g.join(cfg.TaskID)
		}
		return cfg
	}
	var holders []*holder
	defer func() {
		_ = parallel(len(holders), 16, func(i int) error {
			holders[i].issuer.halt()
			cctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
			defer cancel()
			holders[i].close(cctx)
			return nil
		})
	}()
	// take takes a node ID for task on store: a bare claim for kind noids
	// (an election's), a broker's node otherwise.
	take := func(ctx context.Context, store lease.Store, cfg nodeid.Config) (*nodeid.Claim, *node.Node, error) {
		if kind == kindNoIDs {
			p, err := nodeid.New(store, cfg)
			if err != nil {
				return nil, nil, err
			}
			c, err := p.Acquire(ctx)
			return c, nil, err
		}
		n, err := startNode(ctx, store, cfg)
		if err != nil {
			return nil, nil, err
		}
		return n.Claim(), n, nil
	}
	hold := func(name, task string, c *nodeid.Claim, n *node.Node) *holder {
		h := &holder{name: name, task: task, claim: c, node: n}
		if g != nil {
			g.claim(task, c.NodeID(), c.Version())
		}
		if n != nil {
			h.issuer = startIssuer(n)
		}
		return h
	}
	// Fill the cluster.
	for i := range o.ids {
		name := fmt.Sprintf("failover-%s/holder-%d", kind, i)
		t, err := b.newTask(ctx, name, prefix)
		if err != nil {
			return nil, err
		}
		task := fmt.Sprintf("bench-%d-%s-holder-%d", o.seed, kind, i)
		c, n, err := take(ctx, t.store, withGossip(o.config(task, kind)))
		if err != nil {
			return nil, fmt.Errorf("fill the cluster: %w", err)
		}
		t.setPhase("hold")
		holders = append(holders, hold(name, task, c, n))
	}
	settleOver := o.renewInterval
	if o.readMode() {
		cfg, _ := o.keepAliveOpts.derived()
		settleOver = cfg.PollInterval // a random point of the poll cycle
	}
	rng := rand.New(rand.NewPCG(o.seed, 0x6661696c))
	var runs []failoverRun
	for r := range o.runs {
		name := fmt.Sprintf("failover-%s/waiter-%d", kind, r)
		t, err := b.newTask(ctx, name, prefix)
		if err != nil {
			return nil, err
		}
		task := fmt.Sprintf("bench-%d-%s-waiter-%d", o.seed, kind, r)
		cfg := withGossip(o.config(task, kind))
		count := &challengeCount{}
		cfg.Observer = count.observer(name)
		type result struct {
			c   *nodeid.Claim
			n   *node.Node
			err error
			at  time.Time
		}
		done := make(chan result, 1)
		waitStart := time.Now()
		go func() {
			c, n, err := take(ctx, t.store, cfg)
			done <- result{c, n, err, time.Now()}
		}()
		// Let the waiter find the cluster full and settle into its waiting,
		// and lose the holder at a random point of its renewal (or poll) cycle.
		settle := 2*time.Second + time.Duration(rng.Int64N(int64(settleOver)))
		if err := ctxtime.Sleep(ctx, settle); err != nil {
			return nil, err
		}
		vi := rng.IntN(len(holders))
		victim := holders[vi]
		killed := time.Now()
		if kind == kindRelease {
			victim.issuer.halt()
			go func() {
				cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
				defer cancel()
				victim.close(cctx)
				if g != nil {
					g.release(victim.task)
				}
			}()
		} else {
			b.meter.Block(labelOf(victim.name, "hold"))
			if g != nil {
				g.kill(victim.task)
			}
		}
		var res result
		select {
		case res = <-done:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
		t.setPhase("hold")
		if res.err != nil {
			return nil, fmt.Errorf("run %d: the waiting task: %w", r, res.err)
		}
		if res.c.NodeID() != victim.claim.NodeID() || res.c.Version() <= victim.claim.Version() {
			return nil, fmt.Errorf("run %d: the waiting task took node %d version %d, want the victim's node %d above version %d",
				r, res.c.NodeID(), res.c.Version(), victim.claim.NodeID(), victim.claim.Version())
		}
		// The take: when Acquire returned, or when it first held the ID while
		// it waited for the floor (a crashed issuer's reservation).
		took := res.at
		if ns := count.taken.Load(); ns != 0 {
			took = time.Unix(0, ns)
		}
		run := failoverRun{Kind: kind, Victim: victim.claim.NodeID(), Version: res.c.Version(), KillToTake: toMS(took.Sub(killed)),
			WaitedTotal: toMS(res.at.Sub(waitStart)), Challenges: int(count.challenged.Load()), Confirms: int(count.confirmed.Load())}
		if ns := count.lastConfirm.Load(); ns != 0 {
			run.KillToConfirm = toMS(time.Unix(0, ns).Sub(killed))
		}
		if kind != kindRelease {
			lastWrite := lastSuccessfulWrite(b.meter.Events(), labelOf(victim.name, "hold"), killed)
			if lastWrite.IsZero() {
				// Killed before its first renewal: its last write was the take.
				lastWrite = victimTakeTime(b.meter.Events(), labelOf(victim.name, "acquire"))
			}
			if !lastWrite.IsZero() {
				run.LastWriteToTake, run.SinceLastWrite = toMS(took.Sub(lastWrite)), toMS(killed.Sub(lastWrite))
			}
		}
		counts := b.meter.Counts().Where(func(k latproxy.Key) bool { return k.Label == labelOf(name, "acquire") })
		run.WaiterRequests, run.WaiterByStatus = countOps(counts), counts.ByStatus()
		next := hold(name, task, res.c, res.n)
		holders[vi] = next
		if next.issuer != nil {
			// The successor's first ID, and no ID of the old holder at or
			// above it: one node ID, so IDs order by timestamp, then sequence.
			if err := waitFirstID(ctx, next.issuer, 2*(o.backstop+o.leaseDuration)); err != nil {
				return nil, fmt.Errorf("run %d: the successor issued no ID: %w", r, err)
			}
			run.KillToFirstID = toMS(next.issuer.firstIDAt().Sub(killed))
			victim.issuer.halt()
			run.VictimIssued, run.SuccessorIDs = victim.issuer.n.Load(), next.issuer.n.Load()
			run.Overlap = next.issuer.firstID.Load() <= victim.issuer.high.Load()
		}
		runs = append(runs, run)
		// The waiter now holds the victim's ID; the victim fences itself.
		cctx, cancel := context.WithTimeout(ctx, 100*time.Millisecond)
		victim.close(cctx)
		cancel()
	}
	return runs, nil
}

// waitFirstID waits until is issued its first ID, at most limit.
func waitFirstID(ctx context.Context, is *issuer, limit time.Duration) error {
	end := time.Now().Add(limit)
	for is.first.Load() == 0 {
		if time.Now().After(end) {
			return fmt.Errorf("none within %v", limit)
		}
		if err := ctxtime.Sleep(ctx, 5*time.Millisecond); err != nil {
			return err
		}
	}
	return nil
}

// lastSuccessfulWrite returns when the proxy answered the last successful
// PUT-update labelled label that it received before t.
func lastSuccessfulWrite(events []latproxy.Event, label string, t time.Time) time.Time {
	var last time.Time
	for _, e := range events {
		if e.Label == label && e.Op == latproxy.OpUpdate && e.Status == 200 && e.Sent.Before(t) && e.Done.After(last) {
			last = e.Done
		}
	}
	return last
}

// victimTakeTime returns when the proxy answered the write by which the victim
// took its ID (its last successful write during acquire).
func victimTakeTime(events []latproxy.Event, label string) time.Time {
	var last time.Time
	for _, e := range events {
		if e.Label == label && (e.Op == latproxy.OpUpdate || e.Op == latproxy.OpCreate) && e.Status == 200 && e.Done.After(last) {
			last = e.Done
		}
	}
	return last
}

func printFailover(w io.Writer, r *failoverReport) {
	printHeader(w, r.header)
	fmt.Fprintf(w, "%d IDs all held; a waiting task polls; a random holder's path to S3 is cut (no release), or it releases\n", r.IDs)
	if r.KeepAlive.Mode == string(nodeid.KeepAliveRead) {
		fmt.Fprintf(w, "%s\n", r.KeepAlive)
	} else {
		fmt.Fprintf(w, "lease %vms, renew interval %vms: bound lease + renew + 2s = %vms\n", r.LeaseDuration, r.RenewInterval, r.Bound)
	}
	if r.Gossip != "" {
		fmt.Fprintf(w, "gossip: %s\n", r.Gossip)
	}
	fmt.Fprintln(w)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "kind\trun\tnode\tversion\tkilled after last write\tkill to take\tlast write to take\tto first ID\tto confirm\tchallenges (confirmed)\tIDs old / new\toverlap\twaiter requests\t")
	for i, x := range r.Runs {
		fmt.Fprintf(tw, "%s\t%d\t%d\t%d\t%vms\t%vms\t%vms\t%vms\t%vms\t%d (%d)\t%d / %d\t%v\t%d (%s)\t\n", x.Kind, i, x.Victim, x.Version, x.SinceLastWrite, x.KillToTake,
			x.LastWriteToTake, x.KillToFirstID, x.KillToConfirm, x.Challenges, x.Confirms, x.VictimIssued, x.SuccessorIDs, x.Overlap, x.WaiterRequests.Total, x.WaiterRequests)
	}
	_ = tw.Flush()
	printTargets(w, r.Targets)
}
