package nodeid

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/nodeid/nodeid/lease"
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

// A Claim closed without SetIssuedFunc keeps its reservation: the free record's
// floor is up to a lease ahead. A successor whose MaxClockWait is shorter does
// not fail with ErrClockBehind (that floor is what such a release leaves, by the
// record's age on the store's clock, not a clock anomaly): it waits until its
// clock is within MaxClockWait of the floor, then takes the ID above it.
func TestReleaseKeepingItsReservationIsTakenWhenTheFloorNears(t *testing.T) {
	e := newEnv(t)
	cfg := e.config("a")
	cfg.ClusterSize, cfg.MaxClockWait = 1, 500*time.Millisecond
	a := e.acquire(e.provider(cfg))
	reserved := a.Reservation()
	if err := a.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	if ahead := time.Duration(reserved-e.clk.Wall().UnixMilli()) * time.Millisecond; ahead <= cfg.MaxClockWait {
		t.Fatalf("the kept floor is %v ahead, not beyond MaxClockWait %v: the test tests nothing", ahead, cfg.MaxClockWait)
	}
	obs := &tookObserver{anomalies: anomalies{ch: make(chan string, 10)}}
	b := cfg
	b.TaskID, b.AcquireTimeout, b.Observer = "b", time.Minute, obs
	started := e.clk.Wall()
	r := e.stepUntil(acquireAsync(e.provider(b)), 1)
	if r.err != nil {
		t.Fatalf("Acquire = %v, want node 0 once the floor nears", r.err)
	}
	defer r.c.Close(context.Background())
	near := time.UnixMilli(reserved).Add(-cfg.MaxClockWait)
	if took := started.Add(obs.took); r.c.Floor() != reserved || took.Before(near) || took.After(near.Add(cfg.AcquireBackoff)) {
		t.Fatalf("took with floor %d at %v; want floor %d, taken within a pause after %v", r.c.Floor(), took, reserved, near)
	}
	select {
	case a := <-obs.ch:
		t.Fatalf("anomaly %q for a floor the release explains", a)
	default:
	}
}

// tookObserver records anomalies, and how long the acquisition took.
type tookObserver struct {
	anomalies
	took time.Duration // written by Acquire before it returns
}

func (o *tookObserver) Acquired(_ int, _ int64, took time.Duration) { o.took = took }
