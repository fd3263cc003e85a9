package nodeid

import (
	"testing"
	"time"

	"github.com/nodeid/nodeid/lease/storetest"
)

// A renewal whose answer is lost lands late: after the read-back saw the old
// ETag (the write looked lost), and before the retry, which then meets 412.
// The second read-back finds the late write and adopts it with its send time:
// the fence runs from when the late write was sent, not from when it was
// found (it may have landed long before that). The adoptAtReadBack mutation
// fences from the read-back instead, which is caught here and, in the
// simulation, as a fence outliving its record's lease.
func TestLateRenewalIsAdoptedWithItsSendTime(t *testing.T) {
	for _, mutated := range []bool{false, true} {
		e := newEnv(t)
		cfg := e.config("a")
		cfg.ClusterSize = 1
		p := e.provider(cfg)
		if mutated {
			p.rules = *SimRules{AdoptAtReadBack: true}.mutated()
		}
		c := e.acquire(p)
		e.store.Queue(storetest.OpUpdate, storetest.Fault{Late: true})
		sent := e.clk.Now().Add(cfg.RenewInterval) // the renewal's send time
		e.advance(cfg.RenewInterval+50*time.Millisecond, c)
		// The late renewal and the retry's read-back happened; the retry's
		// backoff is at most RenewInterval/5.
		e.advance(cfg.RenewInterval/5, c)

		r, meta := e.record(0)
		etag, lastSent, pending := c.etag, c.snap.Load().lastSent, len(c.pending) // the loop sleeps (advance settles it)
		if isDone(c) || !c.Valid() {
			t.Fatalf("mutated %v: the claim ended after a late renewal: %v", mutated, c.Err())
		}
		if etag != meta.ETag || r.Holder != "a" || pending != 0 {
			t.Fatalf("mutated %v: claim ETag %s, pending %d; store ETag %s held by %q: the late write was not adopted",
				mutated, etag, pending, meta.ETag, r.Holder)
		}
		wantUntil := sent.Add(cfg.LeaseDuration - cfg.SafetyMargin)
		switch got := c.ValidUntil(); {
		case !mutated && (!lastSent.Equal(sent) || !got.Equal(wantUntil)):
			t.Errorf("late renewal adopted as sent at %v with fence %v; want its send time %v and fence %v",
				lastSent.Sub(start), got.Sub(start), sent.Sub(start), wantUntil.Sub(start))
		case mutated && !got.After(wantUntil):
			t.Errorf("adoptAtReadBack: fence %v, want it later than the rule's %v (the mutation is not exercised)",
				got.Sub(start), wantUntil.Sub(start))
		}
	}
}
