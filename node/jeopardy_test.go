package node

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nodeid/nodeid/internal/testkit/fakeclock"
	"github.com/nodeid/nodeid/lease/storetest"
	"github.com/nodeid/nodeid/nodeid"
)

// stepUntil advances clk wake-up by wake-up (each time the renewal loop
// sleeps on it) until cond holds, for at most limit of fake time.
func stepUntil(t *testing.T, clk *fakeclock.Clock, limit time.Duration, what string, cond func() bool) {
	t.Helper()
	end := clk.Now().Add(limit)
	for deadline := time.Now().Add(5 * time.Second); !cond(); time.Sleep(time.Millisecond) {
		next, ok := clk.NextWake()
		switch {
		case ok && next.After(end):
			t.Fatalf("not %s within %v of fake time", what, limit)
		case ok:
			clk.Advance(next.Sub(clk.Now()))
			deadline = time.Now().Add(5 * time.Second)
		case time.Now().After(deadline):
			t.Fatalf("waiting for %s: nothing sleeps on the clock", what)
		}
	}
}

// TestNodeJeopardyAndRecovery: a node whose store stops answering enters
// jeopardy at its renew deadline: health fails with ErrJeopardy, /status and
// nodeid_lease_jeopardy say so, the id file is taken down, and the node has
// not ended. When the store answers again, the renewal on its last write
// lands: the node serves again with the same version, the file is back
// (and only then does Check pass),
// nodeid_lease_recoveries_total counts it, and the /health, /ids and /status
// answers carry the recovery count (absent before: 0).
func TestNodeJeopardyAndRecovery(t *testing.T) {
	clk := fakeclock.New(time.Now().Round(time.Second))
	fs, cut := cuttableStore(storetest.NewMemStore(storetest.WithClock(clk.Now)))
	path := filepath.Join(t.TempDir(), "id.json")
	cfg := testConfig("a", 1)
	cfg.Provider.Clock, cfg.HostClock, cfg.IDFile, cfg.IDFileGrace = clk, clk.Wall, path, 10*time.Millisecond
	cfg.Metrics = nil // the node's own registry, served on /metrics
	n, err := New(fs, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := n.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = n.Close(closeCtx(t)) })
	version := n.Version()

	cut.Store(true)
	stepUntil(t, clk, 5*time.Second, "in jeopardy", func() bool { return n.Status().State == StateJeopardy })
	st := n.Status()
	if err := n.Check(); !errors.Is(err, nodeid.ErrJeopardy) || n.Err() != nil || st.JeopardyMs <= 0 {
		t.Fatalf("in jeopardy: Check %v, Err %v, status %+v; want ErrJeopardy, no end, jeopardyMs", err, n.Err(), st)
	}
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(time.Millisecond) { // the watcher takes it down
		if _, err := os.Stat(path); os.IsNotExist(err) {
			break
		} else if time.Now().After(deadline) {
			t.Fatalf("id file in jeopardy: %v, want it taken down", err)
		}
	}
	if out := scrape(t, n); !strings.Contains(out, "nodeid_lease_jeopardy 1") || !strings.Contains(out, "nodeid_lease_jeopardies_total 1") {
		t.Fatalf("metrics in jeopardy lack nodeid_lease_jeopardy 1 and nodeid_lease_jeopardies_total 1")
	}
	if code, body := get(n.Handler(), "/health"); code != http.StatusServiceUnavailable || strings.Contains(body, "recoveries") {
		t.Fatalf("/health in jeopardy: %d %s, want 503 without a recovery count", code, body)
	}

	cut.Store(false)
	stepUntil(t, clk, 2*time.Second, "recovered", func() bool { return n.Status().State == StateHeld })
	for deadline := time.Now().Add(5 * time.Second); n.Check() != nil; time.Sleep(time.Millisecond) { // once the watcher wrote the file again
		if time.Now().After(deadline) {
			t.Fatalf("recovered: Check %v", n.Check())
		}
	}
	if _, err := os.Stat(path); err != nil || n.Version() != version {
		t.Fatalf("recovered with version %d (want %d), Check nil, id file %v: want it written again", n.Version(), version, err)
	}
	if f := readIDFile(t, path); f.NodeID != n.NodeID() || f.Version != version {
		t.Fatalf("id file after the recovery: %+v", f)
	}
	if out := scrape(t, n); !strings.Contains(out, "nodeid_lease_jeopardy 0") || !strings.Contains(out, "nodeid_lease_recoveries_total 1") {
		t.Fatalf("metrics after the recovery lack nodeid_lease_jeopardy 0 and nodeid_lease_recoveries_total 1")
	}
	var h HealthResponse
	if code, body := get(n.Handler(), "/health"); code != http.StatusOK || json.Unmarshal([]byte(body), &h) != nil || h.Status != "ok" || h.Recoveries != 1 {
		t.Fatalf("/health after the recovery: %d %s, want 200 with recoveries 1", code, body)
	}
	var ids IDsResponse
	if code, body := get(n.Handler(), "/ids?n=2"); code != http.StatusOK || json.Unmarshal([]byte(body), &ids) != nil || len(ids.IDs) != 2 || ids.Recoveries != 1 {
		t.Fatalf("/ids after the recovery: %d %s, want 2 IDs with recoveries 1", code, body)
	}
	if st := n.Status(); st.Recoveries != 1 {
		t.Fatalf("/status after the recovery: %+v, want recoveries 1", st)
	}
}

// TestNodeJeopardyEndsLostAfterTheGrace: a store that never answers again
// ends the node lost once the loss grace is over.
func TestNodeJeopardyEndsLostAfterTheGrace(t *testing.T) {
	clk := fakeclock.New(time.Now().Round(time.Second))
	fs := storetest.NewFaultStore(storetest.NewMemStore(storetest.WithClock(clk.Now)))
	cfg := testConfig("a", 1)
	cfg.Provider.Clock, cfg.HostClock = clk, clk.Wall
	n, err := New(fs, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := n.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = n.Close(closeCtx(t)) })
	fs.Kill(nil)
	stepUntil(t, clk, 5*time.Second, "in jeopardy", func() bool { return n.Status().State == StateJeopardy })
	stepUntil(t, clk, 2*n.cfg.Provider.Timings().LossGrace, "lost", func() bool { return n.Status().State == StateLost })
	select {
	case <-n.Done():
	case <-time.After(5 * time.Second):
		t.Fatal("the node did not end after the loss grace")
	}
	if !errors.Is(n.Err(), nodeid.ErrLeaseLost) || !strings.Contains(n.Err().Error(), "loss grace") {
		t.Fatalf("Err = %v, want a loss at the end of the loss grace", n.Err())
	}
}

// cuttableStore wraps mem in a store that answers every Update and Get with
// an unknown outcome while cut is set: a store that stops answering, and
// answers again once cut is cleared.
func cuttableStore(mem *storetest.MemStore) (fs *storetest.FaultStore, cut *atomic.Bool) {
	fs, cut = storetest.NewFaultStore(mem), new(atomic.Bool)
	fs.SetInjector(func(op storetest.Op, key string) storetest.Fault {
		if cut.Load() && (op == storetest.OpUpdate || op == storetest.OpGet) {
			return storetest.Fault{Err: storetest.Unknown(op, key)}
		}
		return storetest.Fault{}
	})
	return fs, cut
}

// idFileNode returns a node "a" on a fake clock, over a memory store whose
// renewals and reads fail while cut is set, with an id file at path and no
// refresh tick: only the claim's changes move the file. It is not started.
func idFileNode(t *testing.T) (clk *fakeclock.Clock, fs *storetest.FaultStore, cut *atomic.Bool, path string, cfg Config, n *Node) {
	t.Helper()
	clk = fakeclock.New(time.Now().Round(time.Second))
	fs, cut = cuttableStore(storetest.NewMemStore(storetest.WithClock(clk.Now)))
	path = filepath.Join(t.TempDir(), "id.json")
	cfg = testConfig("a", 1)
	cfg.Provider.Clock, cfg.HostClock, cfg.IDFile, cfg.IDFileGrace = clk, clk.Wall, path, 10*time.Millisecond
	n, err := New(fs, cfg)
	if err != nil {
		t.Fatal(err)
	}
	n.idFileRefresh = time.Hour
	return clk, fs, cut, path, cfg, n
}
