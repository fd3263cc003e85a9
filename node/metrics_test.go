package node

import (
	"context"
	"errors"
	"io"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/nodeid/nodeid/lease"
	"github.com/nodeid/nodeid/lease/storetest"
)

// newTestMetrics returns a node that holds nothing, with metrics on a
// registry of its own (Config.Metrics nil).
func newTestMetrics(t *testing.T) *Node {
	t.Helper()
	cfg := testConfig("a", 1)
	cfg.Metrics = nil
	n, err := New(storetest.NewMemStore(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

func scrape(t *testing.T, n *Node) string {
	t.Helper()
	rec := httptest.NewRecorder()
	n.Handler().ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	b, _ := io.ReadAll(rec.Body)
	return string(b)
}

func TestMetrics(t *testing.T) {
	n := newTestMetrics(t)
	m := n.metrics
	out := scrape(t, n)
	for _, want := range []string{`nodeid_lease_state{state="acquiring"} 1`, `nodeid_lease_state{state="held"} 0`, "nodeid_node_id -1", "nodeid_node_version 0"} {
		if !strings.Contains(out, want) {
			t.Errorf("before: no %q", want)
		}
	}
	m.Acquired(5, 3, 40*time.Millisecond)
	m.Renewed(5, 10*time.Millisecond)
	m.RenewFailed(5, errors.New("x"))
	m.RenewFailed(5, errors.New("x"))
	m.Anomaly("9.json", errors.New("corrupt"))
	m.Lost(5, errors.New("lost"))
	m.Released(5)
	n.countIssued(100)
	m.fencedRefusals.Inc()
	out = scrape(t, n)
	for _, want := range []string{
		"nodeid_node_id 5", "nodeid_node_version 3", "nodeid_lease_acquisitions_total 1",
		"nodeid_lease_acquire_duration_seconds_count 1", "nodeid_lease_renewals_total 1",
		"nodeid_lease_renew_duration_seconds_count 1", "nodeid_lease_renewal_failures_total 2",
		"nodeid_lease_anomalies_total 1", "nodeid_lease_lost_total 1", "nodeid_lease_released_total 1",
		"nodeid_ids_issued_total 100", "nodeid_ids_fenced_refusals_total 1", "go_goroutines",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("after: no %q", want)
		}
	}
}

func TestStore(t *testing.T) {
	n := newTestMetrics(t)
	s := n.metrics.Store(storetest.NewMemStore())
	ctx := context.Background()
	meta, err := s.Create(ctx, "0.json", []byte("a"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Create(ctx, "0.json", []byte("b")); !errors.Is(err, lease.ErrPreconditionFailed) {
		t.Fatalf("second create: %v", err)
	}
	if _, err := s.Update(ctx, "0.json", []byte("c"), meta.ETag); err != nil {
		t.Fatal(err)
	}
	if _, _, err := s.Get(ctx, "1.json"); !errors.Is(err, lease.ErrNotFound) {
		t.Fatalf("get: %v", err)
	}
	if _, err := s.List(ctx); err != nil {
		t.Fatal(err)
	}
	out := scrape(t, n)
	for _, want := range []string{
		`nodeid_s3_requests_total{operation="create",outcome="ok"} 1`,
		`nodeid_s3_requests_total{operation="create",outcome="precondition_failed"} 1`,
		`nodeid_s3_requests_total{operation="update",outcome="ok"} 1`,
		`nodeid_s3_requests_total{operation="get",outcome="not_found"} 1`,
		`nodeid_s3_requests_total{operation="list",outcome="ok"} 1`,
		`nodeid_s3_request_duration_seconds_count{operation="create"} 2`,
	} {
		if !strings.Contains(out, want) {
			t.Errorf("no %q", want)
		}
	}
	for err, want := range map[error]string{
		nil: "ok", lease.ErrNotFound: "not_found", lease.ErrPreconditionFailed: "precondition_failed",
		&lease.UnknownOutcomeError{Op: "update", Err: errors.New("reset")}: "unknown_outcome", errors.New("403"): "error",
	} {
		if got := outcome(err); got != want {
			t.Errorf("Outcome(%v) = %q, want %q", err, got, want)
		}
	}
}

// TestMetricsExpiredTakeover checks nodeid_cluster_size and that a node which
// takes over an expired lease counts it in nodeid_lease_expired_takeovers_total,
// the trace a dead holder leaves once its own metrics are gone.
func TestMetricsExpiredTakeover(t *testing.T) {
	for _, expired := range []bool{false, true} {
		storeNow := time.Now
		if expired {
			past := time.Now().Add(-time.Hour)
			storeNow = func() time.Time { return past }
		}
		store := storetest.NewMemStore(storetest.WithClock(func() time.Time { return storeNow() }))
		if expired { // a holder that wrote an hour ago and then died
			r := lease.Record{NodeID: 0, Holder: "dead", Version: 4, LeaseMillis: 3000, WriteID: "00000000000000aa"}
			body, err := r.Encode()
			if err != nil {
				t.Fatal(err)
			}
			store.Put(lease.RecordKey(0), body)
			storeNow = time.Now
		}
		cfg := testConfig("a", 1)
		cfg.Metrics = nil
		n, err := New(store, cfg)
		if err != nil {
			t.Fatal(err)
		}
		if err := n.Start(context.Background()); err != nil {
			t.Fatal(err)
		}
		want := "nodeid_lease_expired_takeovers_total 0"
		if expired {
			want = "nodeid_lease_expired_takeovers_total 1"
		}
		out := scrape(t, n)
		for _, w := range []string{want, "nodeid_cluster_size 1"} {
			if !strings.Contains(out, w) {
				t.Errorf("expired=%v: no %q in\n%s", expired, w, out)
			}
		}
		if err := n.Close(closeCtx(t)); err != nil {
			t.Fatal(err)
		}
	}
}

// TestCountedStoreScopes: the metrics wrapper scopes the store it wraps (a
// lease.Scoper lists the scope alone) and counts the scoped requests.
func TestCountedStoreScopes(t *testing.T) {
	n := newTestMetrics(t)
	mem := storetest.NewMemStore()
	scoped := lease.Scope(n.metrics.Store(mem), "elections/jobs/")
	cs, ok := scoped.(*countedStore)
	if !ok {
		t.Fatalf("scoped store is %T, want *countedStore", scoped)
	}
	if _, ok := cs.next.(*storetest.MemStore); !ok {
		t.Fatalf("the wrapped store was not scoped by itself: %T", cs.next)
	}
	if _, err := scoped.List(context.Background()); err != nil {
		t.Fatal(err)
	}
	if out := scrape(t, n); !strings.Contains(out, `nodeid_s3_requests_total{operation="list",outcome="ok"} 1`) {
		t.Fatalf("the scoped LIST is not counted:\n%s", out)
	}
}

// spacedStore is a store that sustains one write per object a second.
type spacedStore struct{ lease.Store }

func (spacedStore) MinWriteInterval() time.Duration { return time.Second }

// TestCountedStoreForwardsMinWriteInterval: the metrics wrapper reports the
// wrapped store's lease.WriteSpacer figure, scoped or not, so that nodeid.New
// still checks RenewInterval against it.
func TestCountedStoreForwardsMinWriteInterval(t *testing.T) {
	n := newTestMetrics(t)
	st := n.metrics.Store(spacedStore{storetest.NewMemStore()})
	for _, s := range []lease.Store{st, lease.Scope(st, "elections/jobs/")} {
		if got := lease.MinWriteInterval(s); got != time.Second {
			t.Fatalf("MinWriteInterval through %T = %v, want 1s", s, got)
		}
	}
}
