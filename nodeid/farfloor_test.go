package nodeid

import (
	"context"
	"errors"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nodeid/nodeid/internal/testkit/fakeclock"
	"github.com/nodeid/nodeid/lease"
	"github.com/nodeid/nodeid/lease/storetest"
)

// fillNow creates every lease object free at once.
func (e *env) fillNow(cfg Config) {
	e.t.Helper()
	cfg.TaskID = "init"
	if _, err := Init(context.Background(), e.mem, cfg); err != nil {
		e.t.Fatalf("Init: %v", err)
	}
}

// plantFloor rewrites node id's lease object free with its floor
// (reservedUntilMs) at floor, keeping its version.
func (e *env) plantFloor(id int, floor int64) {
	e.t.Helper()
	r, m := e.record(id)
	r.Holder, r.ReservedUntilMs, r.WriteID = "", floor, lease.NewWriteID()
	r.RenewedAt, r.ExpiresAt = time.Time{}, time.Time{}
	body, err := r.Encode()
	if err != nil {
		e.t.Fatal(err)
	}
	if _, err := e.mem.Update(context.Background(), lease.RecordKey(id), body, m.ETag); err != nil {
		e.t.Fatal(err)
	}
}

// anomalies records the keys reported to Observer.Anomaly, with their errors.
type anomalies struct {
	NopObserver
	ch chan string
}

func (a *anomalies) Anomaly(key string, err error) { a.ch <- key + ": " + err.Error() }

// A free lease whose floor is far ahead of this task's wall clock (a holder
// whose clock was ahead, then crashed) is skipped as an anomaly, not taken and
// not bumped: in lowest-first order the task takes the next free ID instead of
// failing with ErrClockBehind.
func TestFarFloorIsSkippedForAnotherFreeID(t *testing.T) {
	e := newEnv(t)
	cfg := e.config("a")
	cfg.Order = OrderLowestFirst
	e.fillNow(cfg)
	far := start.Add(time.Hour).UnixMilli()
	e.plantFloor(0, far)
	before, _ := e.record(0)
	obs := &anomalies{ch: make(chan string, 10)}
	cfg.Observer = obs
	c, err := e.provider(cfg).Acquire(context.Background())
	if err != nil {
		t.Fatalf("Acquire with node 0's floor 1 h ahead and nodes 1-3 free: %v, want another ID", err)
	}
	defer c.Close(context.Background())
	if c.NodeID() != 1 || c.Floor() > start.UnixMilli()+cfg.MaxClockWait.Milliseconds() {
		t.Fatalf("took node %d with floor %d, want node 1 with an ordinary floor", c.NodeID(), c.Floor())
	}
	if after, _ := e.record(0); after.Version != before.Version || after.WriteID != before.WriteID {
		t.Fatalf("node 0 was written (version %d -> %d): a skipped ID must not be bumped", before.Version, after.Version)
	}
	select {
	case a := <-obs.ch:
		if !strings.Contains(a, lease.RecordKey(0)) || !strings.Contains(a, "floor") {
			t.Fatalf("anomaly %q, want one naming node 0's floor", a)
		}
	default:
		t.Fatalf("no anomaly reported for node 0's far floor")
	}
}

// A task whose own wall clock is behind the floor of every lease it could take
// still refuses with ErrClockBehind, naming its clock, and writes nothing.
func TestClockBehindEveryTakeableFloorRefuses(t *testing.T) {
	e := newEnv(t)
	cfg := e.config("a")
	cfg.ClusterSize = 2
	e.fillNow(cfg)
	c := e.acquire(e.provider(cfg)) // a live holder of one ID: not takeable
	other := 1 - c.NodeID()
	e.plantFloor(other, start.Add(time.Minute).UnixMilli())
	before, _ := e.record(other)
	e.clk.SetWallOffset(-time.Minute) // both floors are a minute ahead of b's wall clock
	cfg.TaskID = "b"
	_, err := e.provider(cfg).Acquire(context.Background())
	if !errors.Is(err, ErrClockBehind) {
		t.Fatalf("Acquire = %v, want ErrClockBehind", err)
	}
	for _, want := range []string{"this task's wall clock reads " + start.Add(-time.Minute).Format(time.RFC3339Nano), "MaxClockWait"} {
		if !strings.Contains(err.Error(), want) {
			t.Fatalf("error %q does not say %q", err, want)
		}
	}
	if after, _ := e.record(other); after.Version != before.Version || after.WriteID != before.WriteID {
		t.Fatalf("node %d was written (version %d -> %d) by a task that refused it", other, before.Version, after.Version)
	}
}

// A Claim closed without WithIssuedFunc keeps its reservation: the free record's
// floor is up to a lease ahead. A successor whose MaxClockWait is shorter does
// not fail with ErrClockBehind (that floor is what such a release leaves, by the
// record's age on the store's clock, not a clock anomaly): it takes the ID at
// once and holds it, and Acquire returns it when its clock is within
// MaxClockWait of the floor. So also when the release is stamped just before
// a whole second and read just after it (the whole-second age overstates the
// time since by almost a second), and on a store that judges expiry itself,
// which reports no age at all.
func TestReleaseKeepingItsReservationIsHeldUntilTheFloorNears(t *testing.T) {
	for _, tt := range []struct {
		name          string
		env           func(*testing.T) *env
		before, after time.Duration // fake time before the take, and between release and successor
	}{
		{"whole second", newEnv, 0, 0},
		{"off the whole second", newEnv, 900 * time.Millisecond, 200 * time.Millisecond},
		{"store judges expiry", newJudgedEnv, 0, 0},
	} {
		t.Run(tt.name, func(t *testing.T) {
			e := tt.env(t)
			e.clk.Advance(tt.before)
			cfg := e.config("a")
			cfg.ClusterSize, cfg.MaxClockWait = 1, 500*time.Millisecond
			reserved := e.releaseKeepingReservation(cfg)
			e.clk.Advance(tt.after)
			e.heldUntilTheFloorNears(cfg, 0, reserved)
		})
	}
}

// A recent floor is taken even beside a real anomaly (a free ID whose last
// holder's clock was an hour ahead), and held until this clock nears it,
// instead of failing at once with ErrClockBehind (a single far floor never
// stops a fleet).
func TestRecentFloorBesideAnAnomalyIsHeld(t *testing.T) {
	e := newEnv(t)
	cfg := e.config("a")
	cfg.ClusterSize, cfg.MaxClockWait, cfg.Order = 2, 500*time.Millisecond, OrderLowestFirst
	e.fillNow(cfg)
	e.plantFloor(1, start.Add(time.Hour).UnixMilli()) // an anomaly, skipped by everyone
	reserved := e.releaseKeepingReservation(cfg)
	e.heldUntilTheFloorNears(cfg, 0, reserved, "1.json")
}

// A free ID with no floor is preferred to a recent floor, which would keep
// Acquire waiting: the recent one is passed over, not taken.
func TestFreeIDPreferredToARecentFloor(t *testing.T) {
	e := newEnv(t)
	cfg := e.config("a")
	cfg.ClusterSize, cfg.MaxClockWait, cfg.Order = 2, 500*time.Millisecond, OrderLowestFirst
	e.fillNow(cfg)
	e.releaseKeepingReservation(cfg) // node 0, visited first
	before, _ := e.record(0)
	b := cfg
	b.TaskID = "b"
	c := e.acquire(e.provider(b))
	defer c.Close(context.Background())
	if c.NodeID() != 1 {
		t.Fatalf("took node %d, want node 1 (free, no floor) rather than node 0 (a recent floor)", c.NodeID())
	}
	if after, _ := e.record(0); after.Version != before.Version {
		t.Fatalf("node 0 was written (version %d -> %d): a recent floor is taken only when nothing else is", before.Version, after.Version)
	}
}

// releaseKeepingReservation takes node 0 (the only ID, or the first in
// lowest-first order) as task a and closes the claim without WithIssuedFunc,
// so that the free record keeps the reservation, and returns it.
func (e *env) releaseKeepingReservation(cfg Config) int64 {
	e.t.Helper()
	a := e.acquire(e.provider(cfg))
	if a.NodeID() != 0 {
		e.t.Fatalf("a took node %d, want 0", a.NodeID())
	}
	reserved := a.Reservation()
	if err := a.Close(context.Background()); err != nil {
		e.t.Fatal(err)
	}
	if ahead := time.Duration(reserved-e.clk.Wall().UnixMilli()) * time.Millisecond; ahead <= cfg.MaxClockWait {
		e.t.Fatalf("the kept floor is %v ahead, not beyond MaxClockWait %v: the test tests nothing", ahead, cfg.MaxClockWait)
	}
	return reserved
}

// acquiredClock records the fake wall clock when Acquire returned a claim
// (Observer.Acquired calls mark).
type acquiredClock struct {
	clk *fakeclock.Clock
	mu  sync.Mutex
	at  time.Time
}

func (a *acquiredClock) mark() {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.at = a.clk.Wall()
}

// acquired returns the instant marked; zero before.
func (a *acquiredClock) acquired() time.Time {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.at
}

// acquiredAt records the anomalies reported and when Acquire returned.
type acquiredAt struct {
	anomalies
	acquiredClock
}

func (a *acquiredAt) Acquired(int, int64, time.Duration) { a.mark() }

// heldUntilTheFloorNears has task b acquire and checks that it takes node id
// with floor at once (its first write, at the instant Acquire begins), and
// that Acquire returns the claim once its clock is within MaxClockWait of the
// floor, not before, with no anomaly reported but for the keys in anomalous.
func (e *env) heldUntilTheFloorNears(cfg Config, id int, floor int64, anomalous ...string) {
	e.t.Helper()
	obs := &acquiredAt{anomalies: anomalies{ch: make(chan string, 100)}, acquiredClock: acquiredClock{clk: e.clk}}
	b := cfg
	b.TaskID, b.AcquireTimeout, b.Observer = "b", time.Minute, obs
	var mu sync.Mutex
	var took time.Time
	e.store.SetInjector(func(op storetest.Op, _ string) storetest.Fault {
		mu.Lock()
		defer mu.Unlock()
		if op == storetest.OpUpdate && took.IsZero() {
			took = e.clk.Wall()
		}
		return storetest.Fault{}
	})
	began := e.clk.Wall()
	// Once taken, two goroutines sleep on the clock: the claim's renewal loop
	// and Acquire's wait for the floor.
	r := e.stepUntil(acquireAsync(e.provider(b)), 2)
	if r.err != nil {
		e.t.Fatalf("Acquire = %v, want node %d once the floor nears", r.err, id)
	}
	defer r.c.Close(context.Background())
	near := time.UnixMilli(floor).Add(-cfg.MaxClockWait)
	mu.Lock()
	defer mu.Unlock()
	if r.c.NodeID() != id || r.c.Floor() != floor || !took.Equal(began) {
		e.t.Fatalf("took node %d with floor %d at %v; want node %d, floor %d, taken at once (%v)",
			r.c.NodeID(), r.c.Floor(), took, id, floor, began)
	}
	if at := obs.acquired(); at.Before(near) || at.After(near.Add(time.Millisecond)) {
		e.t.Fatalf("Acquire returned at %v, want when the clock is within MaxClockWait of the floor, %v", at, near)
	}
	for {
		select {
		case a := <-obs.ch:
			if !slices.ContainsFunc(anomalous, func(k string) bool { return strings.HasPrefix(a, k) }) {
				e.t.Fatalf("anomaly %q for a floor the release explains", a)
			}
		default:
			return
		}
	}
}

// An Acquire that holds an ID until its floor nears and ends meanwhile
// releases it, keeping the floor (never lowering it): its context's end, or this task's wall
// clock stepped back by more than MaxClockWait (ErrClockBehind), which would
// keep it waiting for a floor no release explains.
func TestHeldForItsFloorReleasedWhenAcquireEnds(t *testing.T) {
	for name, end := range map[string]func(e *env, cancel context.CancelFunc){
		"context ended":      func(_ *env, cancel context.CancelFunc) { cancel() },
		"clock stepped back": func(e *env, _ context.CancelFunc) { e.clk.SetWallOffset(-time.Minute) },
	} {
		t.Run(name, func(t *testing.T) {
			e := newEnv(t)
			cfg := e.config("a")
			cfg.ClusterSize, cfg.MaxClockWait = 1, 500*time.Millisecond
			floor := e.releaseKeepingReservation(cfg)
			b := cfg
			b.TaskID, b.AcquireTimeout = "b", time.Minute
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			ch := make(chan error, 1)
			go func() {
				c, err := e.provider(b).Acquire(ctx)
				if c != nil {
					_ = c.Close(context.Background())
				}
				ch <- err
			}()
			e.asleep(2) // taken: the claim's loop and Acquire's wait for the floor
			if r, _ := e.record(0); r.Holder != "b" {
				t.Fatalf("holder %q while Acquire waits for the floor, want b", r.Holder)
			}
			end(e, cancel)
			var err error
			for done := false; !done; {
				select {
				case err = <-ch:
					done = true
				case <-time.After(time.Millisecond):
					if next, ok := e.clk.NextWake(); ok && e.clk.Sleepers() >= 2 {
						e.clk.Advance(next.Sub(e.clk.Now())) // until Acquire wakes and looks at the floor again
					}
				}
			}
			if err == nil || (name == "context ended") != errors.Is(err, context.Canceled) || (name == "clock stepped back") != errors.Is(err, ErrClockBehind) {
				t.Fatalf("Acquire = %v", err)
			}
			if r, _ := e.record(0); r.Holder != "" || r.ReservedUntilMs < floor {
				t.Fatalf("record after the wait ended: holder %q, floor %d; want released, floor %d kept (or raised by a renewal)", r.Holder, r.ReservedUntilMs, floor)
			}
		})
	}
}
