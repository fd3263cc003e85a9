package node

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/nodeid/nodeid/lease"
	"github.com/nodeid/nodeid/lease/storetest"
	"github.com/nodeid/nodeid/nodeid"
)

// readModeConfig is testConfig in read mode: a 3 s window, a 12 s backstop.
func readModeConfig(task string) Config {
	c := testConfig(task, 2)
	c.Metrics = nil
	p := &c.Provider
	p.KeepAlive, p.Window, p.MaxLeaseDuration = nodeid.KeepAliveRead, 3*time.Second, 12*time.Second
	p.RenewInterval, p.RenewDeadline, p.SafetyMargin = 0, 0, 0
	return c
}

// TestProbeReads: in read mode Start also probes the store's conditional
// reads; a store whose reads may be stale is refused before any lease
// object is written, and /status says why; SkipProbe skips it; write mode
// does not run it.
func TestProbeReads(t *testing.T) {
	n, err := New(storetest.NewMemStore(), readModeConfig("a"))
	if err != nil {
		t.Fatal(err)
	}
	if err := n.Start(context.Background()); err != nil {
		t.Fatalf("Start in read mode on a store whose reads are fresh: %v", err)
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

	cfg := readModeConfig("c")
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
