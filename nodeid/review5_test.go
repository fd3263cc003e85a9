package nodeid

import (
	"context"
	"errors"
	"sync/atomic"
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

// Review 5, finding "a challenge during a renewal's retry pause is not
// answered" (liveness). The read loop wakes the renewal loop when a poll sees
// another ETag (wakeRenewal), but that only ends the sleep between renewal
// rounds: once a backstop renewal failed, renewRound sleeps its retry pause,
// renewPause(RenewDeadline - RenewInterval) = B/30 drawn from [B/60, B/30)
// (10-20 s at the default backstop of 10 min), on ctx alone. A challenge
// that lands in that pause is answered only after it; when the pause is
// longer than W + 1 s + ClockMargin (17 s at the default window; always with
// this test's 3 s window), the confirm is taken from a healthy holder that
// reads and writes its store again. Here: one backstop PUT fails at 200 s, a
// challenger that gossip tells the holder is gone challenges and confirms at
// once, and a waiter takes the confirm 6 s later while the holder's renewal
// loop still sleeps; its next attempt finds the ID taken.
func TestReview5ChallengeDuringARenewalRetryIsNotAnswered(t *testing.T) {
	e := newEnv(t)
	long := func(c *Config) {
		// RenewInterval 200 s, RenewDeadline 400 s: retry pauses of 10-20 s
		c.Backstop, c.MaxLeaseDuration, c.StoreTimeout = 10*time.Minute, 10*time.Minute, 500*time.Millisecond
	}
	cfg := e.readConfig("a")
	e.oneID(&cfg)
	long(&cfg)
	holder := e.acquire(e.provider(cfg))
	e.store.Queue(storetest.OpUpdate, faultErr(storetest.ErrInjected)) // the first backstop renewal fails, once
	e.advance(holder.NextRenewal().Sub(e.clk.Now())+time.Millisecond, holder)
	if !holder.Valid() || holder.Err() != nil {
		t.Fatalf("the holder after one failed backstop write: valid %v, err %v", holder.Valid(), holder.Err())
	}
	// Gossip (no member) tells this challenger the holder is gone.
	p, events := e.challenger(long, func(c *Config) { c.Peers = staticPeers{} })
	if _, err := p.Acquire(context.Background()); !errors.Is(err, ErrClusterFull) || events.confirmed != 1 {
		t.Fatalf("challenge: %v, events %+v", err, events)
	}
	// A waiter that gossip does not mislead: it takes a confirm that stood
	// its window, and challenges nothing here.
	waiter, _ := e.challenger(long, func(c *Config) { c.TaskID, c.IssuesNoIDs = "c", true }) // no floor to wait for: Acquire returns at the take
	var taken *Claim
	for i := 0; i < 40 && taken == nil; i++ { // 20 s, the holder's loops running
		e.advance(500*time.Millisecond, holder)
		taken = tryAcquire(t, waiter)
	}
	if taken != nil {
		t.Fatalf("a holder whose store works again lost its ID to a challenge it could have answered: taken by %q (version %d) at %v; holder valid %v, err %v",
			"c", taken.Version(), e.clk.Now().Sub(start), holder.Valid(), holder.Err())
	}
	if r, _ := e.record(0); r.Holder != "a" || r.Challenge != nil || holder.Err() != nil {
		t.Fatalf("after 20 s: record %+v (challenge %+v), holder err %v", r, r.Challenge, holder.Err())
	}
}

// Review 5, finding "freedByOurRelease counts a take of a confirm as our
// release" (minor: a misreport, no ID at risk). freedByOurRelease proves a
// release landed from a read-back that finds a successor, with a release of
// ours pending, before the last write's fence for LeaseDuration (B in read
// mode): "taking it expired needs B". In read mode a challenger takes a held
// record a Window after its confirm, so the successor may have taken our
// record (never released) by a challenge: Close reports a clean release
// (nil, Observer.Released) of an ID that was in fact taken from it. Here the
// holder's store is cut while it releases (its release's answer lost, every
// retry failing), a challenger confirms, a waiter takes the confirm, and the
// store comes back: Close returns nil where the loss should be reported.
func TestReview5ReleaseReportsATakeByChallengeAsReleased(t *testing.T) {
	e := newEnv(t)
	cfg := e.readConfig("a")
	e.oneID(&cfg)
	hs := storetest.NewFaultStore(e.mem) // the holder's own connection to the store
	holder := withoutLoops(e.acquire(e.providerOn(hs, cfg)))
	var cut atomic.Bool
	cut.Store(true)
	hs.SetInjector(func(op storetest.Op, key string) storetest.Fault {
		switch {
		case !cut.Load():
			return storetest.Fault{}
		case op == storetest.OpUpdate:
			return storetest.Fault{Err: storetest.Unknown(op, key)} // sent, never applied, its answer lost
		}
		return faultErr(storetest.ErrInjected)
	})
	closed := make(chan error, 1)
	go func() { closed <- holder.Close(context.Background()) }()
	e.asleep(1) // the release's first write was lost; it retries
	p, events := e.challenger(func(c *Config) { c.Peers = staticPeers{} })
	if _, err := p.Acquire(context.Background()); !errors.Is(err, ErrClusterFull) || events.confirmed != 1 {
		t.Fatalf("challenge: %v, events %+v", err, events)
	}
	waiter, _ := e.challenger(func(c *Config) { c.TaskID, c.IssuesNoIDs = "c", true })
	var taken *Claim
	for i := 0; i < 100 && taken == nil; i++ {
		e.step(1)
		taken = tryAcquire(t, waiter)
	}
	if taken == nil {
		t.Fatal("the confirm was not taken")
	}
	cut.Store(false)
	var err error
	for done := false; !done; {
		select {
		case err = <-closed:
			done = true
		default:
			if e.clk.Sleepers() > 0 {
				e.step(0)
			}
			time.Sleep(time.Millisecond)
		}
	}
	if !errors.Is(err, ErrLeaseLost) {
		t.Fatalf("Close of a claim whose record (never released) was taken by a challenge (version %d): %v, want an error wrapping ErrLeaseLost", taken.Version(), err)
	}
}

// Review 5, finding "with NoLossGrace a fallen read-mode fence is final but
// the claim is not ended" (minor, liveness). NoLossGrace says the first fence
// is final: the renewal loop ends the claim as lost. In read mode the fence
// falls when reads fail for Window - SafetyMargin, but the renewal loop is
// asleep until the next backstop write (RenewInterval, B/3: 200 s at the
// default backstop) and nothing wakes it: arm refuses every later read, so
// the claim stays fenced, not Done and not lost, for up to B/3, and a caller
// waiting on Done to take another ID waits that long.
func TestReview5NoLossGraceFallenFenceNotEnded(t *testing.T) {
	e := newEnv(t)
	cfg := e.readConfig("a")
	e.oneID(&cfg)
	cfg.Backstop, cfg.MaxLeaseDuration, cfg.StoreTimeout = 10*time.Minute, 10*time.Minute, 500*time.Millisecond
	cfg.LossGrace = NoLossGrace
	c := e.acquire(e.provider(cfg))
	var cut atomic.Bool
	e.store.SetInjector(func(op storetest.Op, _ string) storetest.Fault {
		if cut.Load() && op == storetest.OpGetIfChanged {
			return faultErr(storetest.ErrInjected)
		}
		return storetest.Fault{}
	})
	cut.Store(true)
	e.advance(4*time.Second, c) // reads fail for more than W - M: the fence falls, for good
	if c.Valid() {
		t.Fatal("the fence stands after 4 s of failed reads")
	}
	cut.Store(false)
	e.advance(20*time.Second, c)
	if !isDone(c) && !c.Valid() {
		t.Fatalf("NoLossGrace: the fence fell 20 s ago and is final, but the claim is neither lost nor done (err %v); its renewal loop sleeps until %v after the take",
			c.Err(), c.NextRenewal().Sub(start))
	}
}
