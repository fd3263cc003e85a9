package nodeid

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/nodeid/nodeid/lease"
	"github.com/nodeid/nodeid/lease/storetest"
)

// slowReads is e.store whose conditional reads are answered after latency
// of fake time (the store served the read at once, when it was sent), and
// whose next answer may be replaced (answer) or followed by something
// happening meanwhile (during, after the store served the read).
type slowReads struct {
	lease.Store
	e       *env
	latency time.Duration
	answer  func([]byte, lease.Meta, error) ([]byte, lease.Meta, error)
	during  func()
	reads   int
}

func (s *slowReads) GetIfChanged(ctx context.Context, key, etag string) ([]byte, lease.Meta, error) {
	s.reads++
	b, m, err := lease.GetIfChanged(ctx, s.e.store, key, etag)
	s.e.clk.Advance(s.latency)
	if f := s.during; f != nil {
		s.during = nil
		f()
	}
	if f := s.answer; f != nil {
		b, m, err = f(b, m, err)
	}
	return b, m, err
}

// readClaim acquires a claim in read mode (3 s window, 12 s backstop, 1 s
// margin, 600 ms polls) and stops its loops (withoutLoops): the test calls
// poll and renewStep itself.
func (e *env) readClaim(mod func(*Config)) (*Claim, *slowReads) {
	e.t.Helper()
	cfg := e.readConfig("a")
	if mod != nil {
		mod(&cfg)
	}
	s := &slowReads{Store: e.store, e: e}
	c := withoutLoops(e.acquire(e.providerOn(s, cfg)))
	return c, s
}

// withoutLoops stops the renewal loop of c (the claim's owner, which also
// runs its reads) and waits until it ended: the test drives the claim's steps itself.
func withoutLoops(c *Claim) *Claim {
	c.stopLoop()
	<-c.loopDone
	return c
}

// since returns how far after t0 the claim's fence stands.
func since(c *Claim, t0 time.Time) time.Duration { return c.ValidUntil().Sub(t0) }

// A landed write in read mode states the backstop as its lease and reserves
// wall + backstop, and arms the fence for the window only: W - M after its
// send. The renewal loop writes a backstop every B/3.
func TestReadModeWriteArmsTheWindow(t *testing.T) {
	e := newEnv(t)
	t0 := e.clk.Now()
	c, _ := e.readClaim(nil)
	r, _ := e.record(c.NodeID())
	if r.LeaseMillis != 12000 || r.ReservedUntilMs != e.clk.Wall().UnixMilli()+12000 {
		t.Fatalf("record leaseMillis %d reserved %d, want 12000 and wall + 12000", r.LeaseMillis, r.ReservedUntilMs)
	}
	if got := since(c, t0); got != 2*time.Second {
		t.Fatalf("fence %v after the take, want W - M = 2s", got)
	}
	if got := c.NextRenewal().Sub(t0); got != 4*time.Second {
		t.Fatalf("next backstop write %v after the take, want B/3 = 4s", got)
	}
	e.clk.Advance(4 * time.Second)
	t1 := e.clk.Now()
	if err := c.renewStep(context.Background()); err != nil {
		t.Fatal(err)
	}
	if got := since(c, t1); got != 2*time.Second || !c.Valid() {
		t.Fatalf("after a backstop write: fence %v after its send (valid %v), want 2s", got, c.Valid())
	}
}

// A read that proves the claim's ETag re-arms the fence from its send, not
// from its answer's arrival: the answer may come late.
func TestReadRearmsFromItsSend(t *testing.T) {
	for _, notModified := range []bool{true, false} {
		e := newEnv(t)
		c, s := e.readClaim(nil)
		if !notModified { // a store that ignores If-None-Match: a 200 with our ETag
			s.answer = func(_ []byte, _ lease.Meta, err error) ([]byte, lease.Meta, error) {
				if !errors.Is(err, lease.ErrNotModified) {
					t.Fatalf("read on our ETag: %v", err)
				}
				return e.store.Get(context.Background(), c.key)
			}
		}
		e.clk.Advance(time.Second)
		sent := e.clk.Now()
		s.latency = 700 * time.Millisecond
		if got, err := c.poll(context.Background()); err != nil || !got.Equal(sent) {
			t.Fatalf("poll: sent %v, %v", got, err)
		}
		if got := since(c, sent); got != 2*time.Second {
			t.Fatalf("304 %v: fence %v after the read's send (answered 700ms later), want W - M = 2s", notModified, got)
		}
	}
}

// No read moves the fence past the cap: the last landed write's send + B -
// M. Reads alone keep the claim valid until then, and not a moment longer.
func TestReadRearmCapped(t *testing.T) {
	e := newEnv(t)
	t0 := e.clk.Now()
	c, _ := e.readClaim(nil)
	for i := 0; i < 20; i++ {
		e.clk.Advance(600 * time.Millisecond)
		if _, err := c.poll(context.Background()); err != nil {
			t.Fatal(err)
		}
		if want := min(e.clk.Now().Sub(t0)+2*time.Second, 11*time.Second); since(c, t0) != want {
			t.Fatalf("after a read at %v: fence at %v, want %v", e.clk.Now().Sub(t0), since(c, t0), want)
		}
	}
	e.clk.Advance(11*time.Second - e.clk.Now().Sub(t0))
	if _, err := c.poll(context.Background()); err != nil {
		t.Fatal(err)
	}
	if c.Valid() {
		t.Fatalf("valid %v after the last write: past the cap B - M", e.clk.Now().Sub(t0))
	}
}

// A 304 that does not show the ETag proves nothing, nor does a read sent
// before the last landed write; neither lowers the fence.
func TestReadThatProvesNothing(t *testing.T) {
	e := newEnv(t)
	t0 := e.clk.Now()
	c, s := e.readClaim(nil)
	e.clk.Advance(time.Second)
	s.answer = func(_ []byte, m lease.Meta, _ error) ([]byte, lease.Meta, error) {
		return nil, lease.Meta{}, lease.NotModifiedUnproven(c.key, m.ETag, "")
	}
	if _, err := c.poll(context.Background()); !errors.Is(err, lease.ErrNotModifiedUnproven) {
		t.Fatalf("poll answered an unproven 304: %v", err)
	}
	if got := since(c, t0); got != 2*time.Second {
		t.Fatalf("an unproven 304 moved the fence to %v after the take", got)
	}
	// Such a store is read with plain GETs from then on: their 200 shows
	// the ETag, and proves it from the read's send.
	gets, conds := e.mem.Count(storetest.OpGet), s.reads
	e.clk.Advance(500 * time.Millisecond)
	sent := e.clk.Now()
	if _, err := c.poll(context.Background()); err != nil {
		t.Fatalf("a plain read after an unproven 304: %v", err)
	}
	if e.mem.Count(storetest.OpGet) != gets+1 || s.reads != conds || since(c, sent) != 2*time.Second {
		t.Fatalf("after an unproven 304: %d plain and %d conditional reads, fence %v after the send; want one plain read re-arming W - M",
			e.mem.Count(storetest.OpGet)-gets, s.reads-conds, since(c, sent))
	}
}

// A read sent before the last landed write proves nothing new: the write's
// fence stands.
func TestReadSentBeforeAWrite(t *testing.T) {
	e := newEnv(t)
	c, s := e.readClaim(nil)
	e.clk.Advance(time.Second)
	// A read sent at 1 s, served then, answered at 1.5 s after a backstop
	// write sent at 1.2 s landed: the write's fence stands.
	s.latency = 200 * time.Millisecond
	var w time.Time
	s.during = func() {
		w = e.clk.Now()
		if err := c.renewStep(context.Background()); err != nil {
			t.Fatal(err)
		}
		e.clk.Advance(300 * time.Millisecond)
	}
	if _, err := c.poll(context.Background()); err != nil {
		t.Fatal(err)
	}
	if got := since(c, w); got != 2*time.Second {
		t.Fatalf("fence %v after the write, want the write's 2s", got)
	}
}

// Another ETag is no proof: the read says so, and the renewal's CAS then
// meets the change as ever (lost).
func TestReadSeesAnotherWriter(t *testing.T) {
	e := newEnv(t)
	t0 := e.clk.Now()
	c, _ := e.readClaim(nil)
	e.clk.Advance(time.Second)
	e.takeOver(c.NodeID())
	if _, err := c.poll(context.Background()); !errors.Is(err, errETagChanged) {
		t.Fatalf("poll after a takeover: %v, want errETagChanged", err)
	}
	if got := since(c, t0); got != 2*time.Second {
		t.Fatalf("fence moved to %v by another writer's record", got)
	}
	if err := c.renewStep(context.Background()); !errors.Is(err, ErrLeaseLost) {
		t.Fatalf("renewal after the takeover: %v, want ErrLeaseLost", err)
	}
}

// Reads that fail let the fence fall at its time; a read that proves the
// ETag afterwards lifts it from its own send (a recovery), unless LossGrace
// is NoLossGrace; a read sent too long ago to lift it leaves it down.
func TestReadsFailingThenRecovering(t *testing.T) {
	for _, grace := range []time.Duration{0, NoLossGrace} {
		e := newEnv(t)
		t0 := e.clk.Now()
		c, s := e.readClaim(func(c *Config) { c.LossGrace = grace })
		s.answer = func([]byte, lease.Meta, error) ([]byte, lease.Meta, error) {
			return nil, lease.Meta{}, errors.New("read failed")
		}
		for e.clk.Now().Sub(t0) < 3*time.Second {
			e.clk.Advance(600 * time.Millisecond)
			if _, err := c.poll(context.Background()); err == nil {
				t.Fatal("a failed read proved the ETag")
			}
			if valid, want := c.Valid(), e.clk.Now().Sub(t0) < 2*time.Second; valid != want {
				t.Fatalf("valid %v at %v, want %v", valid, e.clk.Now().Sub(t0), want)
			}
		}
		s.answer = nil
		s.latency = 2100 * time.Millisecond // answered after its own window: too late to lift
		if _, err := c.poll(context.Background()); err != nil || c.Valid() {
			t.Fatalf("a read answered past its window lifted the fence: %v, valid %v", err, c.Valid())
		}
		s.latency = 100 * time.Millisecond
		sent := e.clk.Now()
		if _, err := c.poll(context.Background()); err != nil {
			t.Fatal(err)
		}
		if grace == NoLossGrace {
			if c.Valid() {
				t.Fatal("NoLossGrace: a read lifted a fence that fell")
			}
			continue
		}
		if !c.Valid() || since(c, sent) != 2*time.Second || c.Status().Recoveries != 1 {
			t.Fatalf("recovery by a read: valid %v, fence %v after its send, recoveries %d", c.Valid(), since(c, sent), c.Status().Recoveries)
		}
	}
}

// ReadsFailingAt, what a supervised child's stop is timed by: a
// PollInterval, a quarter of it and StoreTimeout after the send of the last
// landed write or read that proved the ETag; failed reads leave it, and it
// is kept once the fence fell. Zero in write mode.
func TestReadsFailingAt(t *testing.T) {
	e := newEnv(t)
	t0 := e.clk.Now()
	c, s := e.readClaim(nil)
	cfg := c.p.t
	after := cfg.PollInterval + cfg.PollInterval/4 + cfg.StoreTimeout
	if got := c.ReadsFailingAt(); !got.Equal(t0.Add(after)) {
		t.Fatalf("after the take: %v, want the take's send + %v", got.Sub(t0), after)
	}
	e.clk.Advance(cfg.PollInterval)
	sent := e.clk.Now()
	if _, err := c.poll(context.Background()); err != nil {
		t.Fatal(err)
	}
	if got := c.ReadsFailingAt(); !got.Equal(sent.Add(after)) {
		t.Fatalf("after a read that proved the ETag: %v after its send, want %v", got.Sub(sent), after)
	}
	s.answer = func([]byte, lease.Meta, error) ([]byte, lease.Meta, error) {
		return nil, lease.Meta{}, errors.New("read failed")
	}
	for e.clk.Now().Sub(sent) <= cfg.Window-cfg.SafetyMargin {
		e.clk.Advance(cfg.PollInterval / 4)
		if _, err := c.poll(context.Background()); err == nil {
			t.Fatal("a failed read proved the ETag")
		}
	}
	if got := c.ReadsFailingAt(); c.Valid() || !got.Equal(sent.Add(after)) {
		t.Fatalf("failed reads, the fence down (valid %v): %v after the last proof, want %v", c.Valid(), got.Sub(sent), after)
	}
	we := newEnv(t)
	w := we.acquire(we.provider(we.config("w")))
	if got := w.ReadsFailingAt(); !got.IsZero() {
		t.Fatalf("write mode: %v, want the zero Time", got)
	}
}

// A claim that is closing is never re-armed by a read.
func TestReadAfterClose(t *testing.T) {
	e := newEnv(t)
	c, _ := e.readClaim(nil)
	if err := c.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	if _, err := c.poll(context.Background()); err != nil || c.Valid() {
		t.Fatalf("poll of the released record after Close: %v, valid %v", err, c.Valid())
	}
}

// The loops: reads keep the claim valid between backstop writes (B/3 apart,
// longer than the window), and a read that sees another writer wakes the
// renewal loop, which finds the loss at once, not at its next renewal.
func TestReadLoopKeepsTheClaim(t *testing.T) {
	e := newEnv(t)
	cfg := e.readConfig("a")
	c := e.acquire(e.provider(cfg))
	writes, reads := e.mem.Count(storetest.OpUpdate), e.mem.Count(storetest.OpGetIfChanged)
	for i := 0; i < 39; i++ {
		e.advance(300*time.Millisecond, c)
		if !c.Valid() {
			t.Fatalf("invalid %v into a healthy claim in read mode", time.Duration(i+1)*300*time.Millisecond)
		}
	}
	// 11.7 s: backstop writes at 4 s and 8 s (B/3), a read every ~700 ms
	// (3/4 of Window - SafetyMargin - StoreTimeout).
	if w, r := e.mem.Count(storetest.OpUpdate)-writes, e.mem.Count(storetest.OpGetIfChanged)-reads; w != 2 || r < 15 || r > 18 {
		t.Fatalf("%d writes and %d reads in 11.7 s, want 2 backstop writes and about 16 reads", w, r)
	}
	r, _ := e.record(c.NodeID())
	e.takeOver(c.NodeID())
	taken := e.clk.Now()
	e.advanceUntilDone(c, 4*time.Second)
	if !errors.Is(c.Err(), ErrLeaseLost) || e.clk.Now().Sub(taken) > time.Second {
		t.Fatalf("after a takeover: %v, %v later (record before: %+v)", c.Err(), e.clk.Now().Sub(taken), r)
	}
}

// While the claim answers a challenge, a poll that shows the challenge's
// ETag proves nothing (errAnswering), and one that shows another ETag (the
// answer landed though its outcome was unknown, a challenge again) wakes
// the owner (errETagChanged): otherwise a retry pause of the answer
// outlasts the window of the next challenge, which the reads cannot
// report. The simulation's check keptByHealthy found it (seed 24 of
// TestSimulationLiveness).
func TestPollWhileAnsweringSeesAChange(t *testing.T) {
	e := newEnv(t)
	c, _ := e.readClaim(e.oneID)
	r, m := e.record(0)
	c.etag = m.ETag // as readBack leaves it, on a challenge it answers
	c.answerChallenge()
	before := c.ValidUntil()
	if _, err := c.poll(context.Background()); !errors.Is(err, errAnswering) || !c.ValidUntil().Equal(before) {
		t.Fatalf("poll on the challenge's ETag while answering: %v, fence moved %v; want errAnswering, no proof", err, c.ValidUntil().Sub(before))
	}
	r.WriteID = lease.NewWriteID()
	body, _ := r.Encode()
	if _, err := e.mem.Update(context.Background(), lease.RecordKey(0), body, m.ETag); err != nil {
		t.Fatal(err)
	}
	_, err := c.poll(context.Background())
	if _, wake := afterPoll(err, c.p.t.PollInterval); !errors.Is(err, errETagChanged) || !wake {
		t.Fatalf("poll after the object changed while answering: %v (wake %v); want errETagChanged and a wake", err, wake)
	}
}
