package node

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/nodeid/nodeid/internal/ctxtime"
	"github.com/nodeid/nodeid/lease"
	"github.com/nodeid/nodeid/lease/storetest"
	"github.com/nodeid/nodeid/nodeid"
)

// testConfig returns a local config for task on a cluster of size.
func testConfig(task string, size int) Config {
	c := DefaultLocalConfig()
	c.Provider.TaskID, c.Provider.ClusterSize, c.Provider.Order = task, size, nodeid.OrderLowestFirst
	c.Metrics = prometheus.NewRegistry()
	return c
}

// get serves one request to h and returns the code and body.
func get(h http.Handler, path string) (int, string) {
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, path, nil))
	body, _ := io.ReadAll(rec.Result().Body)
	return rec.Code, string(body)
}

// readRecord reads and decodes the lease object of id.
func readRecord(t *testing.T, store lease.Store, id int) lease.Record {
	t.Helper()
	body, _, err := store.Get(context.Background(), lease.RecordKey(id))
	if err != nil {
		t.Fatal(err)
	}
	rec, err := lease.DecodeRecord(body, id)
	if err != nil {
		t.Fatal(err)
	}
	return rec
}

// steal writes node id's lease record as taken by another task, with the
// next version, behind its holder's back.
func steal(t *testing.T, store *storetest.MemStore, id int) {
	t.Helper()
	rec := readRecord(t, store, id)
	rec.Holder, rec.Version, rec.WriteID = "thief", rec.Version+1, lease.NewWriteID()
	body, err := rec.Encode()
	if err != nil {
		t.Fatal(err)
	}
	store.Put(lease.RecordKey(id), body)
}

func closeCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// TestNodeServesAndReleases: health answers 503 before Start; the node then
// serves IDs over HTTP and in process; Close releases the ID (free in the
// bucket), ends the node and is idempotent.
func TestNodeServesAndReleases(t *testing.T) {
	store := storetest.NewMemStore()
	n, err := New(store, testConfig("a", 4))
	if err != nil {
		t.Fatal(err)
	}
	h := n.Handler()
	if code, body := get(h, "/health"); code != http.StatusServiceUnavailable || !strings.Contains(body, "acquiring") {
		t.Fatalf("/health before Start: %d %s", code, body)
	}
	if code, _ := get(h, "/ids"); code != http.StatusServiceUnavailable {
		t.Fatalf("/ids before Start: %d", code)
	}
	if _, err := n.Next(); !errors.Is(err, ErrAcquiring) {
		t.Fatalf("Next before Start: %v, want ErrAcquiring", err)
	}
	if err := n.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	if err := n.Start(context.Background()); !errors.Is(err, ErrStarted) {
		t.Fatalf("second Start: %v", err)
	}
	if code, body := get(h, "/health"); code != http.StatusOK {
		t.Fatalf("/health: %d %s", code, body)
	}
	code, body := get(h, "/ids?n=3")
	var ids IDsResponse
	if err := json.Unmarshal([]byte(body), &ids); code != http.StatusOK || err != nil || len(ids.IDs) != 3 || ids.NodeID != 0 || ids.Version != 1 {
		t.Fatalf("/ids?n=3: %d %s %v", code, body, err)
	}
	id, err := n.Next()
	if err != nil || id.NodeID() != 0 {
		t.Fatalf("Next: %v %v", id, err)
	}
	st := n.Status()
	if st.State != StateHeld || st.NodeID != 0 || st.IDsIssued != 4 || !st.Ready || st.Task != "a" {
		t.Fatalf("status %+v", st)
	}
	if code, body := get(h, "/metrics"); code != http.StatusOK || !strings.Contains(body, "nodeid_ids_issued_total 4") {
		t.Fatalf("/metrics: %d %s", code, body)
	}
	if err := n.Close(closeCtx(t)); err != nil {
		t.Fatal(err)
	}
	select {
	case <-n.Done():
	default:
		t.Fatal("Done not closed after Close")
	}
	if !errors.Is(n.Err(), ErrClosed) || n.Close(closeCtx(t)) != nil {
		t.Fatalf("Err %v after Close", n.Err())
	}
	if rec := readRecord(t, store, 0); rec.Holder != "" || rec.Version != 1 {
		t.Fatalf("record after Close: %+v, want free with version 1", rec)
	}
	if code, _ := get(h, "/health"); code != http.StatusServiceUnavailable {
		t.Fatalf("/health after Close: %d", code)
	}
	if _, err := n.Next(); err == nil {
		t.Fatal("Next after Close issued an ID")
	}
}

// TestNodeCloseEndsStart: Close ends a Start that waits in a full cluster;
// Run returns nil when its context ends before an ID is held.
func TestNodeCloseEndsStart(t *testing.T) {
	store := storetest.NewMemStore()
	holder, err := New(store, testConfig("holder", 1))
	if err != nil {
		t.Fatal(err)
	}
	if err := holder.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	defer holder.Close(closeCtx(t))

	waiter, err := New(store, testConfig("waiter", 1))
	if err != nil {
		t.Fatal(err)
	}
	started := make(chan error, 1)
	go func() { started <- waiter.Start(context.Background()) }()
	if err := waiter.Close(closeCtx(t)); err != nil {
		t.Fatalf("Close while starting: %v", err)
	}
	if err := <-started; err == nil {
		t.Fatal("Start succeeded in a full cluster")
	}
	if code, _ := get(waiter.Handler(), "/health"); code != http.StatusServiceUnavailable {
		t.Fatalf("/health of a closed node: %d", code)
	}

	runner, err := New(store, testConfig("runner", 1))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	if err := runner.Run(ctx); err != nil {
		t.Fatalf("Run stopped while acquiring: %v, want nil", err)
	}
}

// TestNodeLeaseLost: another writer takes the lease; the node ends with
// ErrLeaseLost, fails health, and Close reports the loss.
func TestNodeLeaseLost(t *testing.T) {
	store := storetest.NewMemStore()
	n, err := New(store, testConfig("a", 1))
	if err != nil {
		t.Fatal(err)
	}
	if err := n.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	steal(t, store, 0)
	select {
	case <-n.Done():
	case <-time.After(10 * time.Second):
		t.Fatal("the node did not notice the loss")
	}
	if !errors.Is(n.Err(), nodeid.ErrLeaseLost) || n.Check() == nil || n.Status().State != StateLost {
		t.Fatalf("after the loss: Err %v, Check %v, status %+v", n.Err(), n.Check(), n.Status())
	}
	if err := n.Close(closeCtx(t)); !errors.Is(err, nodeid.ErrLeaseLost) {
		t.Fatalf("Close after a loss: %v, want ErrLeaseLost", err)
	}
}

// TestIDFileReservation: on Close the release never lowers the reservation
// below the highest validUntilMs written (the application may use the ID
// until then, whether the file could be removed or not), and with a grace
// as long as IDFileHorizon that is no later than the release time.
func TestIDFileReservation(t *testing.T) {
	for _, removable := range []bool{true, false} {
		store := storetest.NewMemStore()
		path := filepath.Join(t.TempDir(), "id.json")
		cfg := testConfig("a", 1)
		// A grace as long as the horizon: the highest validUntilMs written
		// is in the past by the release.
		cfg.IDFile, cfg.IDFileHorizon, cfg.IDFileGrace = path, MinIDFileHorizon, MinIDFileHorizon
		n, err := New(store, cfg)
		if err != nil {
			t.Fatal(err)
		}
		if err := n.Start(context.Background()); err != nil {
			t.Fatal(err)
		}
		body, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		var f IDFileContent
		if err := json.Unmarshal(body, &f); err != nil || f.NodeID != 0 || f.ValidUntilMs == 0 {
			t.Fatalf("id file %s: %v", body, err)
		}
		if !removable { // a non-empty directory in its place: os.Remove fails, also for root
			if err := os.Remove(path); err != nil {
				t.Fatal(err)
			}
			if err := os.MkdirAll(filepath.Join(path, "busy"), 0o755); err != nil {
				t.Fatal(err)
			}
		}
		released := time.Now().UnixMilli()
		if err := n.Close(closeCtx(t)); err != nil {
			t.Fatal(err)
		}
		closed := time.Now().UnixMilli()
		rec := readRecord(t, store, 0)
		switch {
		case removable && (rec.ReservedUntilMs < released || rec.ReservedUntilMs > closed):
			t.Errorf("file removed: reservation %d, want the release time (%d to %d, the calls to Close)", rec.ReservedUntilMs, released, closed)
		case !removable && rec.ReservedUntilMs < f.ValidUntilMs:
			t.Errorf("file not removed: reservation %d lowered below the validUntilMs %d the application read", rec.ReservedUntilMs, f.ValidUntilMs)
		}
	}
}

// steppedClock is the system clock whose wall clock a test steps at run time.
type steppedClock struct{ offset atomic.Int64 }

func (c *steppedClock) Now() time.Time { return time.Now() }
func (c *steppedClock) Wall() time.Time {
	return time.Now().Add(time.Duration(c.offset.Load())).Round(0)
}
func (c *steppedClock) Sleep(ctx context.Context, d time.Duration) error {
	return ctxtime.Sleep(ctx, d)
}
func (c *steppedClock) step(d time.Duration) { c.offset.Add(int64(d)) }

// TestStalledGeneratorFailsHealth steps the node's wall clock at run time.
// Forward: the reservations follow the same clock, so the generator issues
// again after a renewal. Back by an hour: the generator can never issue above
// what it issued, and health fails once that has lasted MaxIssueStall.
func TestStalledGeneratorFailsHealth(t *testing.T) {
	clock := &steppedClock{}
	cfg := testConfig("a", 1)
	cfg.Provider.Clock, cfg.Provider.MaxClockWait = clock, 10*time.Millisecond
	cfg.MaxReservationWait, cfg.MaxIssueStall = 2*time.Second, 300*time.Millisecond
	n, err := New(storetest.NewMemStore(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := n.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	defer n.Close(closeCtx(t))
	if _, err := n.Next(); err != nil {
		t.Fatal(err)
	}
	clock.step(time.Hour) // ahead of the reservation: waits for a renewal, which follows
	if _, err := n.Next(); err != nil {
		t.Fatalf("Next after the wall clock stepped forward: %v", err)
	}
	if err := n.Check(); err != nil {
		t.Fatalf("health after a step forward: %v", err)
	}
	clock.step(-2 * time.Hour) // behind every ID issued
	deadline := time.Now().Add(10 * time.Second)
	for n.Check() == nil {
		if time.Now().After(deadline) {
			t.Fatal("health still passes although the generator cannot issue")
		}
		_, _ = n.NextN(MaxIDsPerRequest) // uses up the last millisecond's sequence, then fails
		time.Sleep(20 * time.Millisecond)
	}
	if err := n.Check(); !errors.Is(err, ErrStalled) {
		t.Fatalf("health: %v, want ErrStalled", err)
	}
	if code, body := get(n.Handler(), "/metrics"); code != http.StatusOK || !strings.Contains(body, "nodeid_ids_stalled 1") {
		t.Fatalf("/metrics: %d %s", code, body)
	}
}

// TestMetricsOnTheCallersRegistry: the metrics go to the registry the caller
// passes, never the global one; registering a second node on it fails.
func TestMetricsOnTheCallersRegistry(t *testing.T) {
	reg := prometheus.NewRegistry()
	cfg := testConfig("a", 1)
	cfg.Metrics = reg
	if _, err := New(storetest.NewMemStore(), cfg); err != nil {
		t.Fatal(err)
	}
	mfs, err := reg.Gather()
	if err != nil || len(mfs) == 0 {
		t.Fatalf("nothing registered: %v", err)
	}
	if _, err := New(storetest.NewMemStore(), cfg); err == nil {
		t.Fatal("a second node registered the same metrics")
	}
}
func TestParseCount(t *testing.T) {
	for q, want := range map[string]int{"": 1, "n=1": 1, "n=10000": 10000, "n=42": 42, "n=0": -1, "n=10001": -1, "n=abc": -1, "n=": -1, "n=1&n=1": -1, "n=1.5": -1} {
		v, _ := url.ParseQuery(q)
		n, err := parseCount(v)
		if (want < 0) != (err != nil) || (want > 0 && n != want) {
			t.Errorf("%q: %d %v, want %d", q, n, err, want)
		}
	}
}

func TestTaskID(t *testing.T) {
	const arn = "arn:aws:ecs:eu-west-1:123456789012:task/demo/0123456789abcdef"
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/v4/abc/task" {
			http.NotFound(w, r)
			return
		}
		_ = json.NewEncoder(w).Encode(map[string]any{"Cluster": "demo", "TaskARN": arn, "Family": "broker"})
	}))
	defer srv.Close()
	ctx := context.Background()
	t.Setenv(ECSMetadataEnv, srv.URL+"/v4/abc")
	if got := TaskID(ctx, nil); got != arn {
		t.Errorf("from ECS metadata: %q", got)
	}
	host, _ := os.Hostname()
	for _, uri := range []string{"", srv.URL + "/wrong"} {
		t.Setenv(ECSMetadataEnv, uri)
		if got := TaskID(ctx, nil); !strings.HasPrefix(got, host+"-") {
			t.Errorf("fallback: %q", got)
		}
	}
}

func TestIDFile(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "id.json")
	if err := checkIDFileDir(path); err != nil {
		t.Fatal(err)
	}
	if err := checkIDFileDir(filepath.Join(dir, "missing", "id.json")); err == nil {
		t.Error("checkIDFileDir of a missing directory did not fail")
	}
	for v := int64(1); v <= 2; v++ {
		if err := writeIDFile(path, IDFileContent{NodeID: 7, Version: v, FloorMs: 1763690000000, ValidUntilMs: 1763700000000 + v}); err != nil {
			t.Fatal(err)
		}
	}
	b, err := os.ReadFile(path)
	if err != nil || string(b) != "{\"nodeId\":7,\"version\":2,\"floorMs\":1763690000000,\"validUntilMs\":1763700000002}\n" {
		t.Fatalf("%q %v", b, err)
	}
	if st, _ := os.Stat(path); st.Mode().Perm() != 0o644 {
		t.Errorf("mode %v, want 0644", st.Mode().Perm())
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 1 {
		t.Errorf("temporary files left: %v", entries)
	}
	if removed, err := removeIDFile(path); !removed || err != nil {
		t.Errorf("remove: %v %v", removed, err)
	}
	if removed, err := removeIDFile(path); removed || err != nil {
		t.Errorf("remove again: %v %v", removed, err)
	}
}
