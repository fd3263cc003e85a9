package main

import (
	"bytes"
	"context"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/nodeid/nodeid/cmd/nodeid-bench/internal/latproxy"
)

// The rolling scenario in-process, small: in each deployment every old task
// is told to stop and releases its ID, every new task takes one, no ID is
// held twice at once, ECS's bounds hold, every released ID is re-taken, and
// the proxy's counts add up by operation, by status and by task.
func TestRollingSmoke(t *testing.T) {
	ctx := context.Background()
	const n = 8
	o := rollingOpts{leaseOpts: leaseOpts{ids: n, leaseDuration: 15 * time.Second, acquireTimeout: time.Minute},
		minHealthy: -1, stopDelay: 200 * time.Millisecond}
	o.latency, o.seed = time.Millisecond, 3
	b, err := startBackend(ctx, o.common, false)
	if err != nil {
		t.Fatal(err)
	}
	defer b.close()
	rep, err := rolling(ctx, b, o, []int{100, 50}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Runs) != 2 || len(rep.Targets) != 4 {
		t.Fatalf("%d runs, %d targets; want 2 and 4", len(rep.Runs), len(rep.Targets))
	}
	all := b.meter.Counts()
	for _, r := range rep.Runs {
		if r.Acquired != n || r.Released != n || !r.Distinct || r.Lost != 0 || len(r.Errors) != 0 {
			t.Errorf("batch %d%%: %d of %d acquired, %d released, distinct %v, lost %d: %v", r.Batch, r.Acquired, n, r.Released, r.Distinct, r.Lost, r.Errors)
		}
		wantMax, wantMin := n+(r.Batch*n+99)/100, (100-r.Batch)*n/100
		if r.MaxRunning != wantMax || r.MinHealthyTasks != wantMin || r.PeakRunning > r.MaxRunning || r.LowestHealthy < r.MinHealthyTasks ||
			r.PeakRunning <= n {
			t.Errorf("batch %d%%: running at most %d (peak %d), healthy at least %d (low %d); want %d and %d, and new tasks started beside the old",
				r.Batch, r.MaxRunning, r.PeakRunning, r.MinHealthyTasks, r.LowestHealthy, wantMax, wantMin)
		}
		q := r.Requests
		if q.Total != q.List+q.Get+q.Create+q.Update+q.Other {
			t.Errorf("batch %d%%: total %d is not the sum by operation %+v", r.Batch, q.Total, q)
		}
		byStatus := 0
		for _, k := range r.ByStatus {
			byStatus += k
		}
		// Every new task took a released record by CAS: none created, each
		// take one successful update, after at least a LIST and a GET.
		if byStatus != q.Total || r.ByStatus["PUT-update 200"] != n || q.Create != 0 || q.List < n || q.Get < n {
			t.Errorf("batch %d%%: %v (%d by status, %d in all); want %d successful updates, no create, >= %d LISTs and GETs",
				r.Batch, r.ByStatus, byStatus, q.Total, n, n)
		}
		perTask := all.Where(func(k latproxy.Key) bool {
			return strings.HasPrefix(k.Label, "rolling-"+strconv.Itoa(r.Batch)+"/new-") && strings.HasSuffix(k.Label, "/acquire")
		}).ByLabel()
		sum := 0
		for _, k := range perTask {
			sum += k
		}
		if len(perTask) != n || sum != q.Total || int(r.PerTaskMean*n+0.5) != q.Total || r.PerTaskMax < int(r.PerTaskMean) {
			t.Errorf("batch %d%%: %d tasks sent %d requests, mean %.2f, max %d; the run reports %d", r.Batch, len(perTask), sum, r.PerTaskMean, r.PerTaskMax, q.Total)
		}
		if r.TimeToID.Max <= 0 || r.ReleaseToRetake.Max < r.ReleaseToRetake.P50 || r.ReleaseToRetake.P50 < 0 {
			t.Errorf("batch %d%%: time-to-ID %+v, release to re-take %+v", r.Batch, r.TimeToID, r.ReleaseToRetake)
		}
	}
}

// handoverErrors finds two holders of one ID at once, a take before the
// previous holder ended, and a take that did not raise the version.
func TestHandoverErrors(t *testing.T) {
	ok := []holding{
		{task: "a", id: 1, version: 1, took: 0, ended: 5, hasEnded: true},
		{task: "b", id: 1, version: 2, took: 6},
		{task: "c", id: 2, version: 4, took: 1},
	}
	if errs := handoverErrors(ok); len(errs) != 0 {
		t.Fatalf("clean handovers reported: %v", errs)
	}
	for name, bad := range map[string][]holding{
		"both held":       {{task: "a", id: 1, version: 1}, {task: "b", id: 1, version: 2, took: 6}},
		"taken too early": {{task: "a", id: 1, version: 1, ended: 7, hasEnded: true}, {task: "b", id: 1, version: 2, took: 6}},
		"same version":    {{task: "a", id: 1, version: 2, ended: 5, hasEnded: true}, {task: "b", id: 1, version: 2, took: 6}},
	} {
		errs := handoverErrors(slices.Clone(bad))
		if len(errs) != 1 || !strings.Contains(errs[0], "node ID 1 held by a and b") {
			t.Errorf("%s: %v; want one error naming a and b", name, errs)
		}
	}
}

func TestRollingCommandLine(t *testing.T) {
	var out, errb bytes.Buffer
	for _, args := range [][]string{
		{"rolling", "--batch", "0%"}, {"rolling", "--batch", "101%"}, {"rolling", "--batch", "half"},
		{"rolling", "--min-healthy", "100"}, {"rolling", "--ids", "0"}, {"rolling", "--stop-delay", "-1s"},
	} {
		if code := run(context.Background(), args, &out, &errb); code != 2 {
			t.Errorf("%v: exit %d, want 2", args, code)
		}
	}
	if got, err := parseBatches("100%, 50"); err != nil || !slices.Equal(got, []int{100, 50}) {
		t.Errorf("parseBatches: %v, %v; want [100 50]", got, err)
	}
}
