package node

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/nodeid/nodeid/lease/storetest"
	"github.com/nodeid/nodeid/nodeid"
)

// clockChild writes the host's clock (Unix ms, what a child issuing
// Snowflake IDs stamps them with) to $DIR/last every few ms, its start time
// and NODEID_FLOOR_MS to $DIR/start, and on SIGTERM its clock once more
// before it exits.
const clockChild = `
trap 'date +%s%3N > "$DIR/last.tmp"; mv "$DIR/last.tmp" "$DIR/last"; exit 0' TERM
echo "$(date +%s%3N) $NODEID_FLOOR_MS" > "$DIR/start.tmp"; mv "$DIR/start.tmp" "$DIR/start"
while :; do date +%s%3N > "$DIR/last.tmp"; mv "$DIR/last.tmp" "$DIR/last"; sleep 0.005; done
`

func readMs(t *testing.T, path string) int64 {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	ms, err := strconv.ParseInt(strings.Fields(string(b))[0], 10, 64)
	if err != nil {
		t.Fatal(err)
	}
	return ms
}

// The node's wall clock (nodeid.SystemClock) is read once at start and then
// advanced by the monotonic clock: it never steps. The supervised child
// stamps its IDs with the host's clock, which does (an NTP step, a manual
// date, a VM resume). Here the host's clock is 3 s ahead of the node's wall
// reading, as after a +3 s step of the host clock once the node was running
// (modelled as SystemClock(-3s), as demo-broker's --debug-clock-offset
// does): the release keeps the reservation at or above the host's clock, so
// that a successor's floor is above every ID the child issued. (It was 3 s
// below when the release used the node's wall clock.)
func TestReleaseAfterChildCoversTheHostClock(t *testing.T) {
	store := storetest.NewMemStore()
	cfg := testConfig("a", 1)
	cfg.Provider.Clock = nodeid.SystemClock(-3 * time.Second)
	n, err := New(store, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := n.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	cmd := exec.Command("sh", "-c", clockChild)
	cmd.Env = append(os.Environ(), "DIR="+dir)
	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error, 1)
	go func() { errc <- n.Supervise(ctx, cmd, DefaultChildConfig()) }()
	waitFile(t, filepath.Join(dir, "start"), errc)
	time.Sleep(300 * time.Millisecond)
	cancel() // SIGTERM: the child stops; then the ID is released
	if err := <-errc; err != nil {
		t.Fatalf("Supervise: %v", err)
	}
	if err := n.Close(closeCtx(t)); err != nil {
		t.Fatal(err)
	}
	last := readMs(t, filepath.Join(dir, "last"))
	rec := readRecord(t, store, 0)
	if rec.Holder != "" {
		t.Fatalf("not released: %+v", rec)
	}
	if rec.ReservedUntilMs < last {
		t.Fatalf("released with reservedUntilMs %d, %v below the child's last timestamp %d: a successor's floor is below IDs the child issued",
			rec.ReservedUntilMs, time.Duration(last-rec.ReservedUntilMs)*time.Millisecond, last)
	}
}

// The converse step (host clock 3 s behind the node's wall reading, as after
// a -3 s step): Supervise waits for the host's clock, which the child stamps
// its IDs with, to pass NODEID_FLOOR_MS (it waited for the node's wall clock,
// and the child started 3 s early).
func TestChildStartsPastTheFloorOnTheHostClock(t *testing.T) {
	store := storetest.NewMemStore()
	// A predecessor released node 0 keeping its reservation 2 s ahead of the host clock.
	pc := testConfig("old", 1).Provider
	p, err := nodeid.New(store, pc)
	if err != nil {
		t.Fatal(err)
	}
	floor := time.Now().Add(2 * time.Second).UnixMilli()
	old, err := p.Acquire(context.Background(), nodeid.WithIssuedFunc(func() int64 { return floor }))
	if err != nil {
		t.Fatal(err)
	}
	if err := old.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	if r := readRecord(t, store, 0); r.ReservedUntilMs != floor {
		t.Fatalf("planted floor %d, record says %d", floor, r.ReservedUntilMs)
	}
	cfg := testConfig("a", 1)
	cfg.Provider.Clock = nodeid.SystemClock(3 * time.Second)
	n, err := New(store, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := n.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = n.Close(closeCtx(t)) })
	dir := t.TempDir()
	cmd := exec.Command("sh", "-c", clockChild)
	cmd.Env = append(os.Environ(), "DIR="+dir)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	errc := make(chan error, 1)
	go func() { errc <- n.Supervise(ctx, cmd, DefaultChildConfig()) }()
	waitFile(t, filepath.Join(dir, "start"), errc)
	b, _ := os.ReadFile(filepath.Join(dir, "start"))
	f := strings.Fields(string(b))
	started, _ := strconv.ParseInt(f[0], 10, 64)
	if env, _ := strconv.ParseInt(f[1], 10, 64); env != floor {
		t.Fatalf("NODEID_FLOOR_MS %d, want %d", env, floor)
	}
	if started <= floor {
		t.Fatalf("the child started at %d on the host's clock, %v before NODEID_FLOOR_MS %d", started, time.Duration(floor-started)*time.Millisecond, floor)
	}
}

// TestChildKilledWhenTheHostClockPassesTheReservation: a step of the host's
// clock past the lease's reservation (or a resumed VM: the host's clock
// counted the suspension, the monotonic one did not) leaves the child's IDs
// uncovered: it is killed at the supervisor's next poll (deadlinePoll, the
// bound docs/evidence/design.md states), Supervise fails, and the release raises the
// reservation above the host's clock.
func TestChildKilledWhenTheHostClockPassesTheReservation(t *testing.T) {
	store := storetest.NewMemStore()
	host := &steppedHost{}
	cfg := testConfig("a", 1)
	cfg.HostClock = host.now
	n, err := New(store, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := n.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	errc := make(chan error, 1)
	go func() { errc <- n.Supervise(context.Background(), childCmd(dir), DefaultChildConfig()) }()
	waitFile(t, filepath.Join(dir, "id"), errc)
	host.step(time.Hour)
	stepped := host.ms()
	select {
	case err := <-errc:
		if err == nil || !strings.Contains(err.Error(), "reservation") && !strings.Contains(err.Error(), "fence") {
			t.Fatalf("Supervise = %v, want the child killed for the host's clock", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the child still runs 10 s after the host's clock passed the reservation")
	}
	if err := n.Close(closeCtx(t)); err != nil {
		t.Fatal(err)
	}
	if rec := readRecord(t, store, 0); rec.ReservedUntilMs < stepped {
		t.Fatalf("released with reservation %d, below the host's clock %d after the step", rec.ReservedUntilMs, stepped)
	}
}
