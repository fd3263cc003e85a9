package nodeid

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/nodeid/nodeid/internal/testkit/fakeclock"
	"github.com/nodeid/nodeid/lease"
	"github.com/nodeid/nodeid/lease/storetest"
)

// env is one fake clock shared by an in-memory store (the store's clock) and
// the providers under test.
type env struct {
	t     *testing.T
	clk   *fakeclock.Clock
	mem   *storetest.MemStore
	store *storetest.FaultStore
}

var start = time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC)

func newEnv(t *testing.T) *env {
	clk := fakeclock.New(start)
	mem := storetest.NewMemStore(storetest.WithClock(clk.Now))
	return &env{t: t, clk: clk, mem: mem, store: storetest.NewFaultStore(mem)}
}

// config returns a test configuration: 3 s lease, 1 s renew interval, 2 s renew
// deadline, 4 IDs, no acquire retries.
func (e *env) config(task string) Config {
	c := DefaultLocalConfig()
	c.TaskID, c.ClusterSize, c.Clock, c.AcquireTimeout = task, 4, e.clk, 0
	return c
}

func (e *env) provider(cfg Config) *Provider {
	return e.providerOn(e.store, cfg)
}

func (e *env) providerOn(s lease.Store, cfg Config) *Provider {
	e.t.Helper()
	p, err := New(s, cfg)
	if err != nil {
		e.t.Fatalf("New: %v", err)
	}
	return p
}

func (e *env) acquire(p *Provider) *Claim {
	e.t.Helper()
	c, err := p.Acquire(context.Background())
	if err != nil {
		e.t.Fatalf("Acquire(%s): %v", p.cfg.TaskID, err)
	}
	e.t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		_ = c.Close(ctx)
	})
	return c
}

// settle waits until every renewal loop of claims that is still running
// sleeps on the fake clock, with no request in flight (loops of ended claims
// exit).
func (e *env) settle(claims ...*Claim) {
	e.t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		running := 0
		for _, c := range claims {
			select {
			case <-c.loopDone:
			default:
				running++
			}
		}
		if e.clk.Sleepers() >= running {
			return
		}
		if time.Now().After(deadline) {
			e.t.Fatalf("waiting for %d renewal loops to sleep (%d sleep)", running, e.clk.Sleepers())
		}
		time.Sleep(time.Millisecond)
	}
}

// advance moves the clock by d, stopping at each wake-up to let the renewal
// loops of claims run.
func (e *env) advance(d time.Duration, claims ...*Claim) {
	e.t.Helper()
	target := e.clk.Now().Add(d)
	for {
		e.settle(claims...)
		next, ok := e.clk.NextWake()
		if !ok || next.After(target) {
			e.clk.Advance(target.Sub(e.clk.Now()))
			e.settle(claims...)
			return
		}
		e.clk.Advance(next.Sub(e.clk.Now()))
	}
}

func (e *env) record(id int) (lease.Record, lease.Meta) {
	e.t.Helper()
	body, meta, err := e.mem.Get(context.Background(), lease.RecordKey(id))
	if err != nil {
		e.t.Fatalf("Get %d: %v", id, err)
	}
	r, err := lease.DecodeRecord(body, id)
	if err != nil {
		e.t.Fatalf("decode %d: %v", id, err)
	}
	return r, meta
}

// advanceUntilDone advances the clock, wake-up by wake-up, until c is done
// (lost or closed), for at most limit of fake time.
func (e *env) advanceUntilDone(c *Claim, limit time.Duration) {
	e.t.Helper()
	end := e.clk.Now().Add(limit)
	for !isDone(c) {
		if !e.clk.Now().Before(end) {
			e.t.Fatalf("claim %d not done after %v of fake time (valid %v, jeopardy %v)", c.NodeID(), limit, c.Valid(), c.Status().Jeopardy)
		}
		e.advance(100*time.Millisecond, c)
	}
}

func waitDone(t *testing.T, c *Claim) {
	t.Helper()
	select {
	case <-c.Done():
	case <-time.After(5 * time.Second):
		t.Fatalf("claim %d not done", c.NodeID())
	}
}

func isDone(c *Claim) bool {
	select {
	case <-c.Done():
		return true
	default:
		return false
	}
}

func taskName(i int) string { return fmt.Sprintf("task-%02d", i) }

func faultErr(err error) storetest.Fault { return storetest.Fault{Err: err} }

// fill runs a bootstrap past the bootstrap window, which creates every lease
// object and marks the manifest filled.
func (e *env) fill(cfg Config) {
	e.t.Helper()
	cfg.TaskID = "filler"
	v, err := e.provider(cfg).bootstrap(context.Background())
	if err != nil || !v.manifest.Filled {
		e.t.Fatalf("fill: %v, filled %v", err, v != nil && v.manifest.Filled)
	}
}

// asleep waits until n goroutines sleep on the fake clock.
func (e *env) asleep(n int) {
	e.t.Helper()
	for deadline := time.Now().Add(5 * time.Second); e.clk.Sleepers() < n; time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			e.t.Fatalf("%d goroutines asleep on the clock, want %d", e.clk.Sleepers(), n)
		}
	}
}

// step advances the fake clock to its next wake-up and waits until n
// goroutines sleep on it again.
func (e *env) step(n int) {
	e.t.Helper()
	next, ok := e.clk.NextWake()
	if !ok {
		e.t.Fatal("nothing sleeps on the clock")
	}
	e.clk.Advance(next.Sub(e.clk.Now()))
	e.asleep(n)
}

// stepUntil advances the fake clock, wake-up by wake-up, each time n
// goroutines sleep on it, until ch delivers Acquire's result.
func (e *env) stepUntil(ch <-chan acquireResult, n int) acquireResult {
	e.t.Helper()
	return e.stepUntilBy(ch, func() int { return n })
}

// stepUntilBy is stepUntil with the number of sleepers to wait for before
// each step given by n, asked before each step.
func (e *env) stepUntilBy(ch <-chan acquireResult, n func() int) acquireResult {
	e.t.Helper()
	for {
		for deadline := time.Now().Add(5 * time.Second); e.clk.Sleepers() < n(); time.Sleep(time.Millisecond) {
			select {
			case r := <-ch:
				return r
			default:
			}
			if time.Now().After(deadline) {
				e.t.Fatalf("%d goroutines asleep on the clock, want %d", e.clk.Sleepers(), n())
			}
		}
		select {
		case r := <-ch:
			return r
		default:
		}
		next, ok := e.clk.NextWake()
		if !ok {
			e.t.Fatal("nothing sleeps on the clock")
		}
		e.clk.Advance(next.Sub(e.clk.Now()))
	}
}
