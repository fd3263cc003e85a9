package nodeid

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nodeid/nodeid/lease"
	"github.com/nodeid/nodeid/lease/storetest"
)

// acquireAsync runs Acquire in the background and returns its result channel.
func acquireAsync(p *Provider) <-chan acquireResult {
	ch := make(chan acquireResult, 1)
	go func() {
		c, err := p.Acquire(context.Background())
		ch <- acquireResult{c, err}
	}()
	return ch
}

type acquireResult struct {
	c   *Claim
	err error
}

func TestAcquireRetriesUntilTimeoutThenClusterFull(t *testing.T) {
	e := newEnv(t)
	cfg := e.config("a")
	cfg.ClusterSize = 1
	holder := e.acquire(e.provider(cfg))
	cfg.TaskID, cfg.AcquireTimeout = "b", 4*time.Second
	ch := acquireAsync(e.provider(cfg))
	rounds := 0
	for {
		select {
		case r := <-ch:
			if !errors.Is(r.err, ErrClusterFull) {
				t.Fatalf("Acquire = %v, want ErrClusterFull", r.err)
			}
			if hint := "every one of the cluster's 1 node IDs (0..0) is held by a live task: run fewer tasks, or grow the cluster (nodeidctl resize --cluster-size M)"; !strings.Contains(r.err.Error(), hint) {
				t.Errorf("Acquire = %v, want it to say what to do: %q", r.err, hint)
			}
			if waited := e.clk.Now().Sub(start); waited > 4*time.Second || rounds < 2 {
				t.Fatalf("gave up after %v and %d backoffs, want several rounds within the 4 s timeout", waited, rounds)
			}
			return
		default:
		}
		// Two sleepers: the holder's renewal loop and the acquirer's backoff.
		if e.clk.Sleepers() < 2 {
			time.Sleep(time.Millisecond)
			continue
		}
		rounds++
		e.advance(200*time.Millisecond, holder)
	}
}

func TestAcquireWaitsForAReleasedID(t *testing.T) {
	e := newEnv(t)
	cfg := e.config("a")
	cfg.ClusterSize = 1
	holder := e.acquire(e.provider(cfg))
	cfg.TaskID, cfg.AcquireTimeout = "b", time.Minute
	ch := acquireAsync(e.provider(cfg))
	e.settle(holder)
	for e.clk.Sleepers() < 2 {
		time.Sleep(time.Millisecond)
	}
	if err := holder.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	for {
		select {
		case r := <-ch:
			if r.err != nil || r.c.Version() != 2 {
				t.Fatalf("Acquire after release: %v (version %v)", r.err, r.c)
			}
			if d := e.clk.Now().Sub(start); d > 5*time.Second {
				t.Fatalf("took %v to notice the release, want within the capped backoff", d)
			}
			_ = r.c.Close(context.Background())
			return
		default:
			if e.clk.Sleepers() >= 1 {
				e.clk.Advance(100 * time.Millisecond)
			}
			time.Sleep(time.Millisecond)
		}
	}
}

type staticPeersFunc func() map[int]int64

func (f staticPeersFunc) KnownNodes() map[int]int64 { return f() }

func TestKnownLiveIDsAreTriedLast(t *testing.T) {
	e := newEnv(t)
	cfg := e.config("peer-task")
	cfg.ClusterSize = 8
	p := e.provider(cfg)
	order := p.visitOrder(8)
	first := order[0]
	live := map[int]int64{first: 3, order[1]: 1}
	cfg.Peers = staticPeersFunc(func() map[int]int64 { return live })
	c := e.acquire(e.provider(cfg))
	if _, isLive := live[c.NodeID()]; isLive || c.NodeID() != order[2] {
		t.Fatalf("took %d; want %d, the first ID gossip does not know as live", c.NodeID(), order[2])
	}
	r, _ := e.record(c.NodeID())
	if len(r.KnownNodes) != 2 || r.KnownNodes[first] != 3 {
		t.Fatalf("knownNodes at acquisition = %v, want the gossip view %v", r.KnownNodes, live)
	}
}

func TestRenewalWritesTheGossipView(t *testing.T) {
	e := newEnv(t)
	var mu sync.Mutex
	view := map[int]int64{}
	cfg := e.config("a")
	cfg.Peers = staticPeersFunc(func() map[int]int64 {
		mu.Lock()
		defer mu.Unlock()
		return map[int]int64{0: view[0], 1: view[1]}
	})
	c := e.acquire(e.provider(cfg))
	mu.Lock()
	view[0], view[1] = 5, 9
	mu.Unlock()
	e.advance(time.Second, c)
	r, _ := e.record(c.NodeID())
	if r.KnownNodes[0] != 5 || r.KnownNodes[1] != 9 {
		t.Fatalf("knownNodes after a renewal = %v, want {0:5 1:9}", r.KnownNodes)
	}
}

// recorder is an Observer that records events.
type recorder struct {
	mu     sync.Mutex
	events []string
}

func (r *recorder) add(s string) { r.mu.Lock(); r.events = append(r.events, s); r.mu.Unlock() }
func (r *recorder) list() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.events...)
}
func (r *recorder) Acquired(int, int64, time.Duration) { r.add("acquired") }
func (r *recorder) Renewed(int, time.Duration)         { r.add("renewed") }
func (r *recorder) RenewFailed(int, error)             { r.add("renew failed") }
func (r *recorder) Jeopardy(int, error)                { r.add("jeopardy") }
func (r *recorder) Recovered(int, time.Duration)       { r.add("recovered") }
func (r *recorder) Lost(int, error)                    { r.add("lost") }
func (r *recorder) Released(int)                       { r.add("released") }
func (r *recorder) Anomaly(string, error)              { r.add("anomaly") }

func TestObserverSeesEveryEvent(t *testing.T) {
	e := newEnv(t)
	rec := &recorder{}
	cfg := e.config("a")
	cfg.ClusterSize, cfg.Observer = 2, rec
	c := e.acquire(e.provider(cfg))
	e.advance(time.Second, c)
	e.store.Queue("update", faultErr(errors.New("boom")))
	e.advance(time.Second, c)
	e.advance(time.Second, c)
	_ = c.Close(context.Background())
	e.mem.Put(lease.RecordKey(0), []byte("garbage"))
	e.mem.Put(lease.RecordKey(1), []byte("garbage"))
	cfg.TaskID = "b"
	if _, err := e.provider(cfg).Acquire(context.Background()); !errors.Is(err, ErrClusterFull) {
		t.Fatalf("Acquire with every object corrupt: %v, want ErrClusterFull", err)
	}
	// The retry after the failure succeeds ~150 ms later, so the next renewal is due after t=3 s.
	want := []string{"acquired", "renewed", "renew failed", "renewed", "released", "anomaly", "anomaly"}
	got := rec.list()
	if len(got) != len(want) {
		t.Fatalf("events %v, want %v", got, want)
	}
	for i, w := range want {
		if got[i] != w {
			t.Fatalf("events %v, want %v", got, want)
		}
	}
}

// A task waiting on a full cluster takes a dead holder's ID as soon as the
// store's clock shows it expired, not at the end of its backoff; in that round
// it reads the dead holder's lease first (seen held before, unchanged since,
// now old enough by its own lease), and it reads the manifest once in all.
func TestWaiterTakesAnExpiredLeaseAtTheFirstPossibleLook(t *testing.T) {
	e := newEnv(t)
	var (
		holders []*Claim
		cuts    []*storetest.FaultStore
	)
	for i := range 4 {
		hcfg := e.config(taskName(i))
		hcfg.ClusterSize = 4
		cuts = append(cuts, storetest.NewFaultStore(e.store))
		holders = append(holders, e.acquire(e.providerOn(cuts[i], hcfg)))
	}
	wcfg := e.config("waiter")
	wcfg.ClusterSize, wcfg.AcquireTimeout, wcfg.AcquireBackoff = 4, 10*time.Minute, 20*time.Second
	// Kill the holder of the ID the waiter would read last.
	order := e.provider(wcfg).visitOrder(4)
	var dead *Claim
	for i, c := range holders {
		if c.NodeID() == order[3] {
			dead = c
			cuts[i].SetInjector(func(op storetest.Op, key string) storetest.Fault { return faultErr(storetest.ErrInjected) })
		}
	}
	_, deadMeta := e.record(dead.NodeID())

	var (
		mu     sync.Mutex
		gets   []string  // keys read by the waiter, "LIST" for a listing
		tookAt time.Time // when the waiter first wrote: its take
	)
	spy := storetest.NewFaultStore(e.store)
	spy.SetInjector(func(op storetest.Op, key string) storetest.Fault {
		mu.Lock()
		defer mu.Unlock()
		switch op {
		case storetest.OpGet:
			gets = append(gets, key)
		case storetest.OpList:
			gets = append(gets, "LIST")
		case storetest.OpUpdate:
			if tookAt.IsZero() {
				tookAt = e.clk.Now()
			}
		}
		return storetest.Fault{}
	})
	ch := acquireAsync(e.providerOn(spy, wcfg))
	var r acquireResult
	for r.c == nil && r.err == nil {
		r = e.stepAcquire(ch, holders, func() bool {
			mu.Lock()
			defer mu.Unlock()
			return !tookAt.IsZero()
		})
	}
	if r.err != nil {
		t.Fatalf("Acquire: %v", r.err)
	}
	defer r.c.Close(context.Background())
	if r.c.NodeID() != dead.NodeID() || !r.c.TookOverExpired() {
		t.Fatalf("took node %d (expired %v), want the dead holder's %d", r.c.NodeID(), r.c.TookOverExpired(), dead.NodeID())
	}
	mu.Lock()
	defer mu.Unlock()
	// Expired once Date - Last-Modified > 3 s + 1 s + 1 s: at the first
	// whole second past that, 6 s after the last write here.
	first := lease.FirstExpiredDate(deadMeta.LastModified, 3*time.Second, time.Second)
	if tookAt.Before(first) || tookAt.After(first.Add(100*time.Millisecond)) {
		t.Fatalf("taken at %v after the last write, want at %v (the backoff alone waits at least 10 s)",
			tookAt.Sub(deadMeta.LastModified), first.Sub(deadMeta.LastModified))
	}
	last := 0
	for i, k := range gets {
		if k == "LIST" {
			last = i
		}
	}
	if tail := gets[last+1:]; len(tail) != 1 || tail[0] != lease.RecordKey(dead.NodeID()) {
		t.Fatalf("the taking round read %v after its listing, want only %s", tail, lease.RecordKey(dead.NodeID()))
	}
	manifestReads := 0
	for _, k := range gets {
		if k == lease.ManifestKey {
			manifestReads++
		}
	}
	if manifestReads != 1 {
		t.Fatalf("the manifest was read %d times in %v, want once (unchanged ETag in the listings)", manifestReads, gets)
	}
}

// stepAcquire moves the fake clock to its next wake-up once the waiter behind
// ch and every holder still renewing sleep on it, and returns Acquire's result
// if it came (else the zero result: call again). Once wrote reports that the
// waiter wrote its take, it moves the clock no more and waits for the result:
// Acquire returns with no time passing, while its claim's renewal loop,
// already asleep, would pass for the waiter asleep.
func (e *env) stepAcquire(ch <-chan acquireResult, holders []*Claim, wrote func() bool) acquireResult {
	e.t.Helper()
	if wrote() {
		select {
		case r := <-ch:
			return r
		case <-time.After(10 * time.Second):
			e.t.Fatal("Acquire did not return after its take")
		}
	}
	select {
	case r := <-ch:
		return r
	default:
	}
	running := 1 // the waiter
	for _, c := range holders {
		select {
		case <-c.loopDone:
		default:
			running++
		}
	}
	if e.clk.Sleepers() < running {
		time.Sleep(time.Millisecond)
		return acquireResult{}
	}
	next, ok := e.clk.NextWake()
	if !ok || e.clk.Now().Sub(start) > time.Minute {
		e.t.Fatalf("nothing to wake at %v", e.clk.Now().Sub(start))
	}
	e.clk.Advance(next.Sub(e.clk.Now()))
	return acquireResult{}
}
