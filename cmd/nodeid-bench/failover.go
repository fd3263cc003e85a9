package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"math/rand/v2"
	"text/tabwriter"
	"time"

	"github.com/nodeid/nodeid/cmd/nodeid-bench/internal/latproxy"
	"github.com/nodeid/nodeid/internal/ctxtime"
	"github.com/nodeid/nodeid/nodeid"
)

type failoverOpts struct {
	common
	ids, runs     int
	leaseDuration time.Duration
	renewInterval time.Duration
}

type failoverRun struct {
	Victim  int   `json:"victimNodeId"`
	Version int64 `json:"newVersion"`
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
}

type failoverReport struct {
	header
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
	fs.IntVar(&o.ids, "ids", 8, "cluster size; every ID is held")
	fs.IntVar(&o.runs, "runs", 3, "kills, one after the other (a new waiting task each time)")
	fs.DurationVar(&o.leaseDuration, "lease-duration", 5*time.Second, "lease duration of every task")
	fs.DurationVar(&o.renewInterval, "renew-interval", 0, "renew interval (0: lease/3)")
	if code, ok := parseFlags(fs, args, stdout, stderr); !ok {
		return code
	}
	if o.renewInterval == 0 {
		o.renewInterval = o.leaseDuration / 3
	}
	if o.ids < 1 || o.ids > 1024 || o.runs < 1 {
		fmt.Fprintln(stderr, "nodeid-bench failover: want --ids in 1..1024 and --runs >= 1")
		return 2
	}
	_, code := runOnBackend(ctx, "failover", o.common, true, stdout, stderr,
		func(b *backend) (*failoverReport, error) { return failover(ctx, b, o, args) }, printFailover)
	return code
}

func (o failoverOpts) config(task string) nodeid.Config {
	cfg := nodeid.DefaultConfig()
	cfg.TaskID, cfg.ClusterSize = task, o.ids
	cfg.LeaseDuration, cfg.RenewInterval, cfg.RenewDeadline = o.leaseDuration, o.renewInterval, o.leaseDuration*2/3
	cfg.AcquireTimeout = 10 * time.Minute
	return cfg
}

type holder struct {
	name  string
	claim *nodeid.Claim
}

func failover(ctx context.Context, b *backend, o failoverOpts, args []string) (*failoverReport, error) {
	bound := o.leaseDuration + o.renewInterval + 2*time.Second
	rep := &failoverReport{header: newHeader("failover", b, args), IDs: o.ids, LeaseDuration: toMS(o.leaseDuration),
		RenewInterval: toMS(o.renewInterval), Bound: toMS(bound)}
	prefix := b.prefix("failover")
	var holders []*holder
	defer func() {
		_ = parallel(len(holders), 16, func(i int) error {
			cctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
			defer cancel()
			_ = holders[i].claim.Close(cctx)
			return nil
		})
	}()
	// Fill the cluster.
	for i := range o.ids {
		name := fmt.Sprintf("failover/holder-%d", i)
		t, err := b.newTask(ctx, name, prefix)
		if err != nil {
			return nil, err
		}
		p, err := nodeid.New(t.store, o.config(fmt.Sprintf("bench-%d-holder-%d", o.seed, i)))
		if err != nil {
			return nil, err
		}
		c, err := p.Acquire(ctx)
		if err != nil {
			return nil, fmt.Errorf("fill the cluster: %w", err)
		}
		t.setPhase("hold")
		holders = append(holders, &holder{name: name, claim: c})
	}
	rng := rand.New(rand.NewPCG(o.seed, 0x6661696c))
	var worst time.Duration
	for r := range o.runs {
		name := fmt.Sprintf("failover/waiter-%d", r)
		t, err := b.newTask(ctx, name, prefix)
		if err != nil {
			return nil, err
		}
		p, err := nodeid.New(t.store, o.config(fmt.Sprintf("bench-%d-waiter-%d", o.seed, r)))
		if err != nil {
			return nil, err
		}
		type result struct {
			c   *nodeid.Claim
			err error
			at  time.Time
		}
		done := make(chan result, 1)
		waitStart := time.Now()
		go func() {
			c, err := p.Acquire(ctx)
			done <- result{c, err, time.Now()}
		}()
		// Let the waiter find the cluster full and settle into its waiting,
		// and kill at a random point of the victims' renewal cycle.
		settle := 2*time.Second + time.Duration(rng.Int64N(int64(o.renewInterval)))
		if err := ctxtime.Sleep(ctx, settle); err != nil {
			return nil, err
		}
		vi := rng.IntN(len(holders))
		victim := holders[vi]
		b.meter.Block(labelOf(victim.name, "hold"))
		killed := time.Now()
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
		lastWrite := lastSuccessfulWrite(b.meter.Events(), labelOf(victim.name, "hold"), killed)
		run := failoverRun{Victim: victim.claim.NodeID(), Version: res.c.Version(), KillToTake: toMS(res.at.Sub(killed)),
			WaitedTotal: toMS(res.at.Sub(waitStart))}
		if lastWrite.IsZero() {
			// Killed before its first renewal: its last write was the take.
			lastWrite = victimTakeTime(b.meter.Events(), labelOf(victim.name, "acquire"))
		}
		if !lastWrite.IsZero() {
			run.LastWriteToTake, run.SinceLastWrite = toMS(res.at.Sub(lastWrite)), toMS(killed.Sub(lastWrite))
		}
		counts := b.meter.Counts().Where(func(k latproxy.Key) bool { return k.Label == labelOf(name, "acquire") })
		run.WaiterRequests, run.WaiterByStatus = countOps(counts), counts.ByStatus()
		rep.Runs = append(rep.Runs, run)
		worst = max(worst, res.at.Sub(killed))
		// The waiter now holds the victim's ID; the victim fences itself.
		holders[vi] = &holder{name: name, claim: res.c}
		cctx, cancel := context.WithTimeout(ctx, 100*time.Millisecond)
		_ = victim.claim.Close(cctx)
		cancel()
	}
	rep.Worst = toMS(worst)
	rep.Targets = []target{{What: fmt.Sprintf("failover (lease %v, renew %v): kill to take", o.leaseDuration, o.renewInterval),
		Target: fmt.Sprintf("<= lease + renew interval + 2s = %v", bound), Measured: fmt.Sprintf("%v (worst of %d)", worst.Round(time.Millisecond), o.runs),
		Met: worst <= bound}}
	return rep, nil
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
	fmt.Fprintf(w, "%d IDs all held; a waiting task polls; a random holder's path to S3 is cut (no release)\nlease %vms, renew interval %vms: bound lease + renew + 2s = %vms\n\n",
		r.IDs, r.LeaseDuration, r.RenewInterval, r.Bound)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "run\tnode\tversion\tkilled after last write\tkill to take\tlast write to take\twaiter requests\t")
	for i, x := range r.Runs {
		fmt.Fprintf(tw, "%d\t%d\t%d\t%vms\t%vms\t%vms\t%d (%s)\t\n", i, x.Victim, x.Version, x.SinceLastWrite, x.KillToTake,
			x.LastWriteToTake, x.WaiterRequests.Total, x.WaiterRequests)
	}
	_ = tw.Flush()
	printTargets(w, r.Targets)
}
