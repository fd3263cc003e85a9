package nodeid

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nodeid/nodeid/lease"
	"github.com/nodeid/nodeid/lease/storetest"
)

// closeAsync runs c.Close(ctx) in the background.
func closeAsync(ctx context.Context, c *Claim) <-chan error {
	ch := make(chan error, 1)
	go func() { ch <- c.Close(ctx) }()
	return ch
}

// waitCloseResult returns Close's result, failing the test if it does not come.
func waitCloseResult(t *testing.T, ch <-chan error) error {
	t.Helper()
	select {
	case err := <-ch:
		return err
	case <-time.After(10 * time.Second):
		t.Fatalf("Close did not return")
		return nil
	}
}

// startReleaseAnsweredLate closes a's claim on node 0 (a cluster of one) with
// the release landing but its answer lost, and its read-back failing: Close
// then waits (on the fake clock) before writing the release again. It returns
// when Close sleeps, with Close's result channel.
func startReleaseAnsweredLate(t *testing.T, e *env, a *Claim) <-chan error {
	t.Helper()
	e.store.Queue(storetest.OpUpdate, storetest.Fault{Landed: true})
	e.store.Queue(storetest.OpGet, faultErr(errors.New("read timeout")))
	ch := closeAsync(context.Background(), a)
	<-a.loopDone // the renewal loop has stopped sleeping and exited
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := e.clk.WaitForSleepers(ctx, 1); err != nil {
		t.Fatalf("Close's retry never waited: %v", err)
	}
	return ch
}

// A release that landed with its answer lost, retried after a successor took
// the free ID, meets 412: the read-back shows the successor's version within
// our lease, which proves the successor took our free record. Close reports
// the release done, not a loss (demo-broker exits 0 after SIGTERM).
func TestReleaseAnsweredLateThenTakenIsReleased(t *testing.T) {
	e := newEnv(t)
	cfg := e.config("a")
	cfg.ClusterSize = 1
	rec := &recorder{}
	cfg.Observer = rec
	a := e.acquire(e.provider(cfg))
	closed := startReleaseAnsweredLate(t, e, a)

	cfg.TaskID, cfg.Observer = "b", NopObserver{}
	b := e.acquire(e.provider(cfg)) // takes the free record the release left
	if b.NodeID() != 0 || b.Version() != a.Version()+1 {
		t.Fatalf("successor took node %d version %d, want 0 version %d", b.NodeID(), b.Version(), a.Version()+1)
	}
	e.clk.Advance(200 * time.Millisecond) // the release's retry: 412, read-back shows b
	if err := waitCloseResult(t, closed); err != nil {
		t.Fatalf("Close = %v, want nil: the release landed and b took it free", err)
	}
	if !errors.Is(a.Err(), ErrClosed) {
		t.Fatalf("Err = %v, want ErrClosed", a.Err())
	}
	if got := rec.list(); got[len(got)-1] != "released" {
		t.Fatalf("events %v, want the last one released", got)
	}
	if r, _ := e.record(0); r.Holder != "b" {
		t.Fatalf("record %+v, want b's", r)
	}
}

// The same, but the retry's read-back comes only after our lease could have
// expired on the store's clock: the successor may have taken it expired, the
// release cannot be proven, and Close reports the loss.
func TestReleaseUnprovenPastTheLeaseIsALoss(t *testing.T) {
	e := newEnv(t)
	cfg := e.config("a")
	cfg.ClusterSize = 1
	a := e.acquire(e.provider(cfg))
	closed := startReleaseAnsweredLate(t, e, a)
	cfg.TaskID = "b"
	e.acquire(e.provider(cfg))
	e.clk.Advance(cfg.LeaseDuration - cfg.SafetyMargin) // the retry runs this late
	if err := waitCloseResult(t, closed); !errors.Is(err, ErrLeaseLost) {
		t.Fatalf("Close = %v, want ErrLeaseLost: past the lease, a take of the expired lease cannot be ruled out", err)
	}
}

// A release that landed with its answer lost and is found by the retry's
// read-back is the release: Close adopts it and writes nothing more (a second
// release write could meet a successor's take and report a loss).
func TestLandedReleaseFoundByReadBackIsNotWrittenAgain(t *testing.T) {
	e := newEnv(t)
	cfg := e.config("a")
	cfg.ClusterSize = 1
	a := e.acquire(e.provider(cfg))
	var updates atomic.Int32 // updates after the first (queued) one
	e.store.SetInjector(func(op storetest.Op, _ string) storetest.Fault {
		if op == storetest.OpUpdate {
			updates.Add(1)
		}
		return storetest.Fault{}
	})
	closed := startReleaseAnsweredLate(t, e, a)
	e.clk.Advance(200 * time.Millisecond)
	if err := waitCloseResult(t, closed); err != nil {
		t.Fatalf("Close = %v", err)
	}
	r, _ := e.record(0)
	if n := updates.Load(); n != 1 || !r.Free() || r.WriteID != a.rec.WriteID {
		t.Fatalf("%d more updates after the landed release (want 1: the retry that met 412); record %+v, adopted writeId %s",
			n, r, a.rec.WriteID)
	}
}

// hangingStore blocks the first Update after arm until unblock is closed,
// ignoring its context: a store call that hangs.
type hangingStore struct {
	lease.Store
	armed   atomic.Bool
	entered chan struct{}
	unblock chan struct{}
}

func (h *hangingStore) Update(ctx context.Context, key string, body []byte, etag string) (lease.Meta, error) {
	if h.armed.CompareAndSwap(true, false) {
		close(h.entered)
		<-h.unblock
		return lease.Meta{}, storetest.Unknown(storetest.OpUpdate, key)
	}
	return h.Store.Update(ctx, key, body, etag)
}

// Close is bounded by its context even while the renewal loop is stuck in a
// store call: it returns when ctx ends, saying the release was not confirmed,
// with the claim fenced and ended.
func TestCloseIsBoundedByCtxWhileARenewalHangs(t *testing.T) {
	e := newEnv(t)
	hs := &hangingStore{Store: e.store, entered: make(chan struct{}), unblock: make(chan struct{})}
	c := e.acquire(e.providerOn(hs, e.config("a")))
	hs.armed.Store(true)
	e.clk.Advance(time.Second) // the renewal is due: it hangs in Update
	<-hs.entered
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	closed := closeAsync(ctx, c)
	var err error
	select {
	case err = <-closed:
	case <-time.After(10 * time.Second):
		close(hs.unblock)
		<-closed
		t.Fatalf("Close(ctx with a 50 ms timeout) still waiting for the renewal loop after 10 s")
	}
	close(hs.unblock)
	<-c.loopDone
	if !errors.Is(err, context.DeadlineExceeded) || !strings.Contains(err.Error(), "not confirmed") {
		t.Fatalf("Close = %v, want an error saying the release was not confirmed", err)
	}
	if c.Valid() || !errors.Is(c.Err(), ErrClosed) {
		t.Fatalf("after Close: valid %v, Err %v; want fenced and closed", c.Valid(), c.Err())
	}
	if r, _ := e.record(c.NodeID()); r.Holder != "a" {
		t.Fatalf("record %+v, want still held by a (left to expire)", r)
	}
}

// TestReserveClockCoversAnotherClock: issuers outside the claim's generator
// (an application stamping with the host's clock, WithReserveClock)
// make every later write reserve above their clock too; and a release whose
// issued function reports a timestamp above the reservation (that clock
// stepped past it) raises the free record's reservation to it, so that a
// successor's floor covers it.
func TestReserveClockCoversAnotherClock(t *testing.T) {
	e := newEnv(t)
	cfg := e.config("a")
	ahead := time.Hour
	var above atomic.Int64 // the issued timestamp the test sets below
	c, err := e.provider(cfg).Acquire(context.Background(),
		WithReserveClock(func() time.Time { return e.clk.Wall().Add(ahead) }),
		WithIssuedFunc(above.Load))
	if err != nil {
		t.Fatal(err)
	}
	e.advance(cfg.RenewInterval, c)
	rec, _ := e.record(c.NodeID())
	if want := e.clk.Wall().Add(ahead + cfg.LeaseDuration - cfg.RenewInterval).UnixMilli(); rec.ReservedUntilMs < want {
		t.Fatalf("renewed reservation %d, want at least %d (the other clock plus the lease)", rec.ReservedUntilMs, want)
	}
	above.Store(rec.ReservedUntilMs + 5000)
	if err := c.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	if rec, _ := e.record(c.NodeID()); !rec.Free() || rec.ReservedUntilMs != above.Load() {
		t.Fatalf("released record %+v, want free with reservation %d", rec, above.Load())
	}
}
