package nodeid

import (
	"context"
	"errors"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nodeid/nodeid/lease"
	"github.com/nodeid/nodeid/lease/storetest"
)

// cutStore makes every write and read of e.store fail as unknown while cut
// is set: a store outage.
func (e *env) cutStore(cut *atomic.Bool) {
	e.store.SetInjector(func(op storetest.Op, key string) storetest.Fault {
		if cut.Load() && (op == storetest.OpUpdate || op == storetest.OpGet) {
			return storetest.Fault{Err: storetest.Unknown(op, key)}
		}
		return storetest.Fault{}
	})
}

// intoJeopardy cuts the store and advances the clock until c is in jeopardy.
func (e *env) intoJeopardy(c *Claim, cut *atomic.Bool) {
	e.t.Helper()
	e.cutStore(cut)
	cut.Store(true)
	for end := e.clk.Now().Add(5 * time.Second); !c.Status().Jeopardy; e.advance(50*time.Millisecond, c) {
		if !e.clk.Now().Before(end) || isDone(c) {
			e.t.Fatalf("not in jeopardy 5 s into a store outage: done %v, err %v", isDone(c), c.Err())
		}
	}
}

// takeOver writes node id's record as another task's, version + 1.
func (e *env) takeOver(id int) {
	e.t.Helper()
	r, m := e.record(id)
	r.Holder, r.Version, r.WriteID = "other", r.Version+1, lease.NewWriteID()
	body, err := r.Encode()
	if err != nil {
		e.t.Fatal(err)
	}
	if _, err := e.mem.Update(context.Background(), lease.RecordKey(id), body, m.ETag); err != nil {
		e.t.Fatal(err)
	}
}

// TestJeopardyAndRecovery: renewals that give up with no evidence of another
// writer put the claim in jeopardy at the renew deadline: fenced at once
// (Valid false, Check ErrJeopardy), not lost (Err nil, Done open). When the
// store answers again, a renewal on its last ETag lands and recovers it: the
// same version, valid until the new write's fence, a reservation from it, a
// recovery counted in Status, and the observer hears both.
func TestJeopardyAndRecovery(t *testing.T) {
	e := newEnv(t)
	rec := &recorder{}
	cfg := e.config("a")
	cfg.Observer = rec
	c := e.acquire(e.provider(cfg))
	var cut atomic.Bool
	e.intoJeopardy(c, &cut)
	if since := e.clk.Now().Sub(start); since > cfg.RenewDeadline+100*time.Millisecond {
		t.Fatalf("in jeopardy %v after the last write, want at the %v renew deadline", since, cfg.RenewDeadline)
	}
	if c.Valid() || !errors.Is(c.Check(), ErrJeopardy) || c.Err() != nil || isDone(c) || !c.ValidUntil().IsZero() {
		t.Fatalf("in jeopardy: valid %v, Check %v, Err %v, done %v, ValidUntil %v", c.Valid(), c.Check(), c.Err(), isDone(c), c.ValidUntil())
	}
	reserved := c.Reservation()
	if st := c.Status(); st.Valid || st.Recoveries != 0 {
		t.Fatalf("in jeopardy: status %+v, want not valid, 0 recoveries", st)
	}
	cut.Store(false)
	e.advance(time.Second, c)
	if !c.Valid() || c.Check() != nil || c.Version() != 1 || c.Reservation() <= reserved {
		t.Fatalf("after the store came back: valid %v, Check %v, version %d, reservation %d (was %d)",
			c.Valid(), c.Check(), c.Version(), c.Reservation(), reserved)
	}
	if st := c.Status(); !st.Valid || st.Recoveries != 1 {
		t.Fatalf("after the recovery: status %+v, want valid, 1 recovery", st)
	}
	if events := rec.list(); !slices.Contains(events, "jeopardy") || !slices.Contains(events, "recovered") || slices.Contains(events, "lost") {
		t.Fatalf("observer events %v, want jeopardy and recovered, no loss", events)
	}
}

// TestJeopardyEndsOnEvidence: in jeopardy, the loss is final on evidence of a
// takeover, before the grace ends: the record written by another task (the
// renewal's CAS is refused), or a peer gossiping a higher version.
func TestJeopardyEndsOnEvidence(t *testing.T) {
	for _, evidence := range []string{"record", "gossip"} {
		t.Run(evidence, func(t *testing.T) {
			e := newEnv(t)
			c := e.acquire(e.provider(e.config("a")))
			var cut atomic.Bool
			e.intoJeopardy(c, &cut)
			if evidence == "record" {
				e.takeOver(c.NodeID())
				cut.Store(false)
				e.advance(500*time.Millisecond, c)
			} else {
				c.ObserveVersion(c.Version() + 1)
			}
			if !isDone(c) || !errors.Is(c.Err(), ErrLeaseLost) || c.Valid() {
				t.Fatalf("done %v, err %v, valid %v: want lost at once", isDone(c), c.Err(), c.Valid())
			}
		})
	}
}

// TestJeopardyEndsLostAfterTheGrace: a store that stays down ends the claim
// lost once LossGrace has passed since it entered jeopardy, not before.
func TestJeopardyEndsLostAfterTheGrace(t *testing.T) {
	e := newEnv(t)
	cfg := e.config("a")
	cfg.LossGrace = 5 * time.Second
	c := e.acquire(e.provider(cfg))
	var cut atomic.Bool
	e.intoJeopardy(c, &cut)
	entered := e.clk.Now()
	e.advance(cfg.LossGrace-500*time.Millisecond, c)
	if isDone(c) {
		t.Fatalf("lost %v into a %v loss grace: %v", e.clk.Now().Sub(entered), cfg.LossGrace, c.Err())
	}
	e.advanceUntilDone(c, time.Second)
	if !errors.Is(c.Err(), ErrLeaseLost) || !strings.Contains(c.Err().Error(), "loss grace") {
		t.Fatalf("Err %v, want a loss at the end of the loss grace", c.Err())
	}
}

// TestReleaseInJeopardy: Close in jeopardy writes the release on the last
// ETag; when it lands (nobody took the ID) the release is done: the record is
// free, Close returns nil.
func TestReleaseInJeopardy(t *testing.T) {
	e := newEnv(t)
	c := e.acquire(e.provider(e.config("a")))
	var cut atomic.Bool
	e.intoJeopardy(c, &cut)
	cut.Store(false)
	if err := c.Close(context.Background()); err != nil {
		t.Fatalf("Close in jeopardy: %v", err)
	}
	if r, _ := e.record(c.NodeID()); !r.Free() || r.Version != 1 {
		t.Fatalf("record after the release: %+v", r)
	}
}

// TestConflictIsReadBackNotALoss: a 409 on a renewal (S3's concurrent
// conditional write) says nothing about who won: with nobody else writing,
// the read-back finds the object unchanged and the renewal goes on; with
// another writer, the read-back finds its record and the loss is final.
func TestConflictIsReadBackNotALoss(t *testing.T) {
	for _, taken := range []bool{false, true} {
		e := newEnv(t)
		cfg := e.config("a")
		c := e.acquire(e.provider(cfg))
		if taken {
			e.takeOver(c.NodeID())
		}
		e.store.Queue(storetest.OpUpdate, faultErr(&lease.ConflictError{Op: "update", Key: lease.RecordKey(c.NodeID())}))
		e.advance(cfg.RenewInterval+500*time.Millisecond, c)
		switch {
		case !taken && (isDone(c) || !c.Valid()):
			t.Fatalf("a 409 with nobody else writing: done %v, err %v; want renewed", isDone(c), c.Err())
		case taken && (!isDone(c) || !errors.Is(c.Err(), ErrLeaseLost)):
			t.Fatalf("a 409 after another task took the lease: done %v, err %v; want lost", isDone(c), c.Err())
		}
	}
}

// TestServerErrorIsRetriedOnTheSameETag: a 5xx on a renewal (500
// InternalError, 503 SlowDown) is resolved by the next attempt's CAS on the
// same ETag, not by a read that would meet the same storm: when the write did
// not land, the retry renews with no read at all; when it landed after all,
// the retry is refused (412) and, with that write pending, the read-back
// adopts it. Either way the claim stays valid on the same version.
func TestServerErrorIsRetriedOnTheSameETag(t *testing.T) {
	for _, landed := range []bool{false, true} {
		e := newEnv(t)
		cfg := e.config("a")
		c := e.acquire(e.provider(cfg))
		var gets atomic.Int32
		e.store.SetInjector(func(op storetest.Op, key string) storetest.Fault {
			if op == storetest.OpGet {
				gets.Add(1)
			}
			return storetest.Fault{}
		})
		key := lease.RecordKey(c.NodeID())
		e.store.Queue(storetest.OpUpdate, storetest.Fault{Landed: landed,
			Err: &lease.UnknownOutcomeError{Op: "update", Key: key, Err: errors.New("503 SlowDown"), ServerError: true}})
		e.advance(cfg.RenewInterval+500*time.Millisecond, c)
		r, _ := e.record(c.NodeID())
		switch {
		case isDone(c) || !c.Valid() || c.Status().Jeopardy:
			t.Fatalf("landed %v: after a 503: done %v, err %v, jeopardy %v; want renewed", landed, isDone(c), c.Err(), c.Status().Jeopardy)
		case r.Holder != "a" || r.Version != c.Version():
			t.Fatalf("landed %v: record %+v, want held by a at version %d", landed, r, c.Version())
		case !landed && gets.Load() != 0:
			t.Fatalf("a 503 that did not land was resolved with %d reads; want the CAS retry alone", gets.Load())
		case landed && gets.Load() != 1:
			t.Fatalf("a 503 that landed was resolved with %d reads; want the one read-back after the retry's 412", gets.Load())
		}
	}
}
