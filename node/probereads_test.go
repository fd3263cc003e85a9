package node

import (
	"context"
	"encoding/json"
	"errors"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nodeid/nodeid/internal/testkit/fakeclock"
	"github.com/nodeid/nodeid/lease"
	"github.com/nodeid/nodeid/lease/storetest"
	"github.com/nodeid/nodeid/nodeid"
)

// readModeConfig is testConfig in read mode: a 3 s window, a 12 s backstop.
func readModeConfig(task string) Config {
	c := testConfig(task, 2)
	c.Metrics = nil
	p := &c.Provider
	p.KeepAlive, p.Window, p.Backstop, p.MaxLeaseDuration = nodeid.KeepAliveRead, 3*time.Second, 12*time.Second, 12*time.Second
	p.RenewInterval, p.RenewDeadline, p.SafetyMargin = 0, 0, 0
	return c
}

// countingUpdates is a second client of a MemStore's bucket that counts its
// conditional updates.
type countingUpdates struct {
	*storetest.MemStore
	n atomic.Int64
}

func (c *countingUpdates) Update(ctx context.Context, key string, body []byte, etag string) (lease.Meta, error) {
	c.n.Add(1)
	return c.MemStore.Update(ctx, key, body, etag)
}

// TestProbeReads: in read mode Start also probes the store's conditional
// reads; a store whose reads may be stale is refused before any lease
// object is written, and /status says why; SkipProbe skips it; write mode
// does not run it.
func TestProbeReads(t *testing.T) {
	mem := storetest.NewMemStore()
	second := &countingUpdates{MemStore: mem.WithPrefix("")}
	cfg := readModeConfig("a")
	cfg.ReadProbeStore = second
	n, err := New(mem, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := n.Start(context.Background()); err != nil {
		t.Fatalf("Start in read mode on a store whose reads are fresh: %v", err)
	}
	if writes := second.n.Load(); writes != lease.ProbeReadsRounds {
		t.Fatalf("the read probe's other client (ReadProbeStore) wrote %d times, want once a round (%d)", writes, lease.ProbeReadsRounds)
	}
	_ = n.Close(closeCtx(t))

	stale := storetest.NewMemStore(storetest.StaleConditionalReads())
	n, err = New(stale, readModeConfig("b"))
	if err != nil {
		t.Fatal(err)
	}
	err = n.Start(context.Background())
	if !errors.Is(err, lease.ErrStaleReads) || !strings.Contains(err.Error(), "read probe of") {
		t.Fatalf("Start in read mode on a stale store: %v, want ErrStaleReads", err)
	}
	l, _ := stale.List(context.Background())
	if len(l.Objects) != 1 || l.Objects[0].Key != lease.ProbeKey {
		t.Fatalf("objects after a refused start: %+v", l.Objects)
	}
	_, body := get(n.Handler(), "/status")
	var s StatusResponse
	if err := json.Unmarshal([]byte(body), &s); err != nil || s.StoreProbe == nil || s.StoreProbe.OK || !strings.Contains(s.StoreProbe.Error, "stale read") {
		t.Fatalf("/status: %s", body)
	}
	_ = n.Close(closeCtx(t))

	cfg = readModeConfig("c")
	cfg.SkipProbe = true
	n, err = New(storetest.NewMemStore(storetest.StaleConditionalReads()), cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := n.Start(context.Background()); err != nil {
		t.Fatalf("Start with SkipProbe: %v", err)
	}
	_ = n.Close(closeCtx(t))

	cfg = testConfig("d", 2)
	cfg.Metrics = nil
	n, err = New(storetest.NewMemStore(storetest.StaleConditionalReads()), cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := n.Start(context.Background()); err != nil {
		t.Fatalf("Start in write mode on a store whose conditional reads are stale: %v", err)
	}
	_ = n.Close(closeCtx(t))
}

// TestReadModeIDFileFollowsReads: in read mode the fence moves at each read
// that proves the claim's ETag, with no write: the id file, whose
// validUntilMs follows the fence, is rewritten then (no refresh tick here).
func TestReadModeIDFileFollowsReads(t *testing.T) {
	clk := fakeclock.New(time.Now().Round(time.Second))
	mem := storetest.NewMemStore(storetest.WithClock(clk.Now))
	path := filepath.Join(t.TempDir(), "id.json")
	cfg := readModeConfig("a")
	cfg.Provider.Clock, cfg.HostClock, cfg.IDFile, cfg.IDFileGrace, cfg.IDFileHorizon = clk, clk.Wall, path, 10*time.Millisecond, time.Minute
	n, err := New(mem, cfg)
	if err != nil {
		t.Fatal(err)
	}
	n.idFileRefresh = time.Hour
	if err := n.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	defer n.Close(closeCtx(t))
	c := n.Claim()
	if err := idFileUp(path); err != nil {
		t.Fatal(err)
	}
	first := readIDFile(t, path).ValidUntilMs
	writes := mem.Count(storetest.OpUpdate)
	initial := c.ValidUntil()
	for step := 0; !c.ValidUntil().After(initial); step++ {
		// The claim's loop asleep, no request in flight: then move the
		// clock on.
		if err := clk.WaitForSleepers(closeCtx(t), 1); err != nil {
			t.Fatal(err)
		}
		if step == 20 {
			t.Fatalf("not re-armed by a read within 2s of fake time")
		}
		clk.Advance(100 * time.Millisecond)
	}
	want := clk.Wall().Add(c.ValidUntil().Sub(clk.Now())).UnixMilli()
	for deadline := time.Now().Add(5 * time.Second); readIDFile(t, path).ValidUntilMs != want; time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("id file validUntilMs %d (first %d), want the re-armed fence %d", readIDFile(t, path).ValidUntilMs, first, want)
		}
	}
	if mem.Count(storetest.OpUpdate) != writes {
		t.Fatalf("%d writes meanwhile: the fence was moved by a write, not a read", mem.Count(storetest.OpUpdate)-writes)
	}
}
