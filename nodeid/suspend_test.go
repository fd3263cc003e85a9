package nodeid

import (
	"context"
	"errors"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nodeid/nodeid/internal/testkit/fakeclock"
	"github.com/nodeid/nodeid/lease"
	"github.com/nodeid/nodeid/lease/storetest"
)

// suspendingClock is a fake clock whose monotonic readings stand still while
// the "host" is suspended, as Go's monotonic clock does on Linux, and whose
// suspend-counting reading does not.
type suspendingClock struct {
	*fakeclock.Clock
	suspended atomic.Int64 // ns spent suspended
}

func (c *suspendingClock) SuspendReading(now time.Time) int64 {
	return now.UnixNano() + c.suspended.Load()
}

// suspend suspends the host for d: only the suspend-counting reading moves.
func (c *suspendingClock) suspend(d time.Duration) { c.suspended.Add(int64(d)) }

// TestFenceFallsAfterSuspend: a host suspended for longer than the time left
// on the fence stops issuing the moment it resumes, although its monotonic
// clock says no time passed. Before the fence counted suspended time, Valid
// stayed true until the next failed renewal. Then the claim is in jeopardy:
// with LossGrace NoLossGrace the next renewal, even if it lands, does not
// revive it; with the default, a renewal on its own last ETag that lands
// (nobody took the lease meanwhile) recovers it, and one refused (another
// task took it) ends it lost.
func TestFenceFallsAfterSuspend(t *testing.T) {
	for _, tt := range []struct {
		name      string
		grace     time.Duration
		taken     bool // another task takes the lease during the suspension
		recovered bool
	}{
		{"no loss grace", NoLossGrace, false, false},
		{"nobody took it", 0, false, true},
		{"another took it", 0, true, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			e := newEnv(t)
			clk := &suspendingClock{Clock: e.clk}
			cfg := e.config("a")
			cfg.Clock, cfg.LossGrace, cfg.ClusterSize = clk, tt.grace, 1
			c := e.acquire(e.provider(cfg))
			e.advance(500*time.Millisecond, c)
			if !c.Valid() {
				t.Fatal("not valid before the suspend")
			}
			clk.suspend(time.Hour)
			if c.Valid() {
				t.Fatal("still valid on resume after an hour suspended")
			}
			if tt.taken { // the record, rewritten by another task while this host slept
				r, m := e.record(c.NodeID())
				r.Holder, r.Version, r.WriteID = "other", r.Version+1, lease.NewWriteID()
				body, _ := r.Encode()
				if _, err := e.mem.Update(context.Background(), lease.RecordKey(c.NodeID()), body, m.ETag); err != nil {
					t.Fatal(err)
				}
			}
			e.advance(5*time.Second, c) // the renewal runs
			switch {
			case tt.recovered && (!c.Valid() || isDone(c)):
				t.Fatalf("valid %v, err %v: want recovered by the renewal that landed", c.Valid(), c.Err())
			case !tt.recovered:
				waitDone(t, c)
				if c.Valid() || !errors.Is(c.Err(), ErrLeaseLost) {
					t.Fatalf("valid %v, err %v: want lost, never valid again", c.Valid(), c.Err())
				}
			}
		})
	}
}

// TestShortSuspendKeepsTheClaim: a suspension shorter than the time left on
// the fence changes nothing.
func TestShortSuspendKeepsTheClaim(t *testing.T) {
	e := newEnv(t)
	clk := &suspendingClock{Clock: e.clk}
	cfg := e.config("a")
	cfg.Clock = clk
	c := e.acquire(e.provider(cfg))
	clk.suspend(100 * time.Millisecond)
	e.advance(5*time.Second, c)
	if !c.Valid() || c.Err() != nil {
		t.Fatalf("valid %v, err %v after a short suspend and renewals", c.Valid(), c.Err())
	}
}

// TestStepBackAfterSuspendKeepsTheSuspension: a suspension shorter than the
// time left on the fence brings the fence nearer by its length (the
// real-time deadline comes first); a step back of the real-time clock after
// the resume (NTP correcting it) must not put the fence off again, though
// the monotonic clock never saw the suspension. Cut off from its store, the
// claim must stop at t0 + LeaseDuration - SafetyMargin of real time.
func TestStepBackAfterSuspendKeepsTheSuspension(t *testing.T) {
	e := newEnv(t)
	clk := &suspendingClock{Clock: e.clk}
	cfg := e.config("a")
	cfg.Clock, cfg.ClusterSize = clk, 1
	c := e.acquire(e.provider(cfg)) // sent at 0: the fence at 2.5 s of real time
	e.advance(500*time.Millisecond, c)
	e.store.Kill(nil) // no renewal lands from here on
	clk.suspend(time.Second)
	if !c.Valid() {
		t.Fatal("not valid after 1.5 s of real time")
	}
	clk.suspend(-time.Second) // the real-time clock steps back by the suspension
	e.advance(900*time.Millisecond, c)
	if !c.Valid() {
		t.Fatal("not valid after 2.4 s of real time")
	}
	e.advance(200*time.Millisecond, c)
	if c.Valid() {
		t.Fatal("valid after 2.6 s of real time, past the fence: the step back put it off")
	}
}

// stampedSuspendClock is a suspendingClock whose readings carry their
// suspend-counting reading, as the system clock's readings carry the
// real-time one: SuspendReading of a reading taken before a suspension does
// not count it. The count rides in the reading's Location, which
// differences and comparisons ignore.
type stampedSuspendClock struct {
	*fakeclock.Clock
	suspended atomic.Int64 // ns spent suspended
}

func (c *stampedSuspendClock) Now() time.Time {
	return c.Clock.Now().In(time.FixedZone(strconv.FormatInt(c.suspended.Load(), 10), 0))
}

func (c *stampedSuspendClock) SuspendReading(now time.Time) int64 {
	ns, err := strconv.ParseInt(now.Location().String(), 10, 64)
	if err != nil {
		panic("stampedSuspendClock: a reading it did not take: " + now.String())
	}
	return now.UnixNano() + ns
}

// TestWriteSentBeforeASuspensionIsNoRecovery: a renewal sent just before
// the host is suspended for longer than the lease lands, and its answer
// comes after the resume. Its fence on the real-time reading passed during
// the suspension, so the claim stays fenced (it issues nothing until a write
// sent after the resume lands): that write is no recovery, and is not
// counted as one.
func TestWriteSentBeforeASuspensionIsNoRecovery(t *testing.T) {
	e := newEnv(t)
	clk := &stampedSuspendClock{Clock: e.clk}
	cfg := e.config("a")
	cfg.Clock, cfg.ClusterSize = clk, 1
	var recovered atomic.Int64
	cfg.Observer = recoveryCounter{n: &recovered}
	c := e.acquire(e.provider(cfg))
	// The next renewal lands and its answer is lost; the host is suspended
	// for an hour while it is in flight. Everything after it fails.
	var renewals atomic.Int64
	e.store.SetInjector(func(op storetest.Op, key string) storetest.Fault {
		if op != storetest.OpUpdate {
			return storetest.Fault{}
		}
		if renewals.Add(1) == 1 {
			clk.suspended.Add(int64(time.Hour))
			return storetest.Fault{Landed: true}
		}
		return storetest.Fault{Err: storetest.ErrInjected}
	})
	e.advance(1500*time.Millisecond, c) // the renewal at 1 s, its read-back
	if renewals.Load() == 0 {
		t.Fatal("setup: no renewal was sent")
	}
	if st := c.Status(); c.Valid() || st.Recoveries != 0 || recovered.Load() != 0 {
		t.Fatalf("valid %v, %d recoveries (observer %d) after a write sent before the suspension landed: want fenced, none",
			c.Valid(), st.Recoveries, recovered.Load())
	}
}

// recoveryCounter is an Observer that counts recoveries.
type recoveryCounter struct {
	NopObserver
	n *atomic.Int64
}

func (o recoveryCounter) Recovered(int, time.Duration) { o.n.Add(1) }

// TestReleaseReadBackCountsTheSuspension: freedByOurRelease proves
// that a successor took our *free* record (so our release landed) from the
// read-back's answer arriving less than LeaseDuration - SafetyMargin after
// our last held write was sent, on the monotonic clock alone. A host
// suspended between the release's send and its read-back (the claim's fence
// counts suspensions: Valid reads the real-time clock too) breaks the proof:
// an hour passed in real time, the held record expired on the store's clock
// and another task took it, while our release never landed. Close must then
// report the loss (docs/evidence/design.md 7.5: "Past that instant ... Close reports
// ErrLeaseLost"), not a release.
func TestReleaseReadBackCountsTheSuspension(t *testing.T) {
	e := newEnv(t)
	clk := &suspendingClock{Clock: e.clk}
	cfg := e.config("a")
	cfg.Clock, cfg.ClusterSize = clk, 1
	c := e.acquire(e.provider(cfg))
	id := c.NodeID()

	// The release's write leaves and its answer is lost; it did not land.
	e.store.Queue(storetest.OpUpdate, storetest.Fault{Err: storetest.Unknown(storetest.OpUpdate, lease.RecordKey(id))})
	// Before its read-back the host is suspended for an hour; meanwhile the
	// held record expired on the store's clock and another task took it.
	var once atomic.Bool
	e.store.SetInjector(func(op storetest.Op, key string) storetest.Fault {
		if op == storetest.OpGet && once.CompareAndSwap(false, true) {
			clk.suspend(time.Hour)
			r, m, err := e.mem.Get(context.Background(), key)
			if err != nil {
				t.Error(err)
				return storetest.Fault{}
			}
			rec, _ := lease.DecodeRecord(r, id)
			if rec.Free() {
				t.Error("setup: the release landed")
			}
			rec.Holder, rec.Version, rec.WriteID = "other", rec.Version+1, lease.NewWriteID()
			body, _ := rec.Encode()
			if _, err := e.mem.Update(context.Background(), key, body, m.ETag); err != nil {
				t.Error(err)
			}
		}
		return storetest.Fault{}
	})
	err := c.Close(context.Background())
	if r, _ := e.record(id); r.Free() || r.Holder != "other" {
		t.Fatalf("setup: record %+v", r)
	}
	if !errors.Is(err, ErrLeaseLost) {
		t.Fatalf("Close = %v: reported released, but our release never landed: another task took the held record after it expired during the suspension", err)
	}
}
