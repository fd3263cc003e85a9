// Package electiontest is the election suite every conformance-tested store
// runs: mem and gofakes3 in package election, MinIO and versitygw in
// test/minio.
package electiontest

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/nodeid/nodeid/election"
	"github.com/nodeid/nodeid/lease"
	"github.com/nodeid/nodeid/lease/storetest"
	"github.com/nodeid/nodeid/nodeid"
)

// Run runs the suite; open returns an empty store (a fresh prefix) for each
// subtest.
func Run(t *testing.T, open func(t *testing.T) lease.Store) {
	t.Run("ResignHandsOverWithAHigherTerm", func(t *testing.T) { resignHandsOver(t, open(t)) })
	t.Run("DeadLeaderIsReplacedAfterExpiry", func(t *testing.T) { deadLeaderReplaced(t, open(t)) })
	t.Run("LockTokenAndListing", func(t *testing.T) { lockTokenAndListing(t, open(t)) })
}

// FastConfig is a 2 s lease, so that expiry takes about 4 s of real time.
func FastConfig(task string) nodeid.Config {
	c := nodeid.DefaultLocalConfig()
	c.TaskID, c.LeaseDuration = task, 2*time.Second
	c.RenewInterval, c.RenewDeadline, c.SafetyMargin, c.StoreTimeout = 0, 0, 0, 0
	c.AcquireBackoff = 50 * time.Millisecond
	return c
}

func elections(t *testing.T, store lease.Store, task string) *election.Elections {
	t.Helper()
	e, err := election.New(store, FastConfig(task))
	if err != nil {
		t.Fatal(err)
	}
	return e
}

type result struct {
	l   *election.Leadership
	err error
}

func campaignAsync(ctx context.Context, e *election.Elections, name, value string) <-chan result {
	ch := make(chan result, 1)
	go func() {
		l, err := e.Campaign(ctx, name, value)
		ch <- result{l, err}
	}()
	return ch
}

func resignHandsOver(t *testing.T, store lease.Store) {
	{
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		a, b := elections(t, store, "task-a"), elections(t, store, "task-b")
		la, err := a.Campaign(ctx, "jobs", "http://a:8080")
		if err != nil {
			t.Fatal(err)
		}
		if !la.Valid() || la.Term() != 1 || la.Value() != "http://a:8080" {
			t.Fatalf("first leader: valid %v term %d value %q, want true 1 http://a:8080", la.Valid(), la.Term(), la.Value())
		}
		lctx := la.Context()
		if lctx.Err() != nil {
			t.Fatalf("the leader's context ended while it leads: %v", context.Cause(lctx))
		}
		got := campaignAsync(ctx, b, "jobs", "http://b:8080")
		info, err := b.Leader(ctx, "jobs")
		if err != nil || info.Leader != "task-a" || info.Value != "http://a:8080" || !info.Live || info.Term != 1 {
			t.Fatalf("Leader = %+v, %v; want task-a, http://a:8080, live, term 1", info, err)
		}
		select {
		case r := <-got:
			t.Fatalf("second candidate elected while the first leads: %+v", r)
		default:
		}
		if err := la.Resign(ctx); err != nil {
			t.Fatal(err)
		}
		if la.Valid() || !errors.Is(la.Err(), nodeid.ErrClosed) {
			t.Fatalf("after Resign: valid %v err %v", la.Valid(), la.Err())
		}
		if lctx.Err() == nil || !errors.Is(context.Cause(lctx), nodeid.ErrClosed) {
			t.Fatalf("after Resign: the leader's context ended %v, cause %v; want ended with ErrClosed", lctx.Err() != nil, context.Cause(lctx))
		}
		if err := la.Resign(ctx); err != nil {
			t.Fatalf("second Resign: %v", err)
		}
		r := <-got
		if r.err != nil {
			t.Fatal(r.err)
		}
		defer r.l.Resign(ctx)
		if r.l.Term() != 2 || !r.l.Valid() {
			t.Fatalf("successor: term %d valid %v, want 2 true", r.l.Term(), r.l.Valid())
		}
		info, err = a.Leader(ctx, "jobs")
		if err != nil || info.Leader != "task-b" || info.Value != "http://b:8080" || !info.Live || info.Term != 2 {
			t.Fatalf("Leader = %+v, %v; want task-b, http://b:8080, live, term 2", info, err)
		}
	}
}

// A leader that stops renewing (a killed process) is replaced once its lease
// is expired on the store's clock, and it fenced itself before.
func deadLeaderReplaced(t *testing.T, store lease.Store) {
	{
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		fs := storetest.NewFaultStore(store)
		a, b := elections(t, fs, "task-a"), elections(t, store, "task-b")
		la, err := a.Campaign(ctx, "jobs", "")
		if err != nil {
			t.Fatal(err)
		}
		lctx := la.Context()
		fs.Kill(nil)
		lb, err := b.Campaign(ctx, "jobs", "")
		if err != nil {
			t.Fatal(err)
		}
		defer lb.Resign(ctx)
		if la.Valid() {
			t.Fatal("a successor was elected while the deposed leader is still valid")
		}
		select {
		case <-la.Done():
		case <-ctx.Done():
			t.Fatal("deposed leader's Done never closed")
		}
		if !errors.Is(la.Err(), nodeid.ErrLeaseLost) {
			t.Fatalf("deposed leader's Err = %v, want ErrLeaseLost", la.Err())
		}
		select {
		case <-lctx.Done():
		case <-ctx.Done():
			t.Fatal("deposed leader's context never ended")
		}
		if cause := context.Cause(lctx); !errors.Is(cause, nodeid.ErrLeaseLost) {
			t.Fatalf("deposed leader's context ended with %v, want ErrLeaseLost", cause)
		}
		if lb.Term() <= la.Term() {
			t.Fatalf("successor term %d, deposed %d: want higher", lb.Term(), la.Term())
		}
	}
}

func lockTokenAndListing(t *testing.T, store lease.Store) {
	{
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		e := elections(t, store, "task-a")
		m := e.NewMutex("db-migrate")
		if m.Token() != 0 {
			t.Fatalf("Token before Lock = %d", m.Token())
		}
		for want := int64(1); want <= 3; want++ {
			if _, err := m.Lock(ctx); err != nil {
				t.Fatal(err)
			}
			if m.Token() != want {
				t.Fatalf("Token = %d, want %d", m.Token(), want)
			}
			if err := m.Unlock(ctx); err != nil {
				t.Fatal(err)
			}
		}
		l, err := e.Campaign(ctx, "jobs", "")
		if err != nil {
			t.Fatal(err)
		}
		defer l.Resign(ctx)
		// The node-ID cluster under the same prefix is untouched by elections.
		cfg := FastConfig("task-n")
		cfg.ClusterSize = 2
		p, err := nodeid.New(store, cfg)
		if err != nil {
			t.Fatal(err)
		}
		c, err := p.Acquire(ctx)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close(ctx)
		infos, err := e.All(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if len(infos) != 2 || infos[0].Name != "db-migrate" || infos[0].Live || infos[0].Term != 3 ||
			infos[1].Name != "jobs" || !infos[1].Live || infos[1].Leader != "task-a" {
			t.Fatalf("All = %+v", infos)
		}
	}
}
