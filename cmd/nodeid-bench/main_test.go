package main

import (
	"bytes"
	"context"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/nodeid/nodeid/cmd/nodeid-bench/internal/latproxy"
	"github.com/nodeid/nodeid/internal/testkit/etcdtest"
)

// The herd scenario in-process, small: every variant hands out distinct IDs,
// and the proxy's counts add up, by operation, by status and by task, and
// agree with what the scenario must have written.
func TestHerdSmoke(t *testing.T) { testHerdSmoke(t, "s3") }

// TestHerdSmokeEtcd is TestHerdSmoke on the pinned etcd server, counted by
// the store meter instead of the proxy.
func TestHerdSmokeEtcd(t *testing.T) {
	if etcdtest.Binary() == "" {
		if os.Getenv("CI") == "true" {
			t.Fatal("no etcd binary (CI=true): run test/etcd/install.sh")
		}
		t.Skip("no etcd binary: run test/etcd/install.sh")
	}
	testHerdSmoke(t, "etcd")
}

func testHerdSmoke(t *testing.T, store string) {
	ctx := context.Background()
	o := herdOpts{tasks: 16, leaseOpts: leaseOpts{ids: 16, leaseDuration: 15 * time.Second, acquireTimeout: time.Minute}}
	o.latency, o.seed, o.store = time.Millisecond, 7, store
	b, err := startBackend(ctx, o.common, false)
	if err != nil {
		t.Fatal(err)
	}
	defer b.close()
	rep, err := herd(ctx, b, o, []string{variantSpread, variantLowestFirst}, nil)
	if err != nil {
		t.Fatal(err)
	}
	all := b.meter.Counts()
	for _, r := range rep.Runs {
		if r.Acquired != o.tasks || !r.Distinct {
			t.Errorf("%s: %d of %d acquired, distinct %v: %v", r.Variant, r.Acquired, o.tasks, r.Distinct, r.Errors)
		}
		q := r.Requests
		if q.Total != q.List+q.Get+q.Create+q.Update+q.Other {
			t.Errorf("%s: total %d is not the sum by operation %+v", r.Variant, q.Total, q)
		}
		byStatus := 0
		for _, n := range r.ByStatus {
			byStatus += n
		}
		if byStatus != q.Total {
			t.Errorf("%s: %d requests by status, %d in all", r.Variant, byStatus, q.Total)
		}
		mine := all.Where(func(k latproxy.Key) bool {
			return strings.HasPrefix(k.Label, "herd-"+r.Variant+"/") && strings.HasSuffix(k.Label, "/acquire")
		})
		perTask := mine.ByLabel()
		sum := 0
		for _, n := range perTask {
			sum += n
		}
		if len(perTask) != o.tasks || sum != q.Total {
			t.Errorf("%s: %d tasks sent %d requests; the run reports %d", r.Variant, len(perTask), sum, q.Total)
		}
		if got := r.PerTaskMean * float64(o.tasks); int(got+0.5) != q.Total {
			t.Errorf("%s: per-task mean %.2f x %d tasks != total %d", r.Variant, r.PerTaskMean, o.tasks, q.Total)
		}
		switch r.Variant {
		case variantSpread:
			// Every ID and the manifest created exactly once; every task listed.
			if r.ByStatus["PUT-create 200"] != o.ids+1 || q.List < o.tasks || q.Update != 0 {
				t.Errorf("spread: %v; want %d successful creates, >= %d LISTs, no update", r.ByStatus, o.ids+1, o.tasks)
			}
		case variantLowestFirst:
			// One successful CAS per task, nothing listed or created.
			if r.ByStatus["PUT-update 200"] != o.tasks || q.List != 0 || q.Create != 0 || q.Get < o.tasks {
				t.Errorf("lowest-first: %v; want %d successful updates, >= %d GETs, no LIST or create", r.ByStatus, o.tasks, o.tasks)
			}
		}
	}
	if rep.Ratio <= 0 || len(rep.Targets) != 3 {
		t.Errorf("ratio %v, %d targets; want both", rep.Ratio, len(rep.Targets))
	}
}

func TestCommandLine(t *testing.T) {
	var out, errb bytes.Buffer
	for _, args := range [][]string{{"ids", "--batch", "0"}, {"ids", "--batch", "10001"}, {"ids", "--s3", "nope"}, {"ids", "--conns", "0"}} {
		if code := run(context.Background(), args, &out, &errb); code != 2 {
			t.Errorf("%v: exit %d, want 2", args, code)
		}
	}
	if code := run(context.Background(), []string{"nope"}, &out, &errb); code != 2 {
		t.Errorf("unknown command: exit %d, want 2", code)
	}
	if code := run(context.Background(), []string{"herd", "--orders", "sideways"}, &out, &errb); code != 2 {
		t.Errorf("unknown order: exit %d, want 2", code)
	}
}
