package nodeid

import (
	"context"
	"errors"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nodeid/nodeid/lease"
	"github.com/nodeid/nodeid/lease/storetest"
)

func TestAcquireBootstrapsAndTakesAnID(t *testing.T) {
	e := newEnv(t)
	c := e.acquire(e.provider(e.config("a")))
	if c.Version() != 1 || !c.Valid() || c.Err() != nil {
		t.Fatalf("claim: version %d valid %v err %v", c.Version(), c.Valid(), c.Err())
	}
	l, _ := e.mem.List(context.Background())
	if len(l.Objects) != 2 { // the manifest and the object taken by creating it
		t.Fatalf("bucket has %d objects, want 2", len(l.Objects))
	}
	r, _ := e.record(c.NodeID())
	if r.Holder != "a" || r.Version != 1 || r.LeaseMillis != 3000 {
		t.Fatalf("record %+v", r)
	}
	wantRes := start.UnixMilli() + 3000
	if r.ReservedUntilMs != wantRes || c.Reservation() != wantRes || c.Floor() != 0 {
		t.Fatalf("reservation %d / %d, floor %d; want %d, 0", r.ReservedUntilMs, c.Reservation(), c.Floor(), wantRes)
	}
	if got, want := c.ValidUntil(), start.Add(2500*time.Millisecond); !got.Equal(want) {
		t.Fatalf("ValidUntil = %v, want %v (t0 + lease - safety margin)", got, want)
	}
}

func TestRestartAgainstFullBucketCostsOneGetOneList(t *testing.T) {
	e := newEnv(t)
	e.acquire(e.provider(e.config("a")))
	gets, lists, creates := e.mem.Count(storetest.OpGet), e.mem.Count(storetest.OpList), e.mem.Count(storetest.OpCreate)
	p := e.provider(e.config("b"))
	if _, err := p.bootstrap(context.Background()); err != nil {
		t.Fatal(err)
	}
	if g, l, c := e.mem.Count(storetest.OpGet)-gets, e.mem.Count(storetest.OpList)-lists, e.mem.Count(storetest.OpCreate)-creates; g != 1 || l != 1 || c != 0 {
		t.Fatalf("bootstrap of a full bucket: %d GET, %d LIST, %d creates; want 1, 1, 0", g, l, c)
	}
}

func TestDistinctIDsThenClusterFull(t *testing.T) {
	e := newEnv(t)
	seen := map[int]bool{}
	for i := range 4 {
		c := e.acquire(e.provider(e.config(taskName(i))))
		if seen[c.NodeID()] {
			t.Fatalf("node ID %d handed out twice", c.NodeID())
		}
		seen[c.NodeID()] = true
	}
	_, err := e.provider(e.config("late")).Acquire(context.Background())
	if !errors.Is(err, ErrClusterFull) {
		t.Fatalf("fifth task: error = %v, want ErrClusterFull", err)
	}
}

func TestTasksRacingForOneID(t *testing.T) {
	e := newEnv(t)
	const racers = 10
	var (
		wg     sync.WaitGroup
		mu     sync.Mutex
		claims []*Claim
	)
	for i := range racers {
		cfg := e.config(taskName(i))
		cfg.ClusterSize = 1
		p := e.provider(cfg)
		wg.Go(func() {
			c, err := p.Acquire(context.Background())
			mu.Lock()
			defer mu.Unlock()
			switch {
			case err == nil:
				claims = append(claims, c)
			case !errors.Is(err, ErrClusterFull):
				t.Errorf("racer: %v", err)
			}
		})
	}
	wg.Wait()
	if len(claims) != 1 {
		t.Fatalf("%d racers hold node 0, want exactly 1", len(claims))
	}
	_ = claims[0].Close(context.Background())
}

func TestSpreadStartsAtTaskOffset(t *testing.T) {
	e := newEnv(t)
	cfg := e.config("spread-task")
	cfg.ClusterSize = 64
	p := e.provider(cfg)
	c := e.acquire(p)
	if want := p.visitOrder(64)[0]; c.NodeID() != want {
		t.Fatalf("spread acquire took %d, want the task's offset %d", c.NodeID(), want)
	}
	cfg = e.config("lowest")
	cfg.ClusterSize, cfg.Order = 64, OrderLowestFirst
	if c := e.acquire(e.provider(cfg)); c.NodeID() != 0 && p.visitOrder(64)[0] != 0 {
		t.Fatalf("lowest-first took %d, want 0", c.NodeID())
	}
}

func TestRenewWritesOncePerIntervalWithoutReads(t *testing.T) {
	e := newEnv(t)
	c := e.acquire(e.provider(e.config("a")))
	gets, lists, updates := e.mem.Count(storetest.OpGet), e.mem.Count(storetest.OpList), e.mem.Count(storetest.OpUpdate)
	e.advance(10*time.Second, c)
	e.settle(c)
	if g, l, u := e.mem.Count(storetest.OpGet)-gets, e.mem.Count(storetest.OpList)-lists, e.mem.Count(storetest.OpUpdate)-updates; g != 0 || l != 0 || u != 10 {
		t.Fatalf("10 s of holding: %d GET, %d LIST, %d PUT; want 0, 0, 10", g, l, u)
	}
	if !c.Valid() {
		t.Fatalf("claim invalid after renewals")
	}
	r, _ := e.record(c.NodeID())
	if want := start.Add(10*time.Second).UnixMilli() + 3000; r.ReservedUntilMs != want || c.Reservation() != want {
		t.Fatalf("reservation %d / %d, want %d", r.ReservedUntilMs, c.Reservation(), want)
	}
}

// A holder cut off from the store fences itself before any other task may
// judge its lease expired on the store's clock.
func TestCutOffHolderFencesBeforeOthersCanTake(t *testing.T) {
	e := newEnv(t)
	cut := storetest.NewFaultStore(e.store)
	hcfg := e.config("holder")
	hcfg.ClusterSize = 1
	holder := e.acquire(e.providerOn(cut, hcfg))
	cut.SetInjector(func(op storetest.Op, key string) storetest.Fault {
		return storetest.Fault{Err: storetest.Unknown(op, key)}
	})
	other := e.config("other")
	other.ClusterSize = 1
	for holder.Valid() {
		e.advance(100*time.Millisecond, holder)
		if _, err := e.provider(other).Acquire(context.Background()); err == nil && holder.Valid() {
			t.Fatalf("another task took node %d while its holder was still valid", holder.NodeID())
		}
	}
	fencedAt := e.clk.Now().Sub(start)
	if err := holder.Check(); !errors.Is(err, ErrJeopardy) || holder.Err() != nil {
		t.Fatalf("holder fenced: Check %v, Err %v; want in jeopardy (renewing on its last write), not lost", err, holder.Err())
	}
	e.advanceUntilDone(holder, 10*time.Second) // the loss grace (a lease) ends
	if !errors.Is(holder.Err(), ErrLeaseLost) || !strings.Contains(holder.Err().Error(), "loss grace") {
		t.Fatalf("holder Err = %v, want ErrLeaseLost at the end of the loss grace", holder.Err())
	}
	if fencedAt > 2*time.Second {
		t.Fatalf("holder fenced %v after its last write, want by the 2 s renew deadline", fencedAt)
	}
	// The store's rule: taken only once Date - LastModified > 3 s + 1 s + 1 s.
	var taken *Claim
	for taken == nil {
		e.clk.Advance(100 * time.Millisecond)
		taken, _ = e.provider(other).Acquire(context.Background())
	}
	defer taken.Close(context.Background())
	if took := e.clk.Now().Sub(start); took <= 5*time.Second {
		t.Fatalf("taken over %v after the holder's write, want > lease + 2 s", took)
	}
	if !taken.TookOverExpired() {
		t.Fatalf("TookOverExpired = false after taking over an expired lease")
	}
	if taken.Version() != holder.Version()+1 || taken.Floor() != start.UnixMilli()+3000 {
		t.Fatalf("successor version %d floor %d; want %d, %d", taken.Version(), taken.Floor(), holder.Version()+1, start.UnixMilli()+3000)
	}
}

func TestAmbiguousRenewalThatLandedIsOurs(t *testing.T) {
	e := newEnv(t)
	c := e.acquire(e.provider(e.config("a")))
	e.store.Queue(storetest.OpUpdate, storetest.Fault{Landed: true})
	e.advance(1*time.Second, c)
	e.settle(c)
	r, meta := e.record(c.NodeID())
	etag, sent, pending := c.etag, c.snap.Load().lastSent, len(c.pending) // the loop sleeps (settled)
	if etag != meta.ETag || r.WriteID != c.rec.WriteID || pending != 0 {
		t.Fatalf("landed ambiguous write not adopted: etag %q vs %q, pending %d", etag, meta.ETag, pending)
	}
	if !sent.Equal(start.Add(time.Second)) {
		t.Fatalf("fence measured from %v, want the ambiguous write's send time", sent)
	}
	e.advance(3*time.Second, c)
	if !c.Valid() || c.Err() != nil {
		t.Fatalf("claim lost after an ambiguous write that landed: %v", c.Err())
	}
}

func TestAmbiguousRenewalThatDidNotLandIsRetried(t *testing.T) {
	e := newEnv(t)
	c := e.acquire(e.provider(e.config("a")))
	e.store.Queue(storetest.OpUpdate, storetest.Fault{Err: storetest.Unknown(storetest.OpUpdate, "")})
	e.advance(4*time.Second, c)
	if !c.Valid() || c.Err() != nil {
		t.Fatalf("claim lost after an ambiguous write that did not land: %v", c.Err())
	}
}

// A write that landed after an answer was lost, found by a later 412.
func TestPreconditionFailedAfterPendingWriteLanded(t *testing.T) {
	e := newEnv(t)
	c := e.acquire(e.provider(e.config("a")))
	// First attempt lands but answers unknown; the read-back fails too, so the
	// retry CASes the old ETag and gets 412: the read-back of that finds ours.
	e.store.Queue(storetest.OpUpdate, storetest.Fault{Landed: true})
	e.store.Queue(storetest.OpGet, storetest.Fault{Err: errors.New("read timeout")})
	e.advance(4*time.Second, c)
	if !c.Valid() || c.Err() != nil {
		t.Fatalf("claim lost: %v", c.Err())
	}
}

func TestConflictAndMissingObjectLoseAtOnce(t *testing.T) {
	for name, breakIt := range map[string]func(e *env, id int){
		"409 conflict": func(e *env, _ int) {
			e.store.Queue(storetest.OpUpdate, storetest.Fault{Err: lease.ErrPreconditionFailed})
		},
		"404 deleted": func(e *env, id int) { e.mem.Delete(lease.RecordKey(id)) },
		"taken": func(e *env, id int) {
			r, m := e.record(id)
			r.Holder, r.Version, r.WriteID = "thief", r.Version+1, lease.NewWriteID()
			body, _ := r.Encode()
			if _, err := e.mem.Update(context.Background(), lease.RecordKey(id), body, m.ETag); err != nil {
				panic(err)
			}
		},
	} {
		t.Run(name, func(t *testing.T) {
			e := newEnv(t)
			c := e.acquire(e.provider(e.config("a")))
			breakIt(e, c.NodeID())
			e.clk.Advance(0)
			e.advance(time.Second, c)
			waitDone(t, c)
			if !errors.Is(c.Err(), ErrLeaseLost) || c.Valid() {
				t.Fatalf("Err = %v valid %v, want lost and fenced", c.Err(), c.Valid())
			}
			if d := e.clk.Now().Sub(start); d > time.Second {
				t.Fatalf("lost after %v, want at the first renewal", d)
			}
		})
	}
}

func TestCorruptObjectIsSkippedAndNeverOverwritten(t *testing.T) {
	e := newEnv(t)
	cfg := e.config("a")
	cfg.ClusterSize, cfg.Order = 2, OrderLowestFirst
	garbage := []byte(`{"schema":1,"nodeId":0,"version":"x"}`)
	e.acquire(e.provider(cfg)).Close(context.Background()) // bootstrap
	e.mem.Put(lease.RecordKey(0), garbage)
	e.clk.Advance(time.Hour)
	c := e.acquire(e.provider(cfg))
	if c.NodeID() != 1 {
		t.Fatalf("took node %d, want 1 (0 is corrupt)", c.NodeID())
	}
	cfg.TaskID = "b"
	if _, err := e.provider(cfg).Acquire(context.Background()); !errors.Is(err, ErrClusterFull) {
		t.Fatalf("with the only other ID corrupt: %v, want ErrClusterFull", err)
	}
	body, _, _ := e.mem.Get(context.Background(), lease.RecordKey(0))
	if string(body) != string(garbage) {
		t.Fatalf("corrupt object overwritten: %s", body)
	}
}

func TestOverlongLeaseIsAnAnomaly(t *testing.T) {
	e := newEnv(t)
	cfg := e.config("a")
	cfg.ClusterSize = 1
	e.acquire(e.provider(cfg)).Close(context.Background())
	r, m := e.record(0)
	r.Holder, r.LeaseMillis, r.WriteID = "greedy", 3_600_000, lease.NewWriteID()
	body, _ := r.Encode()
	_, _ = e.mem.Update(context.Background(), lease.RecordKey(0), body, m.ETag)
	e.clk.Advance(2 * time.Hour)
	if _, err := e.provider(cfg).Acquire(context.Background()); !errors.Is(err, ErrClusterFull) {
		t.Fatalf("lease stating 1 h with MaxLeaseDuration 10 s was taken: %v", err)
	}
}

func TestReleaseKeepsVersionAndLowersReservation(t *testing.T) {
	e := newEnv(t)
	cfg := e.config("a")
	cfg.ClusterSize = 1
	issued := start.UnixMilli() + 1500
	c, err := e.provider(cfg).Acquire(context.Background(), WithIssuedFunc(func() int64 { return issued }))
	if err != nil {
		t.Fatal(err)
	}
	e.advance(2*time.Second, c)
	e.settle(c)
	updates := e.mem.Count(storetest.OpUpdate)
	if err := c.Close(context.Background()); err != nil {
		t.Fatalf("Close: %v", err)
	}
	if err := c.Close(context.Background()); err != nil {
		t.Fatalf("second Close: %v", err)
	}
	if !errors.Is(c.Err(), ErrClosed) || c.Valid() || !isDone(c) {
		t.Fatalf("after Close: err %v valid %v done %v", c.Err(), c.Valid(), isDone(c))
	}
	if u := e.mem.Count(storetest.OpUpdate) - updates; u != 1 {
		t.Fatalf("Close made %d writes, want 1", u)
	}
	r, _ := e.record(0)
	if r.Holder != "" || r.Version != 1 || r.ReservedUntilMs != issued {
		t.Fatalf("released record %+v: want free, version 1, reservation %d", r, issued)
	}
	e.advance(5 * time.Second)
	cfg.TaskID = "b"
	next := e.acquire(e.provider(cfg))
	if next.Version() != 2 || next.Floor() != issued {
		t.Fatalf("successor version %d floor %d; want 2, %d", next.Version(), next.Floor(), issued)
	}
}

func TestReleaseIsImmediatelyTakeable(t *testing.T) {
	e := newEnv(t)
	cfg := e.config("a")
	cfg.ClusterSize = 1
	c := e.acquire(e.provider(cfg))
	_ = c.Close(context.Background())
	cfg.TaskID = "b"
	n := e.acquire(e.provider(cfg))
	if n.Version() != 2 || n.Floor() != c.Reservation() || n.TookOverExpired() {
		t.Fatalf("successor version %d floor %d expired %v, want 2, the unchanged reservation %d, false",
			n.Version(), n.Floor(), n.TookOverExpired(), c.Reservation())
	}
}

func TestObserveHigherVersionFences(t *testing.T) {
	e := newEnv(t)
	c := e.acquire(e.provider(e.config("a")))
	c.ObserveVersion(c.Version())
	if !c.Valid() {
		t.Fatalf("own version fenced the claim")
	}
	c.ObserveVersion(c.Version() + 1)
	if c.Valid() || !errors.Is(c.Err(), ErrLeaseLost) {
		t.Fatalf("higher version seen: valid %v err %v", c.Valid(), c.Err())
	}
}

func TestManifestMismatchNamesBothLayouts(t *testing.T) {
	e := newEnv(t)
	e.acquire(e.provider(e.config("a")))
	cfg := e.config("b")
	cfg.Layout.EpochMs = 42
	_, err := e.provider(cfg).Acquire(context.Background())
	if !errors.Is(err, ErrManifestMismatch) || !strings.Contains(err.Error(), "epoch 1735689600000") || !strings.Contains(err.Error(), "epoch 42") {
		t.Fatalf("error = %v, want ErrManifestMismatch naming both epochs", err)
	}
}

// TestRangeOfItsOwn: a cluster with FirstNodeID hands out its own range of
// node IDs, creates and lists no lease object outside it, and refuses a task
// configured with another range, naming both.
func TestRangeOfItsOwn(t *testing.T) {
	e := newEnv(t)
	var held []int
	for _, task := range []string{"a", "b", "c"} {
		cfg := e.config(task)
		cfg.ClusterSize, cfg.FirstNodeID = 3, 1021
		c := e.acquire(e.provider(cfg))
		held = append(held, c.NodeID())
	}
	slices.Sort(held)
	if !slices.Equal(held, []int{1021, 1022, 1023}) {
		t.Fatalf("held node IDs %v, want 1021..1023", held)
	}
	cfg := e.config("d")
	cfg.ClusterSize, cfg.FirstNodeID = 3, 1021
	if _, err := e.provider(cfg).Acquire(context.Background()); !errors.Is(err, ErrClusterFull) {
		t.Fatalf("a fourth task: %v, want ErrClusterFull", err)
	}
	l, err := e.mem.List(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range l.Objects {
		if id, ok := lease.ParseRecordKey(o.Key); ok && (id < 1021 || id > 1023) {
			t.Errorf("lease object %s outside the range 1021..1023", o.Key)
		}
	}
	cfg = e.config("e")
	cfg.ClusterSize = 3
	_, err = e.provider(cfg).Acquire(context.Background())
	if !errors.Is(err, ErrManifestMismatch) || !strings.Contains(err.Error(), "1021..1023") || !strings.Contains(err.Error(), "FirstNodeID 0") {
		t.Fatalf("a task without the range: %v, want ErrManifestMismatch naming both", err)
	}
}

func TestCorruptManifestRefusesToStart(t *testing.T) {
	e := newEnv(t)
	e.mem.Put(lease.ManifestKey, []byte("not json"))
	if _, err := e.provider(e.config("a")).Acquire(context.Background()); !errors.Is(err, lease.ErrCorrupt) {
		t.Fatalf("error = %v, want ErrCorrupt", err)
	}
}

func TestManifestClusterSizeWinsShrinkAndGrow(t *testing.T) {
	e := newEnv(t)
	cfg := e.config("a")
	cfg.ClusterSize = 2
	e.acquire(e.provider(cfg))
	cfg.TaskID, cfg.ClusterSize = "b", 8 // configured bigger: the manifest's 2 wins
	e.acquire(e.provider(cfg))
	cfg.TaskID = "c"
	if _, err := e.provider(cfg).Acquire(context.Background()); !errors.Is(err, ErrClusterFull) {
		t.Fatalf("third task on a 2-ID manifest: %v, want ErrClusterFull", err)
	}
	// Grow: rewrite the manifest (as nodeidctl resize does); missing IDs appear.
	body, meta, _ := e.mem.Get(context.Background(), lease.ManifestKey)
	m, _ := lease.DecodeManifest(body)
	m.ClusterSize, m.WriteID = 3, lease.NewWriteID()
	body, _ = m.Encode()
	if _, err := e.mem.Update(context.Background(), lease.ManifestKey, body, meta.ETag); err != nil {
		t.Fatal(err)
	}
	c := e.acquire(e.provider(cfg))
	if c.NodeID() != 2 || c.Version() != 1 {
		t.Fatalf("after growing to 3: node %d version %d, want 2, 1", c.NodeID(), c.Version())
	}
	// Shrink to 1: nobody new gets ID 1 or 2, even once they are free.
	_ = c.Close(context.Background())
	body, meta, _ = e.mem.Get(context.Background(), lease.ManifestKey)
	m, _ = lease.DecodeManifest(body)
	m.ClusterSize, m.WriteID = 1, lease.NewWriteID()
	body, _ = m.Encode()
	_, _ = e.mem.Update(context.Background(), lease.ManifestKey, body, meta.ETag)
	cfg.TaskID = "d"
	if _, err := e.provider(cfg).Acquire(context.Background()); !errors.Is(err, ErrClusterFull) {
		t.Fatalf("after shrinking to 1: %v, want ErrClusterFull", err)
	}
}

// A lease object deleted from a filled cluster is neither taken nor recreated,
// however long one waits: its last holder may have issued timestamps up to a
// reservation that nothing left in the bucket bounds. Acquire takes another
// free ID, reports the deleted one as an anomaly once, and fails with
// ErrClusterFull when none is left. Before, it was recreated held with the
// version gossip knew and a floor from the recreator's wall clock, and taken
// after the maximum lease.
func TestDeletedObjectIsLeftOutNotRecreated(t *testing.T) {
	e := newEnv(t)
	cfg := e.config("a")
	cfg.ClusterSize = 2
	if _, err := Init(context.Background(), e.store, cfg); err != nil {
		t.Fatal(err)
	}
	e.mem.Delete(lease.RecordKey(0))
	cfg.Peers = staticPeers{0: 7}
	cfg.Order = OrderLowestFirst
	var anomalies anomalyCount
	cfg.Observer = &anomalies
	p := e.provider(cfg)
	c := e.acquire(p)
	if c.NodeID() != 1 {
		t.Fatalf("took node %d, want 1: the deleted node 0 is left out", c.NodeID())
	}
	cfg.TaskID, cfg.Observer = "b", nil
	for range 3 {
		if _, err := e.provider(cfg).Acquire(context.Background()); !errors.Is(err, ErrClusterFull) {
			t.Fatalf("Acquire with only the deleted ID left: %v, want ErrClusterFull", err)
		}
		e.advance(cfg.MaxLeaseDuration+5*time.Second, c) // a renews node 1 meanwhile
	}
	if _, _, err := e.mem.Get(context.Background(), lease.RecordKey(0)); !errors.Is(err, lease.ErrNotFound) {
		t.Fatalf("the deleted object was recreated (%v)", err)
	}
	if n := anomalies.Load(); n != 1 {
		t.Fatalf("%d anomalies reported by a's provider, want the deletion once", n)
	}
}

// A lease object that an older nodeid recreated held by RecreatedHolder has a
// floor from its recreator's wall clock: it is an anomaly, never taken, even
// once expired.
func TestRecreatedObjectIsNotTaken(t *testing.T) {
	e := newEnv(t)
	cfg := e.config("a")
	cfg.ClusterSize = 1
	if _, err := Init(context.Background(), e.store, cfg); err != nil {
		t.Fatal(err)
	}
	rec := lease.Record{NodeID: 0, Holder: RecreatedHolder, Version: 3, LeaseMillis: cfg.MaxLeaseDuration.Milliseconds(),
		ReservedUntilMs: e.clk.Wall().UnixMilli(), WriteID: lease.NewWriteID()}
	body, err := rec.Encode()
	if err != nil {
		t.Fatal(err)
	}
	e.mem.Put(lease.RecordKey(0), body)
	e.clk.Advance(2 * cfg.MaxLeaseDuration)
	if _, err := e.provider(cfg).Acquire(context.Background()); !errors.Is(err, ErrClusterFull) {
		t.Fatalf("Acquire of an expired recreated object: %v, want ErrClusterFull", err)
	}
}

// anomalyCount counts Observer.Anomaly events.
type anomalyCount struct {
	NopObserver
	atomic.Int64
}

func (a *anomalyCount) Anomaly(string, error) { a.Add(1) }

// Before the cluster is filled, a missing object is never-created and free,
// unless gossip has seen a version of its ID: then it was deleted, perhaps
// while held, and is neither taken nor created by the fill, which still marks
// the cluster filled (a deleted object is missing either way).
func TestDeletedBeforeFilledIsNotTakenWhenGossipKnowsIt(t *testing.T) {
	e := newEnv(t)
	cfg := e.config("a")
	cfg.ClusterSize = 1
	a := e.acquire(e.provider(cfg)) // creates its object held: the cluster is not filled
	e.mem.Delete(lease.RecordKey(0))

	cfg.TaskID = "b"
	cfg.Peers = staticPeers{0: a.Version()} // a advertises its claim
	cfg.BootstrapWindow = time.Hour         // no fill yet
	if c, err := e.provider(cfg).Acquire(context.Background()); !errors.Is(err, ErrClusterFull) {
		t.Fatalf("Acquire = %v, %v; want ErrClusterFull: the deleted object is held by a, as gossip says", c, err)
	}
	if _, _, err := e.mem.Get(context.Background(), lease.RecordKey(0)); !errors.Is(err, lease.ErrNotFound) {
		t.Fatalf("the deleted object is there before the fill (%v)", err)
	}

	cfg.BootstrapWindow = 0
	e.fill(cfg)
	if _, _, err := e.mem.Get(context.Background(), lease.RecordKey(0)); !errors.Is(err, lease.ErrNotFound) {
		t.Fatalf("the fill recreated the deleted object (%v)", err)
	}
}

type staticPeers map[int]int64

func (s staticPeers) KnownNodes() map[int]int64 { return s }

// Close while a renewal landed but its answer was lost (and its read-back
// failed): the release's CAS meets 412, the read-back finds the renewal, which
// is adopted, and the release must then be written on the new ETag: the object
// ends free, not still held.
func TestReleaseAfterAPendingRenewalLanded(t *testing.T) {
	e := newEnv(t)
	c := e.acquire(e.provider(e.config("a")))
	e.store.Queue(storetest.OpUpdate, storetest.Fault{Landed: true})
	e.store.Queue(storetest.OpGet, storetest.Fault{Err: errors.New("read timeout")})
	e.advance(time.Second, c) // the renewal lands, its answer and read-back fail: pending
	pending := len(c.pending) // the loop sleeps (advance settles it)
	if pending != 1 {
		t.Fatalf("%d pending writes, want the landed renewal", pending)
	}
	if err := c.Close(context.Background()); err != nil {
		t.Fatalf("Close: %v", err)
	}
	if r, _ := e.record(c.NodeID()); r.Holder != "" {
		t.Fatalf("Close reported the release done, but the object is still held: %+v", r)
	}
}

// A renewal that lands after the fence fell (sent before the renew deadline,
// held on the wire): with LossGrace NoLossGrace it must not make the claim
// valid again (once Valid was false, the claim is lost, and a broker's /health
// never goes from 503 back to 200), as before jeopardy existed. With the
// default LossGrace it landed on the claim's own last ETag, so nobody wrote in
// between: the claim recovers, with the same version, valid until the fence
// of that write's send time, and the recovery is reported.
func TestRenewalLandingAfterTheFence(t *testing.T) {
	for _, tt := range []struct {
		name      string
		grace     time.Duration
		recovered bool
	}{{"no loss grace", NoLossGrace, false}, {"default loss grace", 0, true}} {
		t.Run(tt.name, func(t *testing.T) {
			e := newEnv(t)
			rec := &recorder{}
			cfg := e.config("a")
			cfg.Observer, cfg.LossGrace = rec, tt.grace
			c := e.acquire(e.provider(cfg))
			// Every renewal is held on the wire, and every read-back fails:
			// the renewals give up at the 2 s renew deadline.
			held := true
			var mu sync.Mutex
			e.store.SetInjector(func(op storetest.Op, key string) storetest.Fault {
				mu.Lock()
				defer mu.Unlock()
				switch {
				case held && op == storetest.OpUpdate:
					return storetest.Fault{Late: true}
				case held && op == storetest.OpGet:
					return faultErr(errors.New("read back failed"))
				}
				return storetest.Fault{}
			})
			fellAt := c.ValidUntil()
			e.advance(fellAt.Sub(e.clk.Now())+200*time.Millisecond, c) // past the fence
			if c.Valid() {
				t.Fatal("valid after its fence fell")
			}
			mu.Lock()
			held = false
			mu.Unlock()
			if n, err := e.store.LandLate(); n != 1 || err != nil { // the first renewal lands now, on the claim's ETag
				t.Fatalf("%d held renewals landed (%v), want 1", n, err)
			}
			e.advance(time.Second, c)
			if got := c.Valid(); got != tt.recovered {
				t.Fatalf("valid %v (err %v) after the renewal landed; want %v", got, c.Err(), tt.recovered)
			}
			if !tt.recovered {
				if !isDone(c) || !errors.Is(c.Err(), ErrLeaseLost) {
					t.Fatalf("done %v, err %v: want lost", isDone(c), c.Err())
				}
				return
			}
			if isDone(c) || c.Version() != 1 || !slices.Contains(rec.list(), "recovered") {
				t.Fatalf("done %v, version %d, events %v: want recovered with version 1", isDone(c), c.Version(), rec.list())
			}
		})
	}
}

// A successor's version gossiped while Close is releasing (the release landed,
// its answer is late) is not a loss: Close ends the claim as closed.
func TestHigherVersionDuringCloseIsNotALoss(t *testing.T) {
	e := newEnv(t)
	c := e.acquire(e.provider(e.config("a")))
	e.store.SetInjector(func(op storetest.Op, key string) storetest.Fault {
		if op == storetest.OpUpdate {
			c.ObserveVersion(c.Version() + 1) // the successor's gossip, while the release is in flight
		}
		return storetest.Fault{}
	})
	if err := c.Close(context.Background()); err != nil {
		t.Fatalf("Close: %v", err)
	}
	if !errors.Is(c.Err(), ErrClosed) {
		t.Fatalf("Err after Close = %v, want ErrClosed", c.Err())
	}
}
