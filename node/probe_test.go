package node

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/nodeid/nodeid/lease"
	"github.com/nodeid/nodeid/lease/storetest"
)

// TestStoreProbePasses: the node probes the store before taking an ID and
// shows the result in /status and the metrics.
func TestStoreProbePasses(t *testing.T) {
	cfg := testConfig("a", 2)
	cfg.Metrics = nil
	n, err := New(storetest.NewMemStore(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(scrape(t, n), "nodeid_store_probe_ok NaN") {
		t.Error("nodeid_store_probe_ok is not NaN before the probe")
	}
	if err := n.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	defer n.Close(closeCtx(t))
	code, body := get(n.Handler(), "/status")
	var s StatusResponse
	if err := json.Unmarshal([]byte(body), &s); code != http.StatusOK || err != nil {
		t.Fatalf("/status: %d %s %v", code, body, err)
	}
	p := s.StoreProbe
	if p == nil || !p.OK || p.Error != "" || !p.DateSeen || !p.LastModifiedSeen || p.ClockOffsetMs > 1000 || p.ClockOffsetMs < -2000 {
		t.Fatalf("/status storeProbe = %+v (%s)", p, body)
	}
	out := scrape(t, n)
	for _, want := range []string{"nodeid_store_probe_ok 1", "nodeid_store_clock_offset_seconds "} {
		if !strings.Contains(out, want) {
			t.Errorf("metrics: no %q", want)
		}
	}
}

// TestStoreProbeRefuses: on a store that ignores a condition Start fails
// before any lease object is written, naming the condition; SkipProbe skips
// the probe.
func TestStoreProbeRefuses(t *testing.T) {
	for _, tc := range []struct {
		opt  storetest.MemOption
		cond string
	}{
		{storetest.IgnoreIfNoneMatch(), lease.CondIfNoneMatch},
		{storetest.IgnoreIfMatch(), lease.CondIfMatch},
	} {
		t.Run(tc.cond, func(t *testing.T) {
			store := storetest.NewMemStore(tc.opt)
			cfg := testConfig("a", 2)
			cfg.Metrics = nil
			n, err := New(store, cfg)
			if err != nil {
				t.Fatal(err)
			}
			err = n.Start(context.Background())
			var ce *lease.ConditionIgnoredError
			if !errors.Is(err, lease.ErrConditionIgnored) || !errors.As(err, &ce) || ce.Condition != tc.cond {
				t.Fatalf("Start: %v, want %s ignored", err, tc.cond)
			}
			l, _ := store.List(context.Background())
			if len(l.Objects) != 1 || l.Objects[0].Key != lease.ProbeKey {
				t.Fatalf("objects after a refused start: %+v", l.Objects)
			}
			_, body := get(n.Handler(), "/status")
			var s StatusResponse
			if err := json.Unmarshal([]byte(body), &s); err != nil || s.StoreProbe == nil || s.StoreProbe.OK || !strings.Contains(s.StoreProbe.Error, tc.cond) {
				t.Fatalf("/status: %s", body)
			}
			if !strings.Contains(scrape(t, n), "nodeid_store_probe_ok 0") {
				t.Error("nodeid_store_probe_ok is not 0")
			}
			_ = n.Close(closeCtx(t))

			cfg = testConfig("b", 2)
			cfg.SkipProbe = true
			n, err = New(storetest.NewMemStore(tc.opt), cfg)
			if err != nil {
				t.Fatal(err)
			}
			if err := n.Start(context.Background()); err != nil {
				t.Fatalf("Start with SkipProbe: %v", err)
			}
			if _, body := get(n.Handler(), "/status"); strings.Contains(body, "storeProbe") {
				t.Errorf("/status with SkipProbe shows a probe: %s", body)
			}
			_ = n.Close(closeCtx(t))
		})
	}
}

// TestStoreProbeRetriesInconclusive: a lost answer to a probe write is
// retried; the node then starts.
func TestStoreProbeRetriesInconclusive(t *testing.T) {
	fs := storetest.NewFaultStore(storetest.NewMemStore())
	fs.Queue(storetest.OpUpdate, storetest.Fault{Err: storetest.Unknown(storetest.OpUpdate, lease.ProbeKey)})
	n, err := New(fs, testConfig("a", 2))
	if err != nil {
		t.Fatal(err)
	}
	if err := n.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	defer n.Close(closeCtx(t))
	if p := n.probeStatus(); p == nil || !p.OK {
		t.Fatalf("probe status %+v", p)
	}
}

// TestStartStopsAtOnceOnMisconfiguredStore: a store error that retrying
// cannot fix (lease.ErrMisconfigured: a missing bucket, denied access, a
// store without conditional writes) ends Start at its first request, in the
// probe or, with SkipProbe, in the acquisition; nothing is retried.
func TestStartStopsAtOnceOnMisconfiguredStore(t *testing.T) {
	misconfigured := fmt.Errorf("s3store: create probe.json: bucket %q does not exist: %w", "typo", lease.ErrMisconfigured)
	for _, skipProbe := range []bool{false, true} {
		t.Run(fmt.Sprintf("SkipProbe=%v", skipProbe), func(t *testing.T) {
			fs := storetest.NewFaultStore(storetest.NewMemStore())
			var calls atomic.Int64
			fs.SetInjector(func(storetest.Op, string) storetest.Fault {
				calls.Add(1)
				return storetest.Fault{Err: misconfigured}
			})
			cfg := testConfig("a", 2)
			cfg.SkipProbe = skipProbe
			n, err := New(fs, cfg)
			if err != nil {
				t.Fatal(err)
			}
			err = n.Start(context.Background())
			if !errors.Is(err, lease.ErrMisconfigured) || errors.Is(err, lease.ErrProbeInconclusive) || !strings.Contains(err.Error(), `bucket "typo" does not exist`) {
				t.Fatalf("Start: %v, want the store's misconfiguration", err)
			}
			if c := calls.Load(); c != 1 {
				t.Errorf("%d store requests, want 1: a misconfiguration is not retried", c)
			}
			if code, body := get(n.Handler(), "/health"); code != http.StatusServiceUnavailable || !strings.Contains(body, "does not exist") {
				t.Errorf("/health after the failed start: %d %s, want 503 with the reason", code, body)
			}
		})
	}
}
