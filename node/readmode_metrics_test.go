package node

import (
	"context"
	"encoding/json"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nodeid/nodeid/internal/testkit/fakeclock"
	"github.com/nodeid/nodeid/lease/storetest"
	"github.com/nodeid/nodeid/nodeid"
)

// challengeRecorder is a caller's observer that hears challenges.
type challengeRecorder struct {
	nodeid.NopObserver
	mu     sync.Mutex
	events []string
}

func (r *challengeRecorder) Challenged(id int, holder string, confirmed bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.events = append(r.events, "challenged "+holder+map[bool]string{true: " confirmed", false: ""}[confirmed])
}

func (r *challengeRecorder) Answered(int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.events = append(r.events, "answered")
}

// TestReadModeMetrics: the events of read mode, as the provider sends them
// to the node's observer (a nodeid.ReadObserver and a
// nodeid.ChallengeObserver), count the reads that proved the lease with
// their latency, and the challenges made, confirmed and answered; a
// caller's observer that hears challenges hears them too.
func TestReadModeMetrics(t *testing.T) {
	n := newTestMetrics(t)
	rec := &challengeRecorder{}
	var o nodeid.Observer = nodeEvents{observers: observers{n.metrics, rec}, n: n}
	out := scrape(t, n)
	for _, want := range []string{
		"nodeid_lease_reads_proved_total 0\n", "nodeid_lease_read_duration_seconds_count 0\n", "nodeid_lease_challenges_total 0\n",
		"nodeid_lease_challenges_confirmed_total 0\n", "nodeid_lease_challenges_answered_total 0\n",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("before: no %q", want)
		}
	}
	ro, ok := o.(nodeid.ReadObserver)
	if !ok {
		t.Fatal("the node's observer is no nodeid.ReadObserver")
	}
	co, ok := o.(nodeid.ChallengeObserver)
	if !ok {
		t.Fatal("the node's observer is no nodeid.ChallengeObserver")
	}
	ro.ReadProved(3, 20*time.Millisecond)
	ro.ReadProved(3, 2*time.Second)
	co.Challenged(4, "task-x", false)
	co.Challenged(5, "task-y", true)
	co.Challenged(5, "task-y", true)
	co.Answered(3)
	out = scrape(t, n)
	for _, want := range []string{
		"nodeid_lease_reads_proved_total 2\n", "nodeid_lease_read_duration_seconds_count 2\n",
		`nodeid_lease_read_duration_seconds_bucket{le="0.025"} 1` + "\n", `nodeid_lease_read_duration_seconds_bucket{le="2.5"} 2` + "\n",
		"nodeid_lease_challenges_total 3\n", "nodeid_lease_challenges_confirmed_total 2\n", "nodeid_lease_challenges_answered_total 1\n",
		"nodeid_lease_renewals_total 0\n",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("after: no %q", want)
		}
	}
	rec.mu.Lock()
	defer rec.mu.Unlock()
	if got := strings.Join(rec.events, "; "); got != "challenged task-x; challenged task-y confirmed; challenged task-y confirmed; answered" {
		t.Errorf("the caller's observer heard %q", got)
	}
}

// TestReadModeReadsCounted: a node in read mode that holds its ID counts
// the reads that proved its lease, with no write meanwhile, in
// nodeid_lease_reads_proved_total, with their latency.
func TestReadModeReadsCounted(t *testing.T) {
	clk := fakeclock.New(time.Now().Round(time.Second))
	mem := storetest.NewMemStore(storetest.WithClock(clk.Now))
	cfg := readModeConfig("a")
	cfg.Provider.Clock, cfg.HostClock = clk, clk.Wall
	n, err := New(mem, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := n.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	defer n.Close(closeCtx(t))
	writes := mem.Count(storetest.OpUpdate)
	for step := 0; !strings.Contains(scrape(t, n), "nodeid_lease_reads_proved_total 2\n"); step++ {
		// The claim's loop asleep, no request in flight: then move the
		// clock on.
		if err := clk.WaitForSleepers(closeCtx(t), 1); err != nil {
			t.Fatal(err)
		}
		if step == 40 {
			t.Fatalf("not 2 reads proved within 4s of fake time:\n%s", scrape(t, n))
		}
		clk.Advance(100 * time.Millisecond)
	}
	if got := mem.Count(storetest.OpUpdate); got != writes {
		t.Errorf("%d writes meanwhile", got-writes)
	}
	out := scrape(t, n)
	if !strings.Contains(out, "nodeid_lease_read_duration_seconds_count 2\n") {
		t.Errorf("no read latency observed:\n%s", out)
	}
}

// TestStatusKeepAlive: /status reports the keep-alive mode and its
// timings as derived: the lease and renew interval in write mode; the
// window, backstop, backstop interval and poll interval in read mode.
func TestStatusKeepAlive(t *testing.T) {
	for _, tc := range []struct {
		name string
		cfg  Config
		want KeepAliveStatus
	}{
		{"write", testConfig("a", 1), KeepAliveStatus{Mode: "write", LeaseMs: 3000, RenewIntervalMs: 1000}},
		{"read", readModeConfig("b"), KeepAliveStatus{Mode: "read", WindowMs: 3000, BackstopMs: 12000, BackstopIntervalMs: 4000, PollIntervalMs: 700}},
	} {
		n, err := New(storetest.NewMemStore(), tc.cfg)
		if err != nil {
			t.Fatal(err)
		}
		_, body := get(n.OpsHandler(), "/status")
		var s StatusResponse
		if err := json.Unmarshal([]byte(body), &s); err != nil || s.KeepAlive != tc.want {
			t.Errorf("%s: /status keepAlive %+v (%v), want %+v\n%s", tc.name, s.KeepAlive, err, tc.want, body)
		}
		if tc.name == "read" && !strings.Contains(body, `"keepAlive":{"mode":"read","windowMs":3000,"backstopMs":12000,"backstopIntervalMs":4000,"pollIntervalMs":700}`) {
			t.Errorf("read: /status %s", body)
		}
	}
}
