package nodeid

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nodeid/nodeid/lease"
	"github.com/nodeid/nodeid/lease/storetest"
)

// challengeEvents records a ChallengeObserver's calls.
type challengeEvents struct {
	NopObserver
	challenged, confirmed, answered int
}

func (o *challengeEvents) Challenged(_ int, _ string, confirmed bool) {
	o.challenged++
	if confirmed {
		o.confirmed++
	}
}

func (o *challengeEvents) Answered(int) { o.answered++ }

// oneID is readConfig for a cluster of one node ID.
func (e *env) oneID(c *Config) { c.ClusterSize = 1 }

// lateHolder is a holder in read mode (one ID, 3 s window, 12 s backstop,
// 4 s between backstop writes) that kept its claim with reads alone for 8.5 s
// since its take: its backstop is late (the store's whole-second Date shows
// more than RenewInterval + Window), so a challenger suspects it.
func (e *env) lateHolder() (*Claim, *challengeEvents) {
	e.t.Helper()
	events := &challengeEvents{}
	c, _ := e.readClaim(func(c *Config) { e.oneID(c); c.Observer = events })
	for range 17 {
		e.clk.Advance(500 * time.Millisecond)
		if _, err := c.poll(context.Background()); err != nil || !c.Valid() {
			e.t.Fatalf("poll of a healthy claim: %v, valid %v", err, c.Valid())
		}
	}
	return c, events
}

// challenger returns a read-mode provider of task b on the one-ID cluster
// (configured further by mods), and its observer.
func (e *env) challenger(mods ...func(*Config)) (*Provider, *challengeEvents) {
	events := &challengeEvents{}
	cfg := e.readConfig("b")
	e.oneID(&cfg)
	cfg.Observer = events
	for _, mod := range mods {
		mod(&cfg)
	}
	return e.provider(cfg), events
}

// tryAcquire runs one Acquire of p: its claim (closed when the test ends),
// or nil when the cluster is full.
func tryAcquire(t *testing.T, p *Provider) *Claim {
	t.Helper()
	c, err := p.Acquire(context.Background())
	switch {
	case err == nil:
		t.Cleanup(func() { _ = c.Close(context.Background()) })
		return c
	case !errors.Is(err, ErrClusterFull):
		t.Fatalf("Acquire: %v", err)
	}
	return nil
}

// A challenge of a live holder: the challenger writes the challenge and the
// confirm (the holder's record copied, naming its writeId) and waits; the
// holder's next poll sees another ETag, and its renewal, refused on its own
// ETag, reads back, finds the confirm naming its last write and answers it
// by CAS on the confirm's ETag: same version, the challenge cleared, fence
// re-armed from the answer's send. The challenger does not take it.
func TestChallengeAnswered(t *testing.T) {
	e := newEnv(t)
	c, held := e.lateHolder()
	before, _ := e.record(0)
	p, events := e.challenger()
	writes := e.mem.Count(storetest.OpUpdate)
	_, err := p.Acquire(context.Background())
	if !errors.Is(err, ErrClusterFull) || !strings.Contains(err.Error(), "challenged node 0") {
		t.Fatalf("Acquire of a held ID whose backstop is late: %v, want ErrClusterFull after a challenge", err)
	}
	cf, _ := e.record(0)
	if ch := cf.Challenge; ch == nil || !ch.Confirmed || ch.Of != before.WriteID || ch.By != "b" || ch.WindowMillis != 3000 ||
		cf.Holder != "a" || cf.Version != before.Version || cf.ReservedUntilMs != before.ReservedUntilMs {
		t.Fatalf("after the challenge: %+v (challenge %+v), want a confirm copying %+v", cf, cf.Challenge, before)
	}
	if events.challenged != 1 || events.confirmed != 1 || e.mem.Count(storetest.OpUpdate)-writes != 2 {
		t.Fatalf("challenger's observer: %+v; %d writes, want the challenge and the confirm", events, e.mem.Count(storetest.OpUpdate)-writes)
	}
	if _, err := c.poll(context.Background()); !errors.Is(err, errETagChanged) {
		t.Fatalf("holder's poll of the confirm: %v, want errETagChanged", err)
	}
	sent := e.clk.Now()
	if err := c.renewStep(context.Background()); err != nil {
		t.Fatalf("the holder's answer: %v", err)
	}
	after, _ := e.record(0)
	if after.Challenge != nil || after.Holder != "a" || after.Version != before.Version || held.answered != 1 || c.Status().Challenged {
		t.Fatalf("after the answer: %+v (challenge %+v), answered %d, challenged %v", after, after.Challenge, held.answered, c.Status().Challenged)
	}
	if !c.Valid() || since(c, sent) != 2*time.Second {
		t.Fatalf("after the answer: valid %v, fence %v after its send, want W - M", c.Valid(), since(c, sent))
	}
	if _, err := c.poll(context.Background()); err != nil {
		t.Fatalf("poll after the answer: %v", err)
	}
	e.clk.Advance(5 * time.Second) // past the confirm's window: the answer replaced it
	if _, err := p.Acquire(context.Background()); !errors.Is(err, ErrClusterFull) {
		t.Fatalf("Acquire after the answer: %v, want ErrClusterFull", err)
	}
	if r, _ := e.record(0); r.Holder != "a" || r.Version != before.Version {
		t.Fatalf("the answered lease moved: %+v", r)
	}
}

// A holder that cannot answer (its writes fail) stops issuing within the
// window of the confirm: its reads show another ETag and never re-arm the
// fence, which falls before the confirm is older than W + 1 s + ClockMargin
// on the store's clock; then the challenger takes the ID, one version up,
// with the holder's reservation as its floor.
func TestChallengeTakesASilentHolder(t *testing.T) {
	e := newEnv(t)
	c, _ := e.lateHolder()
	before, _ := e.record(0)
	p, _ := e.challenger()
	confirmed := e.clk.Now()
	if _, err := p.Acquire(context.Background()); !errors.Is(err, ErrClusterFull) {
		t.Fatalf("challenge: %v", err)
	}
	_, confirm := e.record(0)
	if fence := c.ValidUntil(); fence.After(confirmed.Add(3*time.Second - time.Second)) {
		t.Fatalf("the holder's fence %v stands past the confirm %v + W - M", fence, confirmed)
	}
	failWrites := func(op storetest.Op, key string) storetest.Fault {
		if op == storetest.OpUpdate {
			return faultErr(storetest.ErrInjected) // the holder's writes fail: it cannot answer
		}
		return storetest.Fault{}
	}
	var taken *Claim
	for taken == nil {
		e.clk.Advance(500 * time.Millisecond)
		e.store.SetInjector(failWrites)
		if _, err := c.poll(context.Background()); !errors.Is(err, errETagChanged) {
			t.Fatalf("holder's poll: %v", err)
		}
		if e.clk.Now().Sub(confirm.LastModified) > 10*time.Second {
			t.Fatalf("the confirm was not taken in 10 s")
		}
		e.store.SetInjector(nil)
		taken = tryAcquire(t, p)
		if taken == nil && e.clk.Now().Sub(confirm.LastModified) <= 4*time.Second {
			continue
		}
		if c.Valid() {
			t.Fatalf("the holder is valid %v after the confirm, with the challenger looking", e.clk.Now().Sub(confirm.LastModified))
		}
	}
	e.store.SetInjector(nil)
	if age := e.clk.Now().Sub(confirm.LastModified); age <= 3*time.Second+2*time.Second {
		t.Fatalf("taken %v after the confirm, want more than W + 1 s + ClockMargin", age)
	}
	if taken.Version() != before.Version+1 || taken.Floor() != before.ReservedUntilMs || !taken.TookOverExpired() {
		t.Fatalf("taken: version %d, floor %d, expired %v; holder's record %+v", taken.Version(), taken.Floor(), taken.TookOverExpired(), before)
	}
	if err := c.renewStep(context.Background()); !errors.Is(err, ErrLeaseLost) {
		t.Fatalf("the old holder's renewal after the take: %v, want ErrLeaseLost", err)
	}
}

// A challenge naming a renewal of ours whose answer was lost (pending, its
// read-back failed) proves that renewal landed: the holder adopts it at its
// send and answers on the challenge's ETag.
func TestChallengeOfAPendingWrite(t *testing.T) {
	e := newEnv(t)
	c, held := e.lateHolder()
	e.store.Queue(storetest.OpUpdate, storetest.Fault{Landed: true})
	e.store.Queue(storetest.OpGet, faultErr(storetest.ErrInjected))
	sent := e.clk.Now()
	if err := c.attempt(context.Background()); err == nil {
		t.Fatalf("a renewal whose answer and read-back were lost reported success")
	}
	landed, _ := e.record(0)
	if len(c.pending) != 1 || c.pending[0].rec.WriteID != landed.WriteID {
		t.Fatalf("pending %+v, object %+v", c.pending, landed)
	}
	e.clk.Advance(8 * time.Second) // the landed renewal's backstop is late now
	p, _ := e.challenger()
	if _, err := p.Acquire(context.Background()); !errors.Is(err, ErrClusterFull) {
		t.Fatalf("challenge: %v", err)
	}
	if cf, _ := e.record(0); cf.Challenge == nil || cf.Challenge.Of != landed.WriteID {
		t.Fatalf("challenge of %+v: %+v", landed, cf.Challenge)
	}
	if err := c.renewStep(context.Background()); err != nil {
		t.Fatalf("the answer: %v", err)
	}
	after, _ := e.record(0)
	if after.Challenge != nil || after.Holder != "a" || after.Version != landed.Version || held.answered != 1 {
		t.Fatalf("after the answer: %+v, answered %d", after, held.answered)
	}
	if last := c.snap.Load().lastSent; last.Before(sent) || !c.Valid() {
		t.Fatalf("last write sent %v, before the pending one's %v; valid %v", last, sent, c.Valid())
	}
}

// A challenge naming a writeId that is not ours is another holder's record:
// the claim is lost, as with any other writer's record. The rule broken
// (answerAny: any challenge answered) writes the stale holder's record, and
// its old version, over its successor's.
func TestChallengeOfAnotherHolder(t *testing.T) {
	for _, broken := range []bool{false, true} {
		e := newEnv(t)
		c, _ := e.readClaim(e.oneID)
		c.p.rules = *SimRules{AnswerAny: broken}.mutated()
		e.takeOver(0)
		r, m := e.record(0)
		successor := r.Version
		r.Challenge = &lease.Challenge{Of: r.WriteID, By: "b", WindowMillis: 3000}
		r.WriteID = lease.NewWriteID()
		body, _ := r.Encode()
		if _, err := e.mem.Update(context.Background(), lease.RecordKey(0), body, m.ETag); err != nil {
			t.Fatal(err)
		}
		err := c.renewStep(context.Background())
		after, _ := e.record(0)
		switch {
		case !broken && (!errors.Is(err, ErrLeaseLost) || after.Version != successor):
			t.Fatalf("renewal on a challenge of another holder: %v, version %d, want ErrLeaseLost and %d", err, after.Version, successor)
		case broken && (err != nil || after.Version != successor-1):
			t.Fatalf("answerAny: %v, version %d: the broken rule did no harm, so this test cannot catch it", err, after.Version)
		}
	}
}

// While the holder answers a challenge, no read proves its claim: the
// challenge's ETag is not its record's. Its answers failing, its fence falls
// within the window of the confirm, before the confirm may be taken. The rule
// broken (readProvesChallenge: a read of the confirm it answers re-arms the
// fence) keeps it valid when the confirm is taken. The challenger sees no
// holder live in gossip: it challenges a holder whose backstop is not late.
func TestReadOfTheChallengeProvesNothing(t *testing.T) {
	for _, broken := range []bool{false, true} {
		e := newEnv(t)
		c, _ := e.readClaim(e.oneID)
		c.p.rules = *SimRules{ReadProvesChallenge: broken}.mutated()
		e.clk.Advance(2 * time.Second)
		if _, err := c.poll(context.Background()); err != nil {
			t.Fatal(err)
		}
		p, _ := e.challenger(func(c *Config) { c.Peers = staticPeers{} })
		if _, err := p.Acquire(context.Background()); !errors.Is(err, ErrClusterFull) {
			t.Fatalf("challenge of a holder gossip does not show: %v", err)
		}
		_, confirm := e.record(0)
		e.store.Queue(storetest.OpUpdate, storetest.Fault{}, faultErr(storetest.ErrInjected)) // the renewal meets the confirm; the answer fails
		if err := c.attempt(context.Background()); err == nil || !c.Status().Challenged {
			t.Fatalf("an answer that failed: %v, challenged %v", err, c.Status().Challenged)
		}
		for range 13 { // 6.5 s of reads, 500 ms apart: the confirm is takeable by then, the cap not reached
			e.clk.Advance(500 * time.Millisecond)
			_, _ = c.poll(context.Background())
		}
		if st := lease.StateOf(&lease.Record{Holder: "a", LeaseMillis: 12000, Challenge: &lease.Challenge{Confirmed: true, WindowMillis: 3000}},
			lease.Meta{LastModified: confirm.LastModified, Date: e.clk.Now().Truncate(time.Second)}, time.Second); st != lease.StateExpired {
			t.Fatalf("the confirm is %v 6.5 s after it landed", st)
		}
		if c.Valid() != broken {
			t.Fatalf("readProvesChallenge %v: the holder is valid %v when its confirm may be taken", broken, c.Valid())
		}
	}
}

// A confirm is taken only once Date - Last-Modified passed W + 1 s +
// ClockMargin: whole seconds, and a Last-Modified stamped early, leave the
// holder's last read's fence standing until then. Taken at age W (the rule
// without its margins), a holder with a small SafetyMargin is still valid.
func TestConfirmTakenOnlyPastItsMargins(t *testing.T) {
	for _, early := range []bool{false, true} {
		e := newEnv(t)
		c, _ := e.readClaim(func(c *Config) { e.oneID(c); c.SafetyMargin = 100 * time.Millisecond })
		for range 16 {
			e.clk.Advance(500 * time.Millisecond)
			if _, err := c.poll(context.Background()); err != nil {
				t.Fatal(err)
			}
		}
		e.clk.Advance(900 * time.Millisecond)                   // 8.9 s: LM of the confirm will be 8 s, its landing 8.9 s
		if _, err := c.poll(context.Background()); err != nil { // the last read before the challenge, at 8.9 s
			t.Fatal(err)
		}
		cfg := e.readConfig("b")
		e.oneID(&cfg)
		cfg.SafetyMargin = 100 * time.Millisecond
		if early {
			cfg = WithSimRules(cfg, SimRules{StateOf: func(r *lease.Record, m lease.Meta) lease.State {
				if age, ok := lease.StoreAge(m.LastModified, m.Date); ok && r.Challenge != nil && r.Challenge.Confirmed && age >= r.TakeableAfter() {
					return lease.StateExpired
				}
				return lease.StateOf(r, m, time.Second)
			}})
		}
		p := e.provider(cfg)
		if _, err := p.Acquire(context.Background()); !errors.Is(err, ErrClusterFull) {
			t.Fatalf("challenge: %v", err)
		}
		var taken *Claim
		for taken == nil && e.clk.Now().Sub(start) < 20*time.Second {
			e.clk.Advance(100 * time.Millisecond)
			taken = tryAcquire(t, p)
		}
		if taken == nil || c.Valid() != early {
			t.Fatalf("confirm taken at its window %v: taken %v, the holder valid %v at the take", early, taken != nil, c.Valid())
		}
	}
}

// A release refused by a challenge of ours is written on the challenge's
// ETag: the ID is free at once.
func TestReleaseOverAChallenge(t *testing.T) {
	e := newEnv(t)
	c, _ := e.lateHolder()
	p, _ := e.challenger()
	if _, err := p.Acquire(context.Background()); !errors.Is(err, ErrClusterFull) {
		t.Fatalf("challenge: %v", err)
	}
	if err := c.Close(context.Background()); err != nil {
		t.Fatalf("release over a confirm: %v", err)
	}
	if r, _ := e.record(0); !r.Free() || r.Challenge != nil {
		t.Fatalf("after the release: %+v", r)
	}
}

// Whom to challenge: only in read mode, plain records only with a late
// backstop or a holder gossip does not show live, an unconfirmed challenge
// (stale) at once when it is this task's, else once it stood Window; never a
// confirm.
func TestSuspected(t *testing.T) {
	e := newEnv(t)
	cfg := e.readConfig("b")
	p := e.provider(cfg)
	lm := e.clk.Now()
	plain := lease.Record{NodeID: 1, Holder: "a", Version: 1, LeaseMillis: 12000, WriteID: "00000000000000aa"}
	at := func(age time.Duration) readResult {
		return readResult{id: 1, meta: lease.Meta{LastModified: lm, Date: lm.Add(age)}}
	}
	w := &watched{challenged: map[int]int64{}}
	if p.suspected(at(7*time.Second), plain, nil, w) || !p.suspected(at(7*time.Second+time.Millisecond), plain, nil, w) {
		t.Fatalf("a backstop late by RenewInterval 4s + Window 3s")
	}
	confirm := plain
	confirm.Challenge = &lease.Challenge{Of: "00000000000000bb", By: "c", Confirmed: true, WindowMillis: 3000}
	if p.suspected(at(time.Minute), confirm, nil, w) {
		t.Fatalf("a confirm is never challenged")
	}
	stale := plain
	stale.Challenge = &lease.Challenge{Of: "00000000000000aa", By: "c", WindowMillis: 3000}
	if p.suspected(at(3*time.Second), stale, nil, w) || !p.suspected(at(3*time.Second+time.Millisecond), stale, nil, w) {
		t.Fatalf("another task's unconfirmed challenge is challenged again once it stood Window 3s unanswered")
	}
	stale.Challenge.By = "b"
	if !p.suspected(at(0), stale, nil, w) {
		t.Fatalf("this task's own unconfirmed challenge (its confirm failed) is challenged again at once")
	}
	judged := at(time.Minute)
	judged.meta.Liveness = lease.LivenessLive
	if p.suspected(judged, plain, nil, w) {
		t.Fatalf("a store that judges expiry itself gives no window to run")
	}
	if wp := e.provider(e.config("w")); wp.suspected(at(time.Minute), plain, nil, w) {
		t.Fatalf("write mode never challenges")
	}
}

// A challenge left unconfirmed by a challenger that crashed between its two
// writes is not left to stand for a backstop: another task leaves it alone
// while it is younger than Window (its challenger may confirm, its holder
// answer), then challenges again over it, naming the same write of the
// holder, and confirms after that challenge's 2xx. A live holder answers the
// new confirm as any other: its record, same version, the challenge cleared.
func TestStaleChallengeChallengedAgain(t *testing.T) {
	e := newEnv(t)
	holder, _ := e.lateHolder()
	plain, _ := e.record(0)
	b, _ := e.challenger()
	e.store.Queue(storetest.OpUpdate, storetest.Fault{}, faultErr(storetest.ErrInjected)) // b's confirm fails: b is gone
	if _, err := b.Acquire(context.Background()); !errors.Is(err, ErrClusterFull) {
		t.Fatalf("b's challenge: %v", err)
	}
	stale, staleMeta := e.record(0)
	c, events := e.challenger(func(c *Config) { c.TaskID = "c" })
	if _, err := c.Acquire(context.Background()); !errors.Is(err, ErrClusterFull) || events.challenged != 0 {
		t.Fatalf("c's Acquire while b's challenge is younger than Window: %v, events %+v", err, events)
	}
	if r, m := e.record(0); m.ETag != staleMeta.ETag {
		t.Fatalf("c wrote over a fresh challenge: %+v (challenge %+v)", r, r.Challenge)
	}
	e.clk.Advance(4 * time.Second) // whole-second Date: b's challenge stood more than Window
	if _, err := c.Acquire(context.Background()); !errors.Is(err, ErrClusterFull) || events.confirmed != 1 {
		t.Fatalf("c's Acquire over a stale challenge: %v, events %+v", err, events)
	}
	cf, _ := e.record(0)
	if ch := cf.Challenge; ch == nil || !ch.Confirmed || ch.By != "c" || ch.Of != plain.WriteID || ch.Of != stale.Challenge.Of ||
		cf.Holder != "a" || cf.Version != plain.Version || cf.ReservedUntilMs != plain.ReservedUntilMs {
		t.Fatalf("after c's challenge: %+v (challenge %+v), want c's confirm naming the holder's write %s", cf, cf.Challenge, plain.WriteID)
	}
	if _, err := holder.poll(context.Background()); !errors.Is(err, errETagChanged) {
		t.Fatalf("holder's poll of the confirm: %v, want errETagChanged", err)
	}
	if err := holder.renewStep(context.Background()); err != nil {
		t.Fatalf("the holder's answer: %v", err)
	}
	if r, _ := e.record(0); r.Challenge != nil || r.Holder != "a" || r.Version != plain.Version || !holder.Valid() {
		t.Fatalf("after the answer: %+v (challenge %+v), valid %v", r, r.Challenge, holder.Valid())
	}
}

// Without gossip, a task waiting in one Acquire challenges a silent holder
// once its backstop is late (RenewInterval + Window on the store's clock):
// it reads again a lease it read held then, not only once the backstop
// expired it, and takes the ID a window after the confirm, long before B.
func TestWaiterChallengesALateBackstop(t *testing.T) {
	e := newEnv(t)
	slow := func(c *Config) {
		e.oneID(c)
		c.Backstop, c.MaxLeaseDuration, c.StoreTimeout = 30*time.Second, 30*time.Second, time.Second
	}
	e.readClaim(slow) // takes at 0, then says nothing: no backstop write, no read
	// The waiter issues no IDs (as an election's candidate); an issuer's
	// take is as fast (TestWaiterTakesACrashedIssuerAndHoldsItUntilTheFloor).
	events := &challengeEvents{}
	p, _ := e.challenger(slow, func(c *Config) { c.AcquireTimeout, c.IssuesNoIDs, c.Observer = time.Minute, true, events })
	took := e.recordTake(events)
	r := e.stepUntil(acquireAsync(p), 1)
	if r.err != nil {
		t.Fatalf("Acquire: %v", r.err)
	}
	defer r.c.Close(context.Background())
	// Late at 10 s + 3 s (whole-second Date: looked at by 15 s), confirmed
	// then, taken W + 1 s + ClockMargin after it, whole seconds: by 22 s.
	if at := took(); at.IsZero() || at.Sub(start) > 22*time.Second {
		t.Fatalf("taken %v after the holder's last write; want within 22 s (B is 30 s) by a challenge", at.Sub(start))
	}
}

// recordTake returns the fake clock's instant at the first update after a
// confirm counted by events: the take (zero before it). The test's clock
// steps on while the claim's loops sleep, before Acquire returns: only the
// take's own write tells its instant.
func (e *env) recordTake(events *challengeEvents) func() time.Time {
	var mu sync.Mutex
	var took time.Time
	e.store.SetInjector(func(op storetest.Op, _ string) storetest.Fault {
		mu.Lock()
		defer mu.Unlock()
		if op == storetest.OpUpdate && took.IsZero() && events.confirmed == 1 {
			took = e.clk.Now()
		}
		return storetest.Fault{}
	})
	return func() time.Time {
		mu.Lock()
		defer mu.Unlock()
		return took
	}
}

// A crashed ID issuer is re-taken as fast as a non-issuer: the waiter
// challenges its late backstop, confirms, and takes the ID W + 1 s +
// ClockMargin after the confirm, far before the holder's reservation (its
// wall clock + B at its last write) nears the waiter's clock. It holds the
// ID meanwhile, and Acquire returns it only when the clock is within
// MaxClockWait of that floor: its first Snowflake ID comes after the
// predecessor's last, whatever the fence.
func TestWaiterTakesACrashedIssuerAndHoldsItUntilTheFloor(t *testing.T) {
	e := newEnv(t)
	slow := func(c *Config) {
		e.oneID(c)
		c.Backstop, c.MaxLeaseDuration, c.StoreTimeout = 30*time.Second, 30*time.Second, time.Second
	}
	holder, _ := e.readClaim(slow) // takes at 0, then says nothing: no backstop write, no read
	floor := holder.Reservation()
	events := &timedEvents{acquiredClock: acquiredClock{clk: e.clk}}
	p, _ := e.challenger(slow, func(c *Config) { c.AcquireTimeout, c.Observer = time.Minute, events })
	took := e.recordTake(&events.challengeEvents)
	// One goroutine sleeps on the clock until the take (Acquire's), two
	// after it (the claim's loop, and Acquire waiting for the floor).
	r := e.stepUntilBy(acquireAsync(p), func() int { return map[bool]int{true: 1, false: 2}[took().IsZero()] })
	if r.err != nil {
		t.Fatalf("Acquire: %v", r.err)
	}
	defer r.c.Close(context.Background())
	returned := events.acquired()
	// As TestWaiterChallengesALateBackstop: confirmed by 15 s, taken by 22 s.
	if at := took(); at.IsZero() || at.Sub(start) > 22*time.Second || r.c.Floor() != floor {
		t.Fatalf("taken at %v after the holder's last write (floor %d, want %d); want within 22 s, before its floor (30 s) nears", at.Sub(start), r.c.Floor(), floor)
	}
	// Returned once the clock is within MaxClockWait (5 s) of the floor.
	near := time.UnixMilli(floor).Add(-p.cfg.MaxClockWait)
	if !returned.Equal(near) {
		t.Fatalf("Acquire returned at %v, want when the clock nears the floor, %v", returned.Sub(start), near.Sub(start))
	}
}

// timedEvents is challengeEvents that also records when Acquire returned.
type timedEvents struct {
	challengeEvents
	acquiredClock
}

func (o *timedEvents) Acquired(int, int64, time.Duration) { o.mark() }

// joiningPeers is a GossipJoiner whose view learns the holder of node ID 0
// (at version) when meets is set and its address is joined.
type joiningPeers struct {
	mu      sync.Mutex
	meets   bool
	version int64
	known   map[int]int64
	joins   []string
}

func (j *joiningPeers) KnownNodes() map[int]int64 {
	j.mu.Lock()
	defer j.mu.Unlock()
	out := map[int]int64{}
	for id, v := range j.known {
		out[id] = v
	}
	return out
}

func (j *joiningPeers) JoinGossip(_ context.Context, addr string) error {
	j.mu.Lock()
	defer j.mu.Unlock()
	j.joins = append(j.joins, addr)
	if j.meets {
		j.known = map[int]int64{0: j.version}
	}
	return nil
}

// In read mode a holder that gossip does not show live, whose record
// publishes its gossip address, is joined before it is challenged: once met
// (live in gossip) it is not challenged; a holder still not live once joined
// is challenged in the same round.
func TestASuspectMetInGossipIsNotChallenged(t *testing.T) {
	for _, meets := range []bool{true, false} {
		e := newEnv(t)
		c, _ := e.readClaim(func(c *Config) { e.oneID(c); c.GossipAddr = "10.0.0.7:7946" })
		e.clk.Advance(2 * time.Second)
		if _, err := c.poll(context.Background()); err != nil {
			t.Fatal(err)
		}
		peers := &joiningPeers{meets: meets, version: c.Version()}
		p, events := e.challenger(func(c *Config) { c.Peers = peers })
		if _, err := p.Acquire(context.Background()); !errors.Is(err, ErrClusterFull) {
			t.Fatalf("meets %v: Acquire on a full cluster: %v", meets, err)
		}
		want := 0
		if !meets {
			want = 1
		}
		if events.challenged != want || len(peers.joins) != 1 || peers.joins[0] != "10.0.0.7:7946" {
			t.Errorf("meets %v: %d challenges, joins %v; want %d, and the record's address joined once",
				meets, events.challenged, peers.joins, want)
		}
	}
}

// TestAnswerRetriesWithinTheWindow: while a claim answers a challenge, a
// renewal round's pause before its next attempt is at most a quarter
// PollInterval (the answer must land within the window, and no poll wakes
// the loop while the challenge's ETag stands); otherwise the backoff's.
func TestAnswerRetriesWithinTheWindow(t *testing.T) {
	c := &Claim{p: &Provider{t: Timings{PollInterval: 400 * time.Millisecond}}}
	c.snap.Store(&snapshot{})
	if got := c.pauseFor(5 * time.Second); got != 5*time.Second {
		t.Errorf("pause while not answering = %v, want the backoff's 5s", got)
	}
	c.answerChallenge()
	if got := c.pauseFor(5 * time.Second); got != 100*time.Millisecond {
		t.Errorf("pause while answering = %v, want a quarter PollInterval, 100ms", got)
	}
	if got := c.pauseFor(10 * time.Millisecond); got != 10*time.Millisecond {
		t.Errorf("a short pause while answering = %v, want it kept", got)
	}
}
