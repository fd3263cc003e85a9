package etcdstore_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/nodeid/nodeid/election"
	"github.com/nodeid/nodeid/internal/testkit/etcdtest"
	"github.com/nodeid/nodeid/lease"
	"github.com/nodeid/nodeid/nodeid"
)

// instrumented is the wrapper a user writes to log or meter store calls: it
// embeds lease.Store, so it has Create and Update but not CreateLive and
// UpdateLive (embedding lease.Store hides lease.LiveWriter).
type instrumented struct{ lease.Store }

// TestWrappedStoreFailsClosed: through such a wrapper, every held record on
// etcd would read expired at once, and a second task would take a node ID (or
// an election) while its first holder is valid. The probe refuses the wrapper
// at start, and a take through it fails with ErrLivenessUnbound, so no claim
// ever rests on an unbound liveness. Before the fix a second task took the
// ID and both were valid.
func TestWrappedStoreFailsClosed(t *testing.T) {
	srv := etcdtest.Start(t)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	cfg := func(task string) nodeid.Config {
		c := nodeid.DefaultLocalConfig()
		c.TaskID, c.ClusterSize, c.AcquireTimeout = task, 1, 2*time.Second
		return c
	}
	t.Run("probe", func(t *testing.T) {
		if _, err := lease.Probe(ctx, instrumented{open(t, srv, "wrapped-probe/")}); !errors.Is(err, lease.ErrLivenessUnbound) {
			t.Fatalf("Probe through the wrapper = %v, want ErrLivenessUnbound", err)
		}
	})
	t.Run("node ID", func(t *testing.T) {
		w := instrumented{open(t, srv, "wrapped/")}
		p, err := nodeid.New(w, cfg("a"))
		if err != nil {
			t.Fatal(err)
		}
		if c, err := p.Acquire(ctx); !errors.Is(err, lease.ErrLivenessUnbound) {
			if c != nil {
				_ = c.Close(ctx)
			}
			t.Fatalf("Acquire through the wrapper = %v, want ErrLivenessUnbound", err)
		}
	})
	t.Run("election", func(t *testing.T) {
		e, err := election.New(instrumented{open(t, srv, "wrapped-e/")}, cfg("a"))
		if err != nil {
			t.Fatal(err)
		}
		if l, err := e.Campaign(ctx, "jobs", ""); !errors.Is(err, lease.ErrLivenessUnbound) {
			if l != nil {
				_ = l.Resign(ctx)
			}
			t.Fatalf("Campaign through the wrapper = %v, want ErrLivenessUnbound", err)
		}
	})
}
