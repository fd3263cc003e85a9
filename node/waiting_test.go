package node

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/nodeid/nodeid/internal/testkit/fakeclock"
	"github.com/nodeid/nodeid/internal/testkit/logbuf"
	"github.com/nodeid/nodeid/lease/storetest"
	"github.com/nodeid/nodeid/nodeid"
)

// TestAcquireWaitingLogsAndReports: a round of Acquire that took no ID
// turns the health reason into why (here a full cluster), and is logged at
// once and then once per waitLogEvery, on the node's clock.
func TestAcquireWaitingLogsAndReports(t *testing.T) {
	clk := fakeclock.New(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC))
	var logs logbuf.Buffer
	cfg := testConfig("a", 2)
	cfg.Provider.Clock = clk
	cfg.Logger = slog.New(slog.NewJSONHandler(&logs, nil))
	n, err := New(storetest.NewMemStore(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	n.acquireStart = clk.Now()
	if err := n.Check(); !errors.Is(err, ErrAcquiring) || err.Error() != ErrAcquiring.Error() {
		t.Fatalf("Check before any round: %v, want ErrAcquiring alone", err)
	}
	full := fmt.Errorf("%w after 1 rounds", nodeid.ErrClusterFull)
	const msg = "no node ID taken yet: still acquiring"
	for i, step := range []struct {
		advance time.Duration
		logs    int
	}{
		{500 * time.Millisecond, 1}, // the first is logged at once
		{time.Second, 1},
		{waitLogEvery - time.Second - time.Millisecond, 1},
		{time.Millisecond, 2}, // waitLogEvery after the first line
		{waitLogEvery / 2, 2},
	} {
		clk.Advance(step.advance)
		n.acquireWaiting(i+1, full)
		if got := logs.Count(msg); got != step.logs {
			t.Errorf("round %d: %d log lines, want %d", i+1, got, step.logs)
		}
	}
	err = n.Check()
	if !errors.Is(err, ErrAcquiring) || !errors.Is(err, nodeid.ErrClusterFull) || !strings.Contains(err.Error(), "(5 attempts in 15.5s)") {
		t.Fatalf("Check while waiting: %v, want acquiring, 5 attempts in 15.5s, and the cluster full", err)
	}
	if code, body := get(n.Handler(), "/health"); code != http.StatusServiceUnavailable || !strings.Contains(body, "cluster full") {
		t.Errorf("/health while waiting: %d %s, want 503 naming the full cluster", code, body)
	}
}

// TestFullClusterSaysSo: a node waiting on a full cluster says so in its
// health reason and its log while it waits, not only when it gives up.
func TestFullClusterSaysSo(t *testing.T) {
	store := storetest.NewMemStore()
	holder, err := New(store, testConfig("holder", 1))
	if err != nil {
		t.Fatal(err)
	}
	if err := holder.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	defer holder.Close(closeCtx(t))
	var logs logbuf.Buffer
	cfg := testConfig("waiter", 1)
	cfg.Logger = slog.New(slog.NewJSONHandler(&logs, nil))
	cfg.Provider.AcquireTimeout = time.Hour
	waiter, err := New(store, cfg)
	if err != nil {
		t.Fatal(err)
	}
	started := make(chan error, 1)
	go func() { started <- waiter.Start(context.Background()) }()
	deadline := time.Now().Add(20 * time.Second)
	for !errors.Is(waiter.Check(), nodeid.ErrClusterFull) {
		if time.Now().After(deadline) {
			t.Fatalf("the waiting node's health reason never named the full cluster: %v", waiter.Check())
		}
		time.Sleep(10 * time.Millisecond)
	}
	if logs.Count("no node ID taken yet: still acquiring") == 0 || logs.Count("cluster full") == 0 {
		t.Errorf("no log line says why the node waits:\n%s", logs.String())
	}
	_ = waiter.Close(closeCtx(t))
	if err := <-started; err == nil {
		t.Fatal("Start succeeded on a full cluster")
	}
}

// TestAwaitingFloorShowsTheID: a node that took an ID whose floor is more
// than MaxClockWait ahead (a predecessor's release that kept its
// reservation) holds it until its clock nears the floor; meanwhile /status
// shows that ID, its version and floor under awaitingFloor, and the log
// says it holds the ID, not that it is still acquiring.
func TestAwaitingFloorShowsTheID(t *testing.T) {
	store := storetest.NewMemStore()
	releasedBefore(t, store, 9*time.Second) // keeps its reservation: 9 s ahead
	floor := readRecord(t, store, 0).ReservedUntilMs

	var logs logbuf.Buffer
	cfg := testConfig("b", 1)
	cfg.Logger = slog.New(slog.NewJSONHandler(&logs, nil))
	cfg.Provider.MaxClockWait = time.Second
	n, err := New(store, cfg)
	if err != nil {
		t.Fatal(err)
	}
	go func() { _ = n.Start(context.Background()) }()
	t.Cleanup(func() { _ = n.Close(closeCtx(t)) })
	var s StatusResponse
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(time.Millisecond) {
		if s = n.Status(); s.AwaitingFloor != nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("status never showed the ID held until its floor: %+v", s)
		}
	}
	if af := s.AwaitingFloor; af.NodeID != 0 || af.Version != 2 || af.FloorMs != floor || af.WaitMs <= 0 || s.State != StateAcquiring || s.NodeID != -1 {
		t.Errorf("status %+v, awaitingFloor %+v; want node 0 version 2 floor %d, still acquiring", s, af, floor)
	}
	if !strings.Contains(s.Error, "node 0 (version 2)") {
		t.Errorf("status error %q, want it to name node 0 version 2", s.Error)
	}
	if code, body := get(n.Handler(), "/status"); code != http.StatusOK || !strings.Contains(body, `"awaitingFloor":{"nodeId":0,"version":2,"floorMs":`) {
		t.Errorf("/status: %d %s", code, body)
	}
	if logs.Count("holding a node ID until this task's clock nears its floor: not serving it yet") != 1 || logs.Count("still acquiring") != 0 {
		t.Errorf("log lines:\n%s", logs.String())
	}
}
