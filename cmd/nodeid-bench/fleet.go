package main

import (
	"cmp"
	"context"
	"flag"
	"fmt"
	"maps"
	"slices"
	"sync"
	"time"

	"github.com/nodeid/nodeid/cmd/nodeid-bench/internal/latproxy"
	"github.com/nodeid/nodeid/nodeid"
)

// leaseOpts are the cluster and lease flags of the scenarios that run a fleet
// of Providers in one process (herd, rolling).
type leaseOpts struct {
	ids            int
	leaseDuration  time.Duration
	renewInterval  time.Duration
	acquireTimeout time.Duration
}

// addLeaseFlags registers the leaseOpts flags on fs.
func addLeaseFlags(fs *flag.FlagSet, o *leaseOpts) {
	fs.IntVar(&o.ids, "ids", 256, "cluster size (N)")
	fs.DurationVar(&o.leaseDuration, "lease-duration", 15*time.Second, "lease duration of every task")
	fs.DurationVar(&o.renewInterval, "renew-interval", 0, "renew interval (0: lease/3)")
	fs.DurationVar(&o.acquireTimeout, "acquire-timeout", 2*time.Minute, "give up on a task after this long")
}

// providerConfig is the configuration of one task's Provider.
func (o leaseOpts) providerConfig(name string, order nodeid.Order) nodeid.Config {
	cfg := nodeid.DefaultConfig()
	cfg.TaskID, cfg.ClusterSize, cfg.Order = name, o.ids, order
	cfg.LeaseDuration = o.leaseDuration
	cfg.RenewInterval = o.renewInterval
	if cfg.RenewInterval == 0 {
		cfg.RenewInterval = o.leaseDuration / 3
	}
	cfg.RenewDeadline = o.leaseDuration * 2 / 3
	cfg.AcquireTimeout = o.acquireTimeout
	return cfg
}

// holding is one task's hold of a node ID, its times since the start of a run.
type holding struct {
	task    string
	id      int
	version int64 // 0 when unknown (the baseline writes no claim)
	took    time.Duration
	// ended is when the claim stopped issuing IDs (lost, or fenced by Close);
	// hasEnded is false while it is held.
	ended    time.Duration
	hasEnded bool
}

// handoverErrors checks that no two holdings of one node ID overlapped: taken
// in turn, each ended before the next took the ID, which the next took with a
// higher version. It describes each violation.
func handoverErrors(hs []holding) []string {
	byID := map[int][]holding{}
	for _, h := range hs {
		byID[h.id] = append(byID[h.id], h)
	}
	var errs []string
	for _, id := range slices.Sorted(func(yield func(int) bool) {
		for id := range byID {
			if !yield(id) {
				return
			}
		}
	}) {
		ts := byID[id]
		slices.SortStableFunc(ts, func(a, b holding) int { return cmp.Compare(a.took, b.took) })
		for k := 1; k < len(ts); k++ {
			prev, next := ts[k-1], ts[k]
			if !prev.hasEnded || prev.ended > next.took || (prev.version > 0 && next.version > 0 && next.version <= prev.version) {
				errs = append(errs, fmt.Sprintf("node ID %d held by %s and %s at once", id, prev.task, next.task))
			}
		}
	}
	return errs
}

// perTask summarises the requests of a fleet's tasks: the mean over tasks
// (tasks that sent nothing count as 0), the worst task, and a histogram
// (requests -> tasks that made that many).
type perTask struct {
	PerTaskMean float64 `json:"perTaskMean"`
	PerTaskMax  int     `json:"perTaskMax"`
	// PerTaskHistogram maps a number of requests to the tasks that made that many.
	PerTaskHistogram map[int]int `json:"perTaskHistogram"`
}

// perTaskOf summarises counts (already restricted to the fleet's acquire
// phase) by label over tasks tasks.
func perTaskOf(counts latproxy.Counts, tasks int) perTask {
	s := perTask{PerTaskHistogram: map[int]int{}}
	total := 0
	for _, n := range counts.ByLabel() {
		s.PerTaskMax = max(s.PerTaskMax, n)
		s.PerTaskHistogram[n]++
		total += n
	}
	if tasks > 0 {
		s.PerTaskMean = float64(total) / float64(tasks)
	}
	return s
}

// closeAll releases the claims that are not nil, 64 at a time.
func closeAll(claims []*nodeid.Claim) {
	_ = parallel(len(claims), 64, func(i int) error {
		if c := claims[i]; c != nil {
			cctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			_ = c.Close(cctx)
		}
		return nil
	})
}

// endLog records when watched claims ended (Done), since t0.
type endLog struct {
	t0    time.Time
	mu    sync.Mutex
	ended map[string]time.Duration
}

// watch records when c ends, under name.
func (e *endLog) watch(name string, c *nodeid.Claim) {
	go func() {
		<-c.Done()
		e.mu.Lock()
		defer e.mu.Unlock()
		e.ended[name] = time.Since(e.t0)
	}()
}

// snapshot returns the ends recorded so far.
func (e *endLog) snapshot() map[string]time.Duration {
	e.mu.Lock()
	defer e.mu.Unlock()
	return maps.Clone(e.ended)
}
