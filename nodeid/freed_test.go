package nodeid

import (
	"context"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nodeid/nodeid/lease"
	"github.com/nodeid/nodeid/lease/storetest"
)

// opLog records the operations a FaultStore passes on, in order, from the
// moment it is installed.
type opLog struct {
	mu  sync.Mutex
	ops []string
}

// logOps installs the log on e's FaultStore and returns it.
func (e *env) logOps() *opLog {
	l := &opLog{}
	e.store.SetInjector(func(op storetest.Op, key string) storetest.Fault {
		l.mu.Lock()
		defer l.mu.Unlock()
		l.ops = append(l.ops, string(op)+" "+key)
		return storetest.Fault{}
	})
	return l
}

// list returns the operations recorded so far.
func (l *opLog) list() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(l.ops)
}

// await waits (in real time) until n operations are recorded.
func (l *opLog) await(t *testing.T, n int) {
	t.Helper()
	for deadline := time.Now().Add(5 * time.Second); len(l.list()) < n; time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("%d operations recorded, want %d: %v", len(l.list()), n, l.list())
		}
	}
}

// awaitAcquire waits (in real time: the fake clock stands still) for
// Acquire's result, which only gossip's freed signal can bring.
func awaitAcquire(t *testing.T, ch <-chan acquireResult) acquireResult {
	t.Helper()
	select {
	case r := <-ch:
		return r
	case <-time.After(10 * time.Second):
		t.Fatal("the waiter did not take an ID when gossip freed one")
		return acquireResult{}
	}
}

// pairedGets is a store whose GETs of the two keys (or LISTs, listKey) wait
// (in real time, at most a second) until both are in flight: it tells
// whether they are sent together, in one round trip.
type pairedGets struct {
	lease.Store
	a, b string
	mu   sync.Mutex
	in   map[string]bool
	both chan struct{}
	met  bool
}

func newPairedGets(s lease.Store, a, b string) *pairedGets {
	return &pairedGets{Store: s, a: a, b: b, in: map[string]bool{}, both: make(chan struct{})}
}

// arm makes the next GETs of the two keys wait for each other.
func (s *pairedGets) arm() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.in = map[string]bool{}
}

// List implements lease.Store; a LIST pairs as the key listKey.
func (s *pairedGets) List(ctx context.Context) (lease.Listing, error) {
	s.pair(listKey)
	return s.Store.List(ctx)
}

// listKey stands for a LIST in pairedGets.
const listKey = "(list)"

func (s *pairedGets) Get(ctx context.Context, key string) ([]byte, lease.Meta, error) {
	s.pair(key)
	return s.Store.Get(ctx, key)
}

// pair waits, when key is one of the pair's and the pair is armed, until the
// other is in flight too, at most a second.
func (s *pairedGets) pair(key string) {
	s.mu.Lock()
	paired := s.in != nil && (key == s.a || key == s.b)
	if paired {
		s.in[key] = true
		if s.in[s.a] && s.in[s.b] {
			s.met, s.in = true, nil
			close(s.both)
		}
	}
	s.mu.Unlock()
	if paired {
		select {
		case <-s.both:
		case <-time.After(time.Second):
			s.mu.Lock()
			s.in = nil // one waited in vain: let the rest pass
			s.mu.Unlock()
		}
	}
}

// together reports whether the two GETs were in flight at once.
func (s *pairedGets) together() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.met
}

// TestFreedWakeFirstLookIsTwoRoundTrips: a waiter whose first look comes when
// gossip frees an ID (it slept from its start, every ID held by gossip) reads
// the freed lease and, in the same round trip, the manifest it never read,
// then takes the lease by CAS: GET and GET together, then CAS; no LIST. Before
// takeFreed it made LIST, manifest GET, GET, CAS.
func TestFreedWakeFirstLookIsTwoRoundTrips(t *testing.T) {
	e := newEnv(t)
	claims, cfg, hints := e.fullCluster()
	released := claims[1]
	key := lease.RecordKey(released.NodeID())
	wc := cfg
	wc.TaskID, wc.AcquireTimeout, wc.Peers = "waiter", time.Minute, hints
	paired := newPairedGets(e.store, lease.ManifestKey, key)
	paired.in = nil // armed after the release
	ch := acquireAsync(e.providerOn(paired, wc))
	all := len(claims) + 1
	e.asleep(all)
	e.clk.Advance(cfg.RenewInterval / 2)
	e.asleep(all)
	if err := released.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	ops := e.logOps()
	paired.arm()
	hints.free(released.NodeID())
	r := awaitAcquire(t, ch)
	got := ops.list()
	if r.err != nil || r.c.NodeID() != released.NodeID() || r.c.Version() != released.Version()+1 {
		t.Fatalf("waiter: %v, %v; want node %d at version %d", r.c, r.err, released.NodeID(), released.Version()+1)
	}
	_ = r.c.Close(context.Background())
	slices.Sort(got[:2])
	want := []string{"get " + key, "get " + lease.ManifestKey, "update " + key} // the GETs sorted
	if !slices.Equal(got[:min(3, len(got))], want) {
		t.Fatalf("the waiter's requests after the wake: %v; want %v (no LIST)", got, want)
	}
	if !paired.together() {
		t.Error("the manifest GET and the lease GET were not in flight together: two round trips before the CAS, want one")
	}
}

// TestFreedWakeDeadHolderIsJudged: gossip drops a holder that stopped (found
// dead) while its lease runs: the waiter reads that lease first (GET, no
// LIST), judges it held and does not write; its LIST then does not read it
// again, and it takes it once expired, judged on a fresh read, at the next
// version.
func TestFreedWakeDeadHolderIsJudged(t *testing.T) {
	e := newEnv(t)
	claims, cfg, hints := e.fullCluster()
	dead := claims[3]
	dead.fence()
	dead.stopLoop() // it stops renewing; its lease still runs
	<-dead.loopDone
	live := slices.Delete(slices.Clone(claims), 3, 4)
	wc := cfg
	wc.TaskID, wc.AcquireTimeout, wc.Peers = "waiter", time.Minute, hints
	ch := acquireAsync(e.provider(wc))
	all := len(live) + 1
	e.asleep(all)
	e.clk.Advance(cfg.RenewInterval) // one look: the manifest is cached, seen now
	e.asleep(all)
	ops := e.logOps()
	hints.free(dead.NodeID())
	ops.await(t, 2)
	e.asleep(all) // the waiter looked, took nothing, and sleeps again
	key := lease.RecordKey(dead.NodeID())
	if got, want := ops.list(), []string{"get " + key, "list "}; !slices.Equal(got, want) {
		t.Fatalf("after gossip dropped a holder whose lease runs: %v; want %v (read, judged held, not written; the LIST does not read it again)", got, want)
	}
	r := e.stepUntil(ch, all)
	if r.err != nil || r.c.NodeID() != dead.NodeID() || r.c.Version() != dead.Version()+1 || !r.c.TookOverExpired() {
		t.Fatalf("waiter: %v, %v; want node %d taken expired at version %d", r.c, r.err, dead.NodeID(), dead.Version()+1)
	}
	_ = r.c.Close(context.Background())
}

// TestFreedWakeLostRaceLooksAsBefore: when the CAS after a freed wake loses
// (another writer changed the lease between the GET and the CAS), the waiter
// makes the ordinary look at once: LIST, GET, CAS.
func TestFreedWakeLostRaceLooksAsBefore(t *testing.T) {
	e := newEnv(t)
	claims, cfg, hints := e.fullCluster()
	released := claims[0]
	wc := cfg
	wc.TaskID, wc.AcquireTimeout, wc.Peers = "waiter", time.Minute, hints
	ch := acquireAsync(e.provider(wc))
	all := len(claims) + 1
	e.asleep(all)
	e.clk.Advance(cfg.RenewInterval) // one look: the manifest is cached, seen now
	e.asleep(all)
	if err := released.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	e.store.Queue(storetest.OpUpdate, faultErr(lease.ErrPreconditionFailed))
	ops := e.logOps()
	hints.free(released.NodeID())
	r := awaitAcquire(t, ch)
	got := ops.list()
	if r.err != nil || r.c.NodeID() != released.NodeID() {
		t.Fatalf("waiter: %v, %v; want node %d", r.c, r.err, released.NodeID())
	}
	_ = r.c.Close(context.Background())
	key := lease.RecordKey(released.NodeID())
	// The queued fault is taken before the injector: the lost CAS is not logged.
	if want := []string{"get " + key, "list ", "get " + key, "update " + key}; !slices.Equal(got, want) {
		t.Fatalf("requests after the wake: %v; want %v", got, want)
	}
}

// TestFreedWakeReadsByRank: when gossip frees several IDs at once, each
// waiting task reads the one its rank picks among them, sorted by ID.
func TestFreedWakeReadsByRank(t *testing.T) {
	e := newEnv(t)
	claims, cfg, hints := e.fullCluster()
	hints.rank, hints.of = 1, 2
	wc := cfg
	wc.TaskID, wc.AcquireTimeout, wc.Peers = "waiter", time.Minute, hints
	ch := acquireAsync(e.provider(wc))
	all := len(claims) + 1
	e.asleep(all)
	e.clk.Advance(cfg.RenewInterval)
	e.asleep(all)
	freed := []*Claim{claims[0], claims[2]}
	ids := []int{freed[0].NodeID(), freed[1].NodeID()}
	slices.Sort(ids)
	for _, c := range freed {
		if err := c.Close(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
	ops := e.logOps()
	hints.mu.Lock()
	delete(hints.live, ids[0]) // the first without a signal: both leave one view
	hints.mu.Unlock()
	hints.free(ids[1])
	r := awaitAcquire(t, ch)
	got := ops.list()
	if r.err != nil || r.c.NodeID() != ids[1] {
		t.Fatalf("rank 1 of 2, IDs %v freed: %v, %v; want node %d", ids, r.c, r.err, ids[1])
	}
	_ = r.c.Close(context.Background())
	key := lease.RecordKey(ids[1])
	if want := []string{"get " + key, "update " + key}; !slices.Equal(got, want) {
		t.Fatalf("requests after the wake: %v; want %v", got, want)
	}
}

// peersOnly is a Peers without hints.
type peersOnly struct{ f *fakeHints }

func (p peersOnly) KnownNodes() map[int]int64 { return p.f.KnownNodes() }

// TestTakeFreedNeedsHints: with Peers that are not PeerHints, takeFreed makes
// no request whatever gossip's view did, so that an Acquire looks as before
// (LIST first).
func TestTakeFreedNeedsHints(t *testing.T) {
	e := newEnv(t)
	claims, cfg, hints := e.fullCluster()
	if err := claims[0].Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	wc := cfg
	wc.TaskID, wc.Peers = "plain", peersOnly{hints}
	p := e.provider(wc)
	w := p.newWatched()
	w.gossipFree = map[int]bool{}
	hints.free(claims[0].NodeID())
	ops := e.logOps()
	if c, err := p.takeFreed(context.Background(), w); c != nil || err != nil || len(ops.list()) != 0 {
		t.Fatalf("takeFreed without hints = %v, %v after %v; want nothing, no request", c, err, ops.list())
	}
}

// TestFreedWakeAfterAClaimSpreadLate: a waiter that started while a holder's
// claim was still spreading (gossip then showed that ID free, but not enough
// free IDs for this task) takes that ID with GET and CAS when the holder
// releases it, though it never saw it held (as nodeid-bench failover's first
// waiter, started right after the cluster was filled). Were its first look
// to come while the claim was still spreading, the ID would count as seen
// free by it, and the look after the release would be the ordinary one.
func TestFreedWakeAfterAClaimSpreadLate(t *testing.T) {
	e := newEnv(t)
	claims, cfg, hints := e.fullCluster()
	late := claims[2]
	hints.mu.Lock()
	delete(hints.live, late.NodeID()) // its claim has not reached the waiter yet
	hints.rank, hints.of = 1, 2       // so its holder still counts as waiting
	hints.mu.Unlock()
	wc := cfg
	wc.TaskID, wc.AcquireTimeout, wc.Peers = "waiter", time.Minute, hints
	ch := acquireAsync(e.provider(wc))
	all := len(claims) + 1
	e.asleep(all)
	hints.mu.Lock()
	hints.live[late.NodeID()] = late.Version() // the claim arrives, before any look
	hints.rank, hints.of = 0, 1
	hints.mu.Unlock()
	if err := late.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	ops := e.logOps()
	hints.free(late.NodeID())
	r := awaitAcquire(t, ch)
	got := ops.list()
	if r.err != nil || r.c.NodeID() != late.NodeID() {
		t.Fatalf("waiter: %v, %v; want node %d", r.c, r.err, late.NodeID())
	}
	_ = r.c.Close(context.Background())
	key := lease.RecordKey(late.NodeID())
	slices.Sort(got[:min(2, len(got))])
	if want := []string{"get " + key, "get " + lease.ManifestKey, "update " + key}; !slices.Equal(got, want) {
		t.Fatalf("requests after the wake: %v; want %v", got, want)
	}
}

// TestFirstLookWithoutWaitIsTheOrdinaryOne: a task that starts when gossip
// already shows an ID free for it looks as before, reading leases after a
// LIST (a join): only IDs freed while it waited are read without a listing.
func TestFirstLookWithoutWaitIsTheOrdinaryOne(t *testing.T) {
	e := newEnv(t)
	claims, cfg, hints := e.fullCluster()
	if err := claims[1].Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	hints.free(claims[1].NodeID())
	wc := cfg
	wc.TaskID, wc.Peers = "joiner", hints
	ops := e.logOps()
	c := e.acquire(e.provider(wc))
	got := ops.list()
	if len(got) > 1 {
		slices.Sort(got[:2]) // the manifest's GET goes beside the LIST
	}
	key := lease.RecordKey(claims[1].NodeID())
	if want := []string{"get " + lease.ManifestKey, "list ", "get " + key, "update " + key}; c.NodeID() != claims[1].NodeID() || !slices.Equal(got, want) {
		t.Fatalf("took node %d with %v; want node %d with %v (the lease read after the LIST)", c.NodeID(), got, claims[1].NodeID(), want)
	}
}

// TestFirstLookReadsTheManifestBesideTheList: with gossip showing the
// cluster's members, the first look of a task that never read the manifest
// (here a waiter's look after a renew interval) sends its GET beside the
// LIST: one round trip less, the same requests. Without hints, the GET
// follows the LIST, as before.
func TestFirstLookReadsTheManifestBesideTheList(t *testing.T) {
	for _, hinted := range []bool{true, false} {
		e := newEnv(t)
		claims, cfg, hints := e.fullCluster()
		wc := cfg
		wc.TaskID, wc.AcquireTimeout, wc.Peers = "waiter", time.Minute, hints
		var store lease.Store = e.store
		paired := newPairedGets(e.store, lease.ManifestKey, listKey)
		if hinted {
			store = paired
		} else {
			wc.Peers = peersOnly{hints}
		}
		ops := e.logOps()
		ch := acquireAsync(e.providerOn(store, wc))
		all := len(claims) + 1
		e.asleep(all)
		e.clk.Advance(cfg.RenewInterval) // the holders renew; the waiter looks (with hints, the first time)
		e.asleep(all)
		got := slices.DeleteFunc(ops.list(), func(op string) bool { return strings.HasPrefix(op, "update ") })
		if hinted {
			slices.Sort(got)
			if want := []string{"get " + lease.ManifestKey, "list "}; !slices.Equal(got, want) || !paired.together() {
				t.Errorf("with hints: %v, together %v; want %v together", got, paired.together(), want)
			}
		} else if len(got) < 2 || got[0] != "list " || got[1] != "get "+lease.ManifestKey {
			t.Errorf("without hints: %v; want LIST, then the manifest's GET", got)
		}
		_ = claims[0].Close(context.Background())
		hints.free(claims[0].NodeID())
		r := e.stepUntil(ch, all-1)
		if r.err != nil {
			t.Fatalf("waiter: %v", r.err)
		}
		_ = r.c.Close(context.Background())
	}
}
