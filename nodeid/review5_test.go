package nodeid

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/nodeid/nodeid/lease/storetest"
)

// Review 5, finding "unconfirmed challenge strands the ID" (liveness). A
// challenger whose challenge was answered 2xx but whose confirm failed (a
// 5xx, a refused connection, the challenger's crash or its ctx ending
// between the two PUTs) leaves a plain challenge standing on a crashed
// holder's record. Nobody confirms it later (challenge only confirms right
// after its own challenge), nobody challenges it again (suspected skips a
// record with a Challenge), and its TakeableAfter is the backstop counted
// from the challenge's own Last-Modified. So the crashed holder's ID, which
// its own record would have let go B + 1 s + ClockMargin after its last
// write, is re-taken only that long after the challenge: the challenge
// delayed the take instead of hastening it (here by the 8 s between the
// holder's last write and the challenge; at the defaults by up to
// RenewInterval + Window, with B = 10 min either way instead of about W).
func TestReview5UnconfirmedChallengeStrandsTheID(t *testing.T) {
	e := newEnv(t)
	e.lateHolder() // took at start, kept by reads for 8.5 s, then crashes: no read, no write
	last, lastMeta := e.record(0)
	p, events := e.challenger()
	// The challenge lands (2xx); the confirm's PUT fails without reaching
	// the store.
	e.store.Queue(storetest.OpUpdate, storetest.Fault{}, faultErr(storetest.ErrInjected))
	if _, err := p.Acquire(context.Background()); !errors.Is(err, ErrClusterFull) {
		t.Fatalf("challenge: %v", err)
	}
	if ch, _ := e.record(0); ch.Challenge == nil || ch.Challenge.Confirmed || ch.Challenge.Of != last.WriteID || events.challenged != 1 {
		t.Fatalf("after a challenge whose confirm failed: %+v (challenge %+v), events %+v", ch, ch.Challenge, events)
	}
	// Without the challenge the holder's own record expires B + 1 s +
	// ClockMargin after its Last-Modified (12 + 2 s); allow one more second
	// of Date truncation. Keep acquiring, each Acquire a fresh one.
	bound := lastMeta.LastModified.Add(12*time.Second + 2*time.Second + time.Second)
	var taken *Claim
	for taken == nil && !e.clk.Now().After(bound) {
		e.clk.Advance(500 * time.Millisecond)
		taken = tryAcquire(t, p)
	}
	if taken == nil {
		r, m := e.record(0)
		t.Fatalf("a crashed holder's ID (last written at %v) not re-taken by %v, the backstop of its own record: the object is %+v (challenge %+v, last modified %v), standing until the challenge's own backstop",
			lastMeta.LastModified.Sub(start), bound.Sub(start), r, r.Challenge, m.LastModified.Sub(start))
	}
	if taken.Floor() != last.ReservedUntilMs {
		t.Fatalf("taken with floor %d, want the holder's reservation %d", taken.Floor(), last.ReservedUntilMs)
	}
}
