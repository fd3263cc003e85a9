package nodeid

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nodeid/nodeid/internal/testkit/fakeclock"
	"github.com/nodeid/nodeid/lease"
	"github.com/nodeid/nodeid/lease/storetest"
)

// newJudgedEnv is newEnv on a store that judges expiry itself (etcd's kind):
// no Date or Last-Modified, a liveness bound by each held write.
func newJudgedEnv(t *testing.T) *env {
	clk := fakeclock.New(start)
	mem := storetest.NewMemStore(storetest.WithClock(clk.Now), storetest.WithJudgedExpiry())
	return &env{t: t, clk: clk, mem: mem, store: storetest.NewFaultStore(mem)}
}

// TestJudgedStoreCutOffHolder: on a store that judges expiry itself, a holder
// cut off from it fences at its renew deadline; no one takes its ID while it
// is valid, nor before the liveness of its last write (its 3 s lease) ran out
// on the store's clock; then a task takes it expired, with a higher version
// and the holder's reservation as its floor.
func TestJudgedStoreCutOffHolder(t *testing.T) {
	e := newJudgedEnv(t)
	cut := storetest.NewFaultStore(e.store)
	hcfg := e.config("holder")
	hcfg.ClusterSize = 1
	holder := e.acquire(e.providerOn(cut, hcfg))
	if _, m, err := e.mem.Get(context.Background(), lease.RecordKey(holder.NodeID())); err != nil || m.Liveness != lease.LivenessLive {
		t.Fatalf("the holder's record reads liveness %v (err %v), want live", m.Liveness, err)
	}
	cut.SetInjector(func(op storetest.Op, key string) storetest.Fault {
		return storetest.Fault{Err: storetest.Unknown(op, key)}
	})
	other := e.config("other")
	other.ClusterSize = 1
	var taken *Claim
	for taken == nil {
		e.advance(100*time.Millisecond, holder)
		c, err := e.provider(other).Acquire(context.Background())
		switch {
		case err == nil && holder.Valid():
			t.Fatalf("another task took node %d while its holder was still valid", holder.NodeID())
		case err == nil:
			taken = c
		case !errors.Is(err, ErrClusterFull):
			t.Fatalf("Acquire: %v", err)
		}
	}
	defer taken.Close(context.Background())
	if holder.Valid() || (!errors.Is(holder.Err(), ErrLeaseLost) && !errors.Is(holder.Check(), ErrJeopardy)) {
		t.Fatalf("holder valid %v, Check %v; want fenced: in jeopardy or lost", holder.Valid(), holder.Check())
	}
	if took := e.clk.Now().Sub(start); took < 3*time.Second {
		t.Fatalf("taken over %v after the holder's write, before its 3 s liveness ran out", took)
	}
	if !taken.TookOverExpired() || taken.Version() != holder.Version()+1 || taken.Floor() != start.UnixMilli()+3000 {
		t.Fatalf("successor: expired %v, version %d, floor %d; want true, %d, %d",
			taken.TookOverExpired(), taken.Version(), taken.Floor(), holder.Version()+1, start.UnixMilli()+3000)
	}
}

// TestJudgedStoreReleaseAndBootstrapWindow: on a store that judges expiry
// itself, a released ID is taken at once; the manifest's liveness is the
// bootstrap window, so a bootstrap after it fills the cluster.
func TestJudgedStoreReleaseAndBootstrapWindow(t *testing.T) {
	e := newJudgedEnv(t)
	cfg := e.config("a")
	p := e.provider(cfg)
	c := e.acquire(p)
	if err := c.Close(context.Background()); err != nil {
		t.Fatalf("Close: %v", err)
	}
	if _, m, _ := e.mem.Get(context.Background(), lease.RecordKey(c.NodeID())); m.Liveness != lease.LivenessExpired {
		t.Fatalf("a released record reads liveness %v, want expired (a free write binds none)", m.Liveness)
	}
	b := e.acquire(e.provider(e.config("b")))
	if b.TookOverExpired() {
		t.Errorf("took a released lease as expired")
	}
	v, err := p.bootstrap(context.Background())
	if err != nil || v.manifest.Filled {
		t.Fatalf("bootstrap within the window: filled %v, err %v; want not filled", v != nil && v.manifest.Filled, err)
	}
	e.advance(cfg.BootstrapWindow+time.Second, b)
	if v, err = p.bootstrap(context.Background()); err != nil || !v.manifest.Filled {
		t.Fatalf("bootstrap after the window: filled %v, err %v; want filled", v != nil && v.manifest.Filled, err)
	}
}

// ttlDropper forwards lease.LiveWriter, but once drop is set it binds no
// liveness (ttl 0): a store chain that loses the liveness after the take.
type ttlDropper struct {
	lease.Store
	drop atomic.Bool
}

func (d *ttlDropper) ttl(ttl time.Duration) time.Duration {
	if d.drop.Load() {
		return 0
	}
	return ttl
}

func (d *ttlDropper) CreateLive(ctx context.Context, key string, body []byte, ttl time.Duration) (lease.Meta, error) {
	return lease.CreateLive(ctx, d.Store, key, body, d.ttl(ttl))
}

func (d *ttlDropper) UpdateLive(ctx context.Context, key string, body []byte, etag string, ttl time.Duration) (lease.Meta, error) {
	return lease.UpdateLive(ctx, d.Store, key, body, etag, d.ttl(ttl))
}

// TestJudgedStoreRenewalWithoutLivenessIsALoss: a renewal that the store
// applies without binding its liveness (the record reads expired at once,
// and another task may take it) ends the claim as lost at once, not after
// retries until the renew deadline.
func TestJudgedStoreRenewalWithoutLivenessIsALoss(t *testing.T) {
	e := newJudgedEnv(t)
	d := &ttlDropper{Store: e.store}
	cfg := e.config("holder")
	c := e.acquire(e.providerOn(d, cfg))
	d.drop.Store(true)
	e.advance(cfg.RenewInterval, c)
	if !isDone(c) || !errors.Is(c.Err(), ErrLeaseLost) || !strings.Contains(c.Err().Error(), "liveness") {
		t.Fatalf("after a renewal without liveness: done %v, err %v; want lost at once, naming the liveness", isDone(c), c.Err())
	}
}
