package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"
	"sync"
	"text/tabwriter"
	"time"

	"github.com/nodeid/nodeid/cmd/nodeid-bench/internal/latproxy"
	"github.com/nodeid/nodeid/lease"
	"github.com/nodeid/nodeid/nodeid"
)

// Herd variants: who acquires, and from which bucket state.
const (
	// variantSpread is nodeid's Provider, OrderSpread, on a fresh prefix.
	variantSpread = "spread"
	// variantLowestFirst is the Zeebe-style baseline: lease objects 0..N-1
	// pre-created free, each task GETs 0, 1, 2, ... one at a time and CASes
	// the first free one (see zeebeAcquire).
	variantLowestFirst = "lowest-first"
	// variantSpreadFilled is OrderSpread on a prefix filled by nodeid.Init (all
	// objects free), the baseline's starting state.
	variantSpreadFilled = "spread-filled"
	// variantNodeidLowest is nodeid's Provider with OrderLowestFirst on a
	// fresh prefix (takes never-created IDs by create, lowest first).
	variantNodeidLowest = "nodeid-lowest-first"
	// variantNodeidLowestFilled is OrderLowestFirst on a filled prefix.
	variantNodeidLowestFilled = "nodeid-lowest-first-filled"
)

var variantDoc = map[string]string{
	variantSpread:             "nodeid Provider, OrderSpread, fresh prefix",
	variantLowestFirst:        "Zeebe-style baseline (bench): objects 0..N-1 pre-created free; GET 0,1,2,... one at a time, CAS the first free",
	variantSpreadFilled:       "nodeid Provider, OrderSpread, prefix filled by nodeid.Init",
	variantNodeidLowest:       "nodeid Provider, OrderLowestFirst, fresh prefix",
	variantNodeidLowestFilled: "nodeid Provider, OrderLowestFirst, prefix filled by nodeid.Init",
}

type herdOpts struct {
	common
	leaseOpts
	tasks    int
	variants string
}

// herdRun is the result of one variant.
type herdRun struct {
	Variant  string   `json:"variant"`
	What     string   `json:"what"`
	Tasks    int      `json:"tasks"`
	IDs      int      `json:"ids"`
	Acquired int      `json:"acquired"`
	Errors   []string `json:"errors,omitempty"`
	// Distinct is true when no two tasks held one ID at the same time: the IDs
	// held at the end are distinct, and an ID taken twice was taken the second
	// time (with a higher version) after the first claim had ended.
	Distinct bool `json:"distinct"`
	// Lost counts claims that ended (lost their lease) before every task had
	// acquired: on an overloaded server, renewals can fail past the renew
	// deadline, and the ID is then taken again once expired.
	Lost     int            `json:"lostDuringRun"`
	Requests opCounts       `json:"requests"`
	ByStatus map[string]int `json:"byStatus"`
	perTask
	TimeToID durations `json:"timeToId"`
	Elapsed  ms        `json:"elapsedMs"`
}

type herdReport struct {
	header
	Tasks         int       `json:"tasks"`
	IDs           int       `json:"ids"`
	LeaseDuration ms        `json:"leaseDurationMs"`
	Runs          []herdRun `json:"runs"`
	// Ratio is spread's total requests over lowest-first's, when both ran.
	Ratio   float64  `json:"ratioSpreadToLowestFirst,omitempty"`
	Targets []target `json:"targets,omitempty"`
}

func runHerd(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	var o herdOpts
	fs := flag.NewFlagSet("nodeid-bench herd", flag.ContinueOnError)
	addCommon(fs, &o.common)
	addLeaseFlags(fs, &o.leaseOpts)
	fs.IntVar(&o.tasks, "tasks", 256, "tasks that start at once (K)")
	fs.StringVar(&o.variants, "orders", variantSpread+","+variantLowestFirst,
		"comma-separated variants to run, each on a fresh prefix: "+strings.Join([]string{variantSpread, variantLowestFirst,
			variantSpreadFilled, variantNodeidLowest, variantNodeidLowestFilled}, ", "))
	if code, ok := parseFlags(fs, args, stdout, stderr); !ok {
		return code
	}
	variants := strings.Split(o.variants, ",")
	for _, v := range variants {
		if variantDoc[v] == "" {
			fmt.Fprintf(stderr, "nodeid-bench herd: unknown order %q\n", v)
			return 2
		}
	}
	if o.tasks < 1 || o.ids < 1 || o.ids > 1024 {
		fmt.Fprintln(stderr, "nodeid-bench herd: --tasks must be >= 1 and --ids in 1..1024")
		return 2
	}
	rep, code := runOnBackend(ctx, "herd", o.common, false, stdout, stderr,
		func(b *backend) (*herdReport, error) { return herd(ctx, b, o, variants, args) }, printHerd)
	if code != 0 {
		return code
	}
	for _, r := range rep.Runs {
		if !r.Distinct || r.Acquired != r.Tasks {
			fmt.Fprintf(stderr, "nodeid-bench herd: FAILED: %s: %d of %d tasks acquired, distinct=%v\n", r.Variant, r.Acquired, r.Tasks, r.Distinct)
			return 1
		}
	}
	return 0
}

// herd runs each variant in turn on a fresh prefix.
func herd(ctx context.Context, b *backend, o herdOpts, variants, args []string) (*herdReport, error) {
	rep := &herdReport{header: newHeader("herd", b, args), Tasks: o.tasks, IDs: o.ids, LeaseDuration: toMS(o.leaseDuration)}
	for _, v := range variants {
		r, err := herdVariant(ctx, b, o, v)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", v, err)
		}
		rep.Runs = append(rep.Runs, *r)
	}
	var spread, lowest *herdRun
	for i := range rep.Runs {
		switch rep.Runs[i].Variant {
		case variantSpread:
			spread = &rep.Runs[i]
		case variantLowestFirst:
			lowest = &rep.Runs[i]
		}
	}
	note := ""
	if o.tasks != 256 || o.ids != 256 || o.latency != 20*time.Millisecond {
		note = "target is for K = N = 256 at 20 ms"
	}
	if spread != nil && lowest != nil && lowest.Requests.Total > 0 {
		rep.Ratio = float64(spread.Requests.Total) / float64(lowest.Requests.Total)
		rep.Targets = append(rep.Targets, target{What: "herd: spread / lowest-first total requests", Target: "<= 0.1",
			Measured: fmt.Sprintf("%.4f (%d / %d)", rep.Ratio, spread.Requests.Total, lowest.Requests.Total), Met: rep.Ratio <= 0.1, Note: note})
	}
	if spread != nil {
		p99 := time.Duration(float64(spread.TimeToID.P99) * float64(time.Millisecond))
		rep.Targets = append(rep.Targets,
			target{What: "herd: spread requests per task (mean)", Target: "<= 6",
				Measured: fmt.Sprintf("%.2f (max %d)", spread.PerTaskMean, spread.PerTaskMax), Met: spread.PerTaskMean <= 6, Note: note},
			target{What: "herd: spread p99 time-to-ID", Target: "<= 2s",
				Measured: p99.String(), Met: p99 <= 2*time.Second, Note: note})
	}
	return rep, nil
}

// herdVariant starts o.tasks tasks at once on a fresh prefix and waits until
// each holds an ID (or gave up).
func herdVariant(ctx context.Context, b *backend, o herdOpts, variant string) (*herdRun, error) {
	prefix := b.prefix("herd-" + variant)
	labelPrefix := "herd-" + variant + "/"
	order := nodeid.OrderSpread
	if strings.Contains(variant, "lowest") {
		order = nodeid.OrderLowestFirst
	}
	// Set the prefix up, straight to the server (not counted).
	switch variant {
	case variantLowestFirst:
		if err := precreateFree(ctx, b, prefix, o.ids); err != nil {
			return nil, err
		}
	case variantSpreadFilled, variantNodeidLowestFilled:
		st, err := b.directStore(ctx, prefix)
		if err != nil {
			return nil, err
		}
		cfg := o.providerConfig("bench-init", order)
		if _, err := nodeid.Init(ctx, st, cfg); err != nil {
			return nil, err
		}
	}
	type result struct {
		id    int
		took  time.Duration
		err   error
		claim *nodeid.Claim
	}
	ends := &endLog{ended: map[string]time.Duration{}} // "task i" -> when its claim ended
	tasks := make([]*task, o.tasks)
	providers := make([]*nodeid.Provider, o.tasks)
	for i := range tasks {
		name := fmt.Sprintf("%s%d", labelPrefix, i)
		t, err := b.newTask(ctx, name, prefix)
		if err != nil {
			return nil, err
		}
		tasks[i] = t
		if variant != variantLowestFirst {
			p, err := nodeid.New(t.store, o.providerConfig(fmt.Sprintf("bench-%d-%s-task-%d", o.seed, variant, i), order))
			if err != nil {
				return nil, err
			}
			providers[i] = p
		}
	}
	results := make([]result, o.tasks)
	start := make(chan struct{})
	var wg sync.WaitGroup
	var t0 time.Time
	for i := range tasks {
		wg.Go(func() {
			<-start
			actx, cancel := context.WithTimeout(ctx, o.acquireTimeout+10*time.Second)
			defer cancel()
			var r result
			if variant == variantLowestFirst {
				r.id, r.err = zeebeAcquire(actx, tasks[i].store, fmt.Sprintf("bench-%d-zeebe-task-%d", o.seed, i), o.ids)
			} else {
				r.claim, r.err = providers[i].Acquire(actx)
				if c := r.claim; c != nil {
					r.id = c.NodeID()
					ends.watch(fmt.Sprintf("task %d", i), c)
				}
			}
			r.took = time.Since(t0)
			tasks[i].setPhase("hold")
			results[i] = r
		})
	}
	t0 = time.Now()
	ends.t0 = t0
	close(start)
	wg.Wait()
	elapsed := time.Since(t0)
	endedAt := ends.snapshot()
	counts := b.meter.Counts().Where(func(k latproxy.Key) bool {
		return strings.HasPrefix(k.Label, labelPrefix) && strings.HasSuffix(k.Label, "/acquire")
	})
	// Release what the providers took (not counted: phase "hold").
	claims := make([]*nodeid.Claim, len(results))
	for i, r := range results {
		claims[i] = r.claim
	}
	closeAll(claims)

	run := &herdRun{Variant: variant, What: variantDoc[variant], Tasks: o.tasks, IDs: o.ids, Distinct: true,
		Requests: countOps(counts), ByStatus: counts.ByStatus(), Elapsed: toMS(elapsed)}
	var (
		took  []time.Duration
		holds []holding
	)
	for i, r := range results {
		if r.err != nil {
			if len(run.Errors) < 5 {
				run.Errors = append(run.Errors, fmt.Sprintf("task %d: %v", i, r.err))
			}
			continue
		}
		run.Acquired++
		took = append(took, r.took)
		h := holding{task: fmt.Sprintf("task %d", i), id: r.id, took: r.took}
		if r.claim != nil {
			h.version = r.claim.Version()
		}
		h.ended, h.hasEnded = endedAt[h.task]
		holds = append(holds, h)
		if h.hasEnded {
			run.Lost++
			if run.Lost <= 3 {
				run.Errors = append(run.Errors, fmt.Sprintf("task %d lost node %d %v after the start: %v", i, r.id, h.ended.Round(time.Millisecond), r.claim.Err()))
			}
		}
	}
	if errs := handoverErrors(holds); len(errs) > 0 {
		run.Distinct = false
		run.Errors = append(run.Errors, errs...)
	}
	run.TimeToID = summarize(took)
	run.perTask = perTaskOf(counts, o.tasks)
	return run, nil
}

// precreateFree creates free lease objects 0..n-1 under prefix, straight to the
// server, as Zeebe's repository initialize does before any acquire.
func precreateFree(ctx context.Context, b *backend, prefix string, n int) error {
	st, err := b.directStore(ctx, prefix)
	if err != nil {
		return err
	}
	return parallel(n, 32, func(id int) error {
		r := lease.Record{NodeID: id, WriteID: lease.NewWriteID()}
		body, err := r.Encode()
		if err != nil {
			return err
		}
		_, err = lease.CreateLive(ctx, st, lease.RecordKey(id), body, r.LiveFor())
		return err
	})
}

// zeebeLease is the lease the baseline writes: long enough that no baseline
// holder expires during a run, so it needs no renewals.
const zeebeLease = time.Hour

// zeebeAcquire is the Zeebe-style baseline (camunda/camunda
// zeebe/dynamic-node-id-provider, RepositoryNodeIdProvider.acquireInitialLease):
// visit node IDs 0, 1, 2, ... one at a time; GET each lease object; if it is
// free or expired, CAS it (If-Match on the ETag just read); on a lost CAS or a
// held lease, go to the next ID; after a full round, back off and start over.
// Unlike Zeebe it judges expiry on the store's clock (lease.StateOf), which
// changes nothing here (every object is free or freshly taken), and it skips
// Zeebe's initialize (N create attempts per task) because the objects exist.
func zeebeAcquire(ctx context.Context, st lease.Store, taskID string, n int) (int, error) {
	backoff := time.Second
	for i := 0; ; i++ {
		if i > 0 && i%n == 0 {
			t := time.NewTimer(backoff)
			select {
			case <-ctx.Done():
				t.Stop()
				return 0, ctx.Err()
			case <-t.C:
			}
			backoff = min(2*backoff, 10*time.Second)
		}
		if err := ctx.Err(); err != nil {
			return 0, err
		}
		id := i % n
		key := lease.RecordKey(id)
		body, meta, err := st.Get(ctx, key)
		if err != nil {
			continue
		}
		prev, err := lease.DecodeRecord(body, id)
		if err != nil || lease.StateOf(&prev, meta, lease.DefaultClockMargin) == lease.StateHeld {
			continue
		}
		now := time.Now()
		next := lease.Record{NodeID: id, Holder: taskID, Version: prev.Version + 1, LeaseMillis: zeebeLease.Milliseconds(),
			RenewedAt: now, ExpiresAt: now.Add(zeebeLease), WriteID: lease.NewWriteID(),
			ReservedUntilMs: max(prev.ReservedUntilMs, now.Add(zeebeLease).UnixMilli())}
		nb, err := next.Encode()
		if err != nil {
			return 0, err
		}
		_, err = lease.UpdateLive(ctx, st, key, nb, meta.ETag, next.LiveFor())
		switch {
		case err == nil:
			return id, nil
		case errors.Is(err, lease.ErrPreconditionFailed):
			continue
		}
	}
}

func printHerd(w io.Writer, r *herdReport) {
	printHeader(w, r.header)
	fmt.Fprintf(w, "K = %d tasks start at once on N = %d IDs, lease %v\n\n", r.Tasks, r.IDs,
		time.Duration(float64(r.LeaseDuration)*float64(time.Millisecond)))
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "order\tacquired\tdistinct\tlost\ttotal\tLIST\tGET\tPUT-create\tPUT-update\tother\tper task\tmax/task\tp50\tp99\tmax\telapsed\t")
	for _, x := range r.Runs {
		fmt.Fprintf(tw, "%s\t%d/%d\t%v\t%d\t%d\t%d\t%d\t%d\t%d\t%d\t%.2f\t%d\t%vms\t%vms\t%vms\t%vms\t\n",
			x.Variant, x.Acquired, x.Tasks, x.Distinct, x.Lost, x.Requests.Total, x.Requests.List, x.Requests.Get,
			x.Requests.Create, x.Requests.Update, x.Requests.Other, x.PerTaskMean, x.PerTaskMax,
			x.TimeToID.P50, x.TimeToID.P99, x.TimeToID.Max, x.Elapsed)
	}
	_ = tw.Flush()
	fmt.Fprintln(w)
	for _, x := range r.Runs {
		fmt.Fprintf(w, "%s: %s\n  by status: %s\n", x.Variant, x.What, statusMap(x.ByStatus))
		for _, e := range x.Errors {
			fmt.Fprintf(w, "  error: %s\n", e)
		}
	}
	if r.Ratio > 0 {
		fmt.Fprintf(w, "\ntotal requests, spread / lowest-first: %.4f (1/%.0f)\n", r.Ratio, 1/r.Ratio)
	}
	printTargets(w, r.Targets)
}

func statusMap(m map[string]int) string {
	c := latproxy.Counts{}
	for k, v := range m {
		var op string
		var status int
		if i := strings.LastIndexByte(k, ' '); i > 0 {
			op = k[:i]
			_, _ = fmt.Sscanf(k[i+1:], "%d", &status)
		}
		c[latproxy.Key{Op: latproxy.Op(op), Status: status}] = v
	}
	return statusString(c)
}
