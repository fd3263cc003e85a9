package main

import (
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/nodeid/nodeid/node"
)

// readModeArgs are read mode's short timings for the end-to-end tests: a
// 3 s window and a 12 s backstop (so backstop writes every 4 s, a 1 s
// safety margin, an 8 s renew deadline, polls every 700 ms).
var readModeArgs = []string{"--keepalive", "read", "--window", "3s", "--backstop", "12s", "--drain-delay", "200ms", "--log-level", "info"}

// metricValue returns the value of the sample of /metrics named series
// (with its labels, if any), and whether there is one.
func metricValue(metrics, series string) (float64, bool) {
	m := regexp.MustCompile(`(?m)^` + regexp.QuoteMeta(series) + ` (\S+)$`).FindStringSubmatch(metrics)
	if m == nil {
		return 0, false
	}
	v, err := strconv.ParseFloat(m[1], 64)
	return v, err == nil
}

// waitMetric waits until p's /metrics shows series at least min, and
// returns the whole of its last scrape.
func waitMetric(t *testing.T, p *proc, series string, min float64, timeout time.Duration) string {
	t.Helper()
	var body string
	waitFor(t, timeout, fmt.Sprintf("broker %s's %s >= %v", p.name, series, min), func() (bool, string) {
		code, b, err := p.get("/metrics")
		if err != nil || code != 200 {
			return false, fmt.Sprintf("HTTP %d %v", code, err)
		}
		body = string(b)
		v, ok := metricValue(body, series)
		return ok && v >= min, fmt.Sprintf("%v (present %v)", v, ok)
	})
	return body
}

// TestServeReadMode runs two brokers in read mode (--keepalive read) on the
// embedded S3 (gofakes3, which passes the read probe): the first writes the
// manifest in read mode, both hold distinct IDs and issue IDs, /status shows
// read mode and its timings, nodeidctl status the manifest's; their leases
// are kept alive by reads (nodeid_lease_reads_proved_total rises, with their
// latency) and backstop writes; SIGTERM releases the ID (exit 0), and a new
// broker takes it at once, free, with version + 1.
func TestServeReadMode(t *testing.T) {
	t.Parallel()
	env := brokerEnv(t)
	srv := startFakeS3(t)
	store := []string{"--bucket", srv.Bucket(), "--s3-endpoint", srv.URL(), "--s3-path-style"}
	args := slices.Concat(store, []string{"--cluster-size", "2"}, readModeArgs)
	a := startBroker(t, "a", env, args...)
	b := startBroker(t, "b", env, args...)
	sa, sb := a.waitHeld(20*time.Second), b.waitHeld(20*time.Second)
	if sa.NodeID == sb.NodeID {
		t.Fatalf("both brokers hold node %d", sa.NodeID)
	}
	want := node.KeepAliveStatus{Mode: "read", WindowMs: 3000, BackstopMs: 12000, BackstopIntervalMs: 4000, PollIntervalMs: 700}
	for _, s := range []node.StatusResponse{sa, sb} {
		if s.KeepAlive != want {
			t.Errorf("%s's /status keepAlive %+v, want %+v", s.Task, s.KeepAlive, want)
		}
		if s.StoreProbe == nil || !s.StoreProbe.OK {
			t.Errorf("%s's store probe (the read probe included): %+v", s.Task, s.StoreProbe)
		}
	}
	if l := a.waitLog("keep-alive", time.Second); l["mode"] != "read" || l["window"] != "3s" || l["backstop"] != "12s" ||
		l["backstopInterval"] != "4s" || l["pollInterval"] != "700ms" {
		t.Errorf("a's keep-alive log line: %v", l)
	}
	code, out, errOut := runCtl(t, env, append([]string{"status"}, store...)...)
	if code != 0 || !strings.Contains(out, "keep-alive    read, window 3s, backstop 12s") || strings.Count(out, " held ") != 2 {
		t.Errorf("nodeidctl status: exit %d:\n%s%s", code, out, errOut)
	}

	var ids idLedger
	fetchIDs(t, a, sa.NodeID, &ids)
	fetchIDs(t, b, sb.NodeID, &ids)

	// Reads keep the leases alive: a proved read every 700 ms, a backstop
	// write every 4 s.
	for _, p := range []*proc{a, b} {
		m := waitMetric(t, p, "nodeid_lease_reads_proved_total", 3, 15*time.Second)
		if v, _ := metricValue(m, "nodeid_lease_read_duration_seconds_count"); v < 3 {
			t.Errorf("broker %s: nodeid_lease_read_duration_seconds_count %v, want >= 3", p.name, v)
		}
		for _, series := range []string{"nodeid_lease_challenges_total", "nodeid_lease_challenges_confirmed_total", "nodeid_lease_challenges_answered_total",
			"nodeid_lease_lost_total", "nodeid_lease_jeopardies_total"} {
			if v, ok := metricValue(m, series); !ok || v != 0 {
				t.Errorf("broker %s: %s %v (present %v), want 0", p.name, series, v, ok)
			}
		}
	}
	waitMetric(t, a, "nodeid_lease_renewals_total", 1, 15*time.Second) // a backstop write
	if s, err := a.status(); err != nil || s.State != node.StateHeld || s.Version != sa.Version {
		t.Fatalf("a after a backstop write: %+v %v", s, err)
	}

	// SIGTERM: a releases its ID; c takes it free, version + 1.
	a.signal(syscall.SIGTERM)
	if code := a.waitExit(15 * time.Second); code != exitOK {
		t.Fatalf("a exited %d after SIGTERM, want 0", code)
	}
	rec := readLease(t, srv.URL(), srv.Bucket(), sa.NodeID)
	if rec.Holder != "" || rec.Version != sa.Version {
		t.Fatalf("after a's SIGTERM, lease %d = holder %q version %d; want free, version %d", sa.NodeID, rec.Holder, rec.Version, sa.Version)
	}
	c := startBroker(t, "c", env, args...)
	sc := c.waitHeld(20 * time.Second)
	if sc.NodeID != sa.NodeID || sc.Version != sa.Version+1 || sc.KeepAlive != want {
		t.Fatalf("c holds node %d version %d keepAlive %+v; want a's node %d with version %d in read mode", sc.NodeID, sc.Version, sc.KeepAlive, sa.NodeID, sa.Version+1)
	}
	if from := c.waitLog("acquired node ID", time.Second)["from"]; from != "free" {
		t.Errorf("c took node %d from state %v, want free (released)", sc.NodeID, from)
	}
	fetchIDs(t, c, sc.NodeID, &ids)
	waitMetric(t, c, "nodeid_lease_reads_proved_total", 1, 15*time.Second)
	if s, err := b.status(); err != nil || s.State != node.StateHeld || s.NodeID != sb.NodeID || s.Version != sb.Version {
		t.Errorf("b at the end: %+v %v, want still holding node %d version %d", s, err, sb.NodeID, sb.Version)
	}
	t.Logf("%d IDs from 3 brokers in read mode, none repeated", ids.len())
}

// TestServeKeepAliveMismatch: a broker whose keep-alive differs from the
// cluster manifest's (written by nodeidctl init in read mode) exits 1,
// before it takes an ID, with one line naming both and the fix: write mode,
// another window; and a read-mode broker on a write-mode cluster.
func TestServeKeepAliveMismatch(t *testing.T) {
	t.Parallel()
	env := brokerEnv(t)
	srv := startFakeS3(t)
	store := []string{"--bucket", srv.Bucket(), "--s3-endpoint", srv.URL(), "--s3-path-style"}
	if code, out, errOut := runCtl(t, env, slices.Concat([]string{"init"}, store,
		[]string{"--prefix", "read/", "--cluster-size", "2", "--keepalive", "read", "--window", "3s", "--backstop", "12s"})...); code != 0 {
		t.Fatalf("nodeidctl init --keepalive read: exit %d\n%s%s", code, out, errOut)
	}
	if code, out, errOut := runCtl(t, env, slices.Concat([]string{"init"}, store, []string{"--prefix", "write/", "--cluster-size", "2"})...); code != 0 {
		t.Fatalf("nodeidctl init: exit %d\n%s%s", code, out, errOut)
	}
	for _, tc := range []struct {
		name       string
		args       []string
		have, mine string
		fix        string
	}{
		{"write on read", []string{"--prefix", "read/"}, "keep-alive read, window 3s, backstop 12s", "keep-alive write", "--keepalive read --window 3s --backstop 12s"},
		{"another window", slices.Concat([]string{"--prefix", "read/"}, readModeArgs, []string{"--window", "4s"}),
			"keep-alive read, window 3s, backstop 12s", "keep-alive read, window 4s, backstop 12s", "--keepalive read --window 3s --backstop 12s"},
		{"read on write", slices.Concat([]string{"--prefix", "write/"}, readModeArgs), "keep-alive write", "keep-alive read, window 3s, backstop 12s", "--keepalive write"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			args := slices.Concat([]string{"serve", "--http-addr", "127.0.0.1:0", "--cluster-size", "2"}, store, tc.args)
			code, out, errOut := runBin(t, env, args...)
			msg := "the manifest has " + tc.have + ", this task is configured with " + tc.mine +
				": configure the task as the manifest says (nodeid-broker " + tc.fix + "; Config.KeepAlive)"
			if got, n := exitLine(errOut); code != 1 || !strings.Contains(got, msg) || n != 1 {
				t.Errorf("exit %d, want 1 with %q once on stderr:\n%s%s", code, msg, out, errOut)
			}
			if strings.Contains(errOut, `"msg":"acquired node ID"`) {
				t.Errorf("a node ID was taken:\n%s", errOut)
			}
		})
	}
	code, out, errOut := runCtl(t, env, slices.Concat([]string{"status", "--prefix", "read/"}, store)...)
	if code != 0 || strings.Contains(out, " held ") {
		t.Errorf("nodeidctl status after the refusals: exit %d, want no ID held:\n%s%s", code, out, errOut)
	}
}
