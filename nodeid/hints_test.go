package nodeid

import (
	"context"
	"maps"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/nodeid/nodeid/lease"
	"github.com/nodeid/nodeid/lease/storetest"
)

// fakeHints is a PeerHints whose view the test sets.
type fakeHints struct {
	mu       sync.Mutex
	live     map[int]int64
	rank, of int
	freed    chan struct{}
}

func (f *fakeHints) KnownNodes() map[int]int64 {
	f.mu.Lock()
	defer f.mu.Unlock()
	return maps.Clone(f.live)
}

func (f *fakeHints) Freed() <-chan struct{} {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.freed == nil {
		f.freed = make(chan struct{})
	}
	return f.freed
}

func (f *fakeHints) Rank() (rank, of int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.rank, f.of
}

// free drops id from the view and signals it, as gossip does when its holder
// releases it.
func (f *fakeHints) free(id int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	delete(f.live, id)
	if f.freed != nil {
		close(f.freed)
		f.freed = nil
	}
}

// reads counts the LISTs and GETs made so far (holders renew by CAS alone, so
// these are a waiter's).
func (e *env) reads() int { return e.mem.Count(storetest.OpList) + e.mem.Count(storetest.OpGet) }

// fullCluster has a holder take every ID and returns the claims, the holders'
// config and gossip's view of them.
func (e *env) fullCluster() ([]*Claim, Config, *fakeHints) {
	e.t.Helper()
	cfg := e.config("holder")
	if _, err := Init(context.Background(), e.store, cfg); err != nil {
		e.t.Fatal(err)
	}
	h := &fakeHints{live: map[int]int64{}}
	var claims []*Claim
	for i := range cfg.ClusterSize {
		hc := cfg
		hc.TaskID = taskName(i)
		c := e.acquire(e.provider(hc))
		claims = append(claims, c)
		h.live[c.NodeID()] = c.Version()
	}
	e.settle(claims...)
	return claims, cfg, h
}

// TestWaiterSleepsUntilGossipFreesAnID: a task whose gossip view shows every
// ID held makes no store request for a renew interval, then one LIST per
// renew interval and no read of a lease gossip shows live (the holders
// renew); when gossip says one was freed it looks at once, without waiting out
// a pause, and takes it with GET and CAS (no LIST: the manifest is cached and
// was seen by the last LIST, within a renew interval).
func TestWaiterSleepsUntilGossipFreesAnID(t *testing.T) {
	e := newEnv(t)
	claims, cfg, hints := e.fullCluster()
	wc := cfg
	wc.TaskID, wc.AcquireTimeout, wc.Peers = "waiter", time.Minute, hints
	reads := e.reads()
	ch := acquireAsync(e.provider(wc))
	all := len(claims) + 1
	e.asleep(all)
	e.clk.Advance(cfg.RenewInterval - time.Millisecond)
	e.asleep(all)
	if r := e.reads() - reads; r != 0 {
		t.Fatalf("the waiter made %d LISTs and GETs within a renew interval while gossip showed every ID held, want 0", r)
	}
	lists, gets := e.mem.Count(storetest.OpList), e.mem.Count(storetest.OpGet)
	for end := e.clk.Now().Add(3 * cfg.RenewInterval); e.clk.Now().Before(end); {
		e.step(all)
	}
	if l, g := e.mem.Count(storetest.OpList)-lists, e.mem.Count(storetest.OpGet)-gets; l < 2 || l > 4 || g != 1 {
		t.Fatalf("in 3 more renew intervals the waiter made %d LISTs and %d GETs; want one LIST each (2 to 4) and the manifest GET: no lease that gossip shows live is read", l, g)
	}
	released := claims[2]
	if err := released.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	lists, gets, updates := e.mem.Count(storetest.OpList), e.mem.Count(storetest.OpGet), e.mem.Count(storetest.OpUpdate)
	hints.free(released.NodeID())
	var r acquireResult
	select { // the clock stands still: only the freed signal can wake the waiter
	case r = <-ch:
	case <-time.After(10 * time.Second):
		t.Fatal("the waiter did not look when gossip freed an ID")
	}
	if r.err != nil || r.c.NodeID() != released.NodeID() {
		t.Fatalf("waiter: %v, %v; want node %d", r.c, r.err, released.NodeID())
	}
	got := []int{e.mem.Count(storetest.OpList) - lists, e.mem.Count(storetest.OpGet) - gets, e.mem.Count(storetest.OpUpdate) - updates}
	_ = r.c.Close(context.Background())
	if !slices.Equal(got, []int{0, 1, 1}) {
		t.Fatalf("the take made %v LISTs, GETs, CASes; want [0 1 1] (the freed ID read at once; the manifest is cached by then)", got)
	}
}

// TestGossipLiveButNotRenewingIsTaken: gossip may show a holder live that no
// longer renews its lease. The waiter still looks once a lease, and reads
// that lease once the listing shows it unwritten for longer than its own
// lease; it takes it expired.
func TestGossipLiveButNotRenewingIsTaken(t *testing.T) {
	e := newEnv(t)
	cfg := e.config("holder")
	cfg.ClusterSize = 1
	if _, err := Init(context.Background(), e.store, cfg); err != nil {
		t.Fatal(err)
	}
	p := e.provider(cfg)
	c := e.acquire(p)
	c.fence()
	c.stopLoop() // the holder stops renewing; gossip still shows it
	<-c.loopDone
	hints := &fakeHints{live: map[int]int64{0: c.Version()}, of: 1}
	wc := cfg
	wc.TaskID, wc.AcquireTimeout, wc.Peers = "waiter", time.Minute, hints
	r := e.stepUntil(acquireAsync(e.provider(wc)), 1)
	if r.err != nil || r.c.Version() != c.Version()+1 || !r.c.TookOverExpired() {
		t.Fatalf("waiter: %v, %v; want node 0 taken expired at version %d", r.c, r.err, c.Version()+1)
	}
	_ = r.c.Close(context.Background())
	if g := e.mem.Count(storetest.OpGet); g > 4 {
		t.Fatalf("%d GETs in all, want the holder's and the waiter's manifest and one lease read", g)
	}
}

// TestRankSpreadsWaitingTasks: tasks that gossip ranks 0..k-1 among k waiting
// ones visit the best candidates sorted by ID from their own rank, so each
// reads and takes a different one first; without a rank the task's own
// spread order stands, and gossip's live IDs are not read at all.
func TestRankSpreadsWaitingTasks(t *testing.T) {
	e := newEnv(t)
	date := start.Add(2 * time.Second)
	v := sizedView(8, date, func(id int) string { return "e" + string(rune('0'+id)) }, func(id int) int64 {
		if id%2 == 1 {
			return 150 // released: the best candidates are 1, 3, 5, 7
		}
		return 300
	})
	cfg := e.config("task")
	cfg.ClusterSize = 8
	var firsts []int
	for r := range 4 {
		cfg.Peers = &fakeHints{rank: r, of: 4}
		order := e.provider(cfg).candidates(v, map[int]bool{}, &watched{held: map[int]heldLease{}}, nil)
		firsts = append(firsts, order[0])
		if !slices.Contains([]int{1, 3, 5, 7}, order[0]) || len(order) != 8 {
			t.Fatalf("rank %d: %v, want a released ID first and all 8", r, order)
		}
	}
	if !slices.Equal(firsts, []int{1, 3, 5, 7}) {
		t.Fatalf("firsts by rank = %v, want [1 3 5 7]", firsts)
	}
	cfg.Peers = &fakeHints{rank: 5, of: 8} // more waiters than free IDs: wraps
	if order := e.provider(cfg).candidates(v, map[int]bool{}, &watched{held: map[int]heldLease{}}, nil); order[0] != 3 {
		t.Fatalf("rank 5 of 8: %v, want 3 first (5 mod 4 = 1)", order)
	}

	cfg.Peers = nil
	plain := e.provider(cfg).candidates(v, map[int]bool{}, &watched{held: map[int]heldLease{}}, nil)
	known := map[int]int64{0: 1, 2: 1, 4: 1, 6: 1}
	cfg.Peers = &fakeHints{live: known}
	withLive := e.provider(cfg).candidates(v, map[int]bool{}, &watched{held: map[int]heldLease{}}, known)
	if want := slices.DeleteFunc(slices.Clone(plain), func(id int) bool { _, ok := known[id]; return ok }); !slices.Equal(withLive, want) {
		t.Fatalf("with gossip's live IDs: %v, want %v (the same order without them)", withLive, want)
	}
	old := sizedView(8, start.Add(time.Minute), func(id int) string { return "e" + string(rune('0'+id)) }, func(int) int64 { return 300 })
	if order := e.provider(cfg).candidates(old, map[int]bool{}, &watched{held: map[int]heldLease{}}, known); len(order) != 8 ||
		!lease.ListedExpired(old.objects[0], old.listing.Date, cfg.LeaseDuration, cfg.ClockMargin) {
		t.Fatalf("leases unwritten for a minute: %v, want all 8 (gossip's live IDs too, last)", order)
	}
}

// TestAcquireTimeoutZeroTriesOnceWhateverGossipSays: AcquireTimeout 0 "tries
// once": with gossip hints whose view shows every ID held (gossip lags: the
// holder of one released it a moment ago), Acquire still makes its one look
// at the store, which finds the ID free. Before the fix it returned
// ErrClusterFull without a request.
func TestAcquireTimeoutZeroTriesOnceWhateverGossipSays(t *testing.T) {
	e := newEnv(t)
	claims, cfg, hints := e.fullCluster()
	if err := claims[0].Close(context.Background()); err != nil { // free in the bucket; gossip not yet told
		t.Fatal(err)
	}
	wc := cfg
	wc.TaskID, wc.AcquireTimeout, wc.Peers = "once", 0, hints
	before := e.reads()
	c, err := e.provider(wc).Acquire(context.Background())
	if err != nil {
		t.Fatalf("Acquire with AcquireTimeout 0 = %v after %d store reads; want the one try, which finds node %d free",
			err, e.reads()-before, claims[0].NodeID())
	}
	if c.NodeID() != claims[0].NodeID() {
		t.Errorf("took node %d, want %d", c.NodeID(), claims[0].NodeID())
	}
	_ = c.Close(context.Background())
}
