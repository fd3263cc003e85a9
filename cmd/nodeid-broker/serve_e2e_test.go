package main

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/nodeid/nodeid/lease"
	"github.com/nodeid/nodeid/node"
	"github.com/nodeid/nodeid/s3store"
	"github.com/nodeid/nodeid/s3store/s3fake"
	"github.com/nodeid/nodeid/snowflake"
)

// Short leases for the end-to-end tests: a vanished broker's ID is free after
// about 2 s + 1 s (Last-Modified resolution) + 1 s (clock margin).
var shortLease = []string{"--lease-duration", "2s", "--renew-interval", "500ms", "--drain-delay", "200ms", "--log-level", "info"}

// idLedger collects IDs from every broker of a test and fails on a repeat.
type idLedger struct {
	mu   sync.Mutex
	seen map[string]string // ID -> broker that issued it
}

// add records the IDs of one /ids answer from broker name, which holds node.
func (l *idLedger) add(t *testing.T, name string, nodeID int, r node.IDsResponse) {
	t.Helper()
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.seen == nil {
		l.seen = map[string]string{}
	}
	for _, s := range r.IDs {
		if prev, dup := l.seen[s]; dup {
			t.Errorf("ID %s issued twice: by %s and by %s", s, prev, name)
		}
		l.seen[s] = name
		id, err := snowflake.Parse(s)
		if err != nil {
			t.Errorf("broker %s issued %q: %v", name, s, err)
			continue
		}
		if id.NodeID() != int64(nodeID) {
			t.Errorf("broker %s holding node %d issued %s with node ID %d", name, nodeID, s, id.NodeID())
		}
	}
}

func (l *idLedger) len() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.seen)
}

// fetchSizes are the batch sizes fetchIDs asks for, from two goroutines.
var fetchSizes = [][]int{{10000, 1, 1, 1, 777}, {1, 4096, 5000, 2, 10000}}

// idsPerFetch is how many IDs fetchIDs gets.
var idsPerFetch = func() (n int64) {
	for _, s := range fetchSizes {
		for _, k := range s {
			n += int64(k)
		}
	}
	return n
}()

// fetchIDs asks broker p for IDs in a few batch sizes from two goroutines and
// records them.
func fetchIDs(t *testing.T, p *proc, nodeID int, l *idLedger) {
	t.Helper()
	var wg sync.WaitGroup
	for _, sizes := range fetchSizes {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for _, n := range sizes {
				var r node.IDsResponse
				code, err := p.getJSON("/ids?n="+strconv.Itoa(n), &r)
				if err != nil || code != http.StatusOK || len(r.IDs) != n || r.NodeID != nodeID {
					t.Errorf("broker %s: /ids?n=%d: HTTP %d, %d IDs, node %d, err %v", p.name, n, code, len(r.IDs), r.NodeID, err)
					return
				}
				l.add(t, p.name, nodeID, r)
			}
		}()
	}
	wg.Wait()
}

// readLease reads node id's lease object from the S3 server at endpoint.
func readLease(t *testing.T, endpoint, bucket string, id int) lease.Record {
	t.Helper()
	cfg := s3store.DefaultConfig()
	cfg.Bucket, cfg.Endpoint, cfg.UsePathStyle, cfg.Region = bucket, endpoint, true, "us-east-1"
	cfg.AccessKeyID, cfg.SecretAccessKey = s3fake.AccessKeyID, s3fake.SecretAccessKey
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	st, err := s3store.New(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	body, _, err := st.Get(ctx, lease.RecordKey(id))
	if err != nil {
		t.Fatal(err)
	}
	rec, err := lease.DecodeRecord(body, id)
	if err != nil {
		t.Fatal(err)
	}
	return rec
}

// waitGossip waits until p's /status knownNodes is want.
func waitGossip(t *testing.T, p *proc, want map[string]int64) {
	t.Helper()
	waitFor(t, 15*time.Second, "broker "+p.name+"'s gossip view "+fmt.Sprint(want), func() (bool, string) {
		s, err := p.status()
		if err != nil {
			return false, err.Error()
		}
		return maps.Equal(s.KnownNodes, want), fmt.Sprint(s.KnownNodes)
	})
}

// TestServeCluster runs a cluster of brokers, one of them serving the embedded
// S3 for the others, all gossiping: three get distinct IDs, every broker's
// gossip shows every ID and version, IDs never repeat; bad requests get 400;
// the metrics are exposed; healthcheck passes; SIGTERM releases the ID at once
// (exit 0, the next broker takes it free with version+1); kill -9 leaves the
// ID to expire, and then a new broker takes it with version+1.
func TestServeCluster(t *testing.T) {
	t.Parallel()
	env := brokerEnv(t)
	common := slices.Concat([]string{"--cluster-size", "3", "--gossip-addr", "127.0.0.1:0", "--ready-timeout", "5s"}, shortLease)
	var ids idLedger

	a := startBroker(t, "a", env, slices.Concat(common, []string{"--embedded-s3", "127.0.0.1:0"})...)
	s3url := a.waitLog("embedded S3 listening", 15*time.Second)["endpoint"].(string)
	seed := a.waitLog("gossip listening", 15*time.Second)["addr"].(string)
	peerArgs := slices.Concat(common, []string{"--bucket", s3fake.DefaultBucket, "--s3-endpoint", s3url, "--s3-path-style", "--join", seed})
	b := startBroker(t, "b", env, peerArgs...)
	c := startBroker(t, "c", env, peerArgs...)

	st := map[*proc]node.StatusResponse{}
	got := map[int]bool{}
	for _, p := range []*proc{a, b, c} {
		s := p.waitHeld(15 * time.Second)
		st[p] = s
		if got[s.NodeID] {
			t.Fatalf("two brokers hold node %d", s.NodeID)
		}
		got[s.NodeID] = true
		if s.Version != 1 || s.Task == "" {
			t.Errorf("broker %s: %+v, want version 1 and a task", p.name, s)
		}
	}
	if !got[0] || !got[1] || !got[2] {
		t.Fatalf("node IDs %v, want 0, 1 and 2", got)
	}

	t.Run("gossip", func(t *testing.T) {
		want := map[string]int64{}
		for _, s := range st {
			want[strconv.Itoa(s.NodeID)] = s.Version
		}
		for _, p := range []*proc{a, b, c} {
			waitGossip(t, p, want)
		}
	})

	t.Run("nodeidctl agrees", func(t *testing.T) {
		cmd := exec.Command(ctlBin, "status", "--json")
		cmd.Env = append(brokerEnv(t), "NODEID_BUCKET="+s3fake.DefaultBucket, "NODEID_S3_ENDPOINT="+s3url,
			"NODEID_S3_PATH_STYLE=true", "NODEID_REGION=us-east-1")
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("nodeidctl status --json: %v\n%s", err, out)
		}
		var ctl struct {
			Manifest struct {
				ClusterSize int `json:"clusterSize"`
			} `json:"manifest"`
			Leases []struct {
				NodeID  int    `json:"nodeId"`
				State   string `json:"state"`
				Holder  string `json:"holder"`
				Version int64  `json:"version"`
			} `json:"leases"`
		}
		if err := json.Unmarshal(out, &ctl); err != nil || ctl.Manifest.ClusterSize != 3 || len(ctl.Leases) != 3 {
			t.Fatalf("nodeidctl status --json: %v\n%s", err, out)
		}
		for _, s := range st {
			l := ctl.Leases[s.NodeID]
			if l.NodeID != s.NodeID || l.State != "held" || l.Holder != s.Task || l.Version != s.Version {
				t.Errorf("nodeidctl sees node %d as %+v; the broker's /status says %+v", s.NodeID, l, s)
			}
		}
	})

	t.Run("ids", func(t *testing.T) {
		var wg sync.WaitGroup
		for _, p := range []*proc{a, b, c} {
			wg.Add(1)
			go func() { defer wg.Done(); fetchIDs(t, p, st[p].NodeID, &ids) }()
		}
		wg.Wait()
		if s, err := b.status(); err != nil || s.IDsIssued != idsPerFetch {
			t.Errorf("b's idsIssued %d, want %d (err %v)", s.IDsIssued, idsPerFetch, err)
		}
	})

	t.Run("bad requests", func(t *testing.T) {
		for _, q := range []string{"n=0", "n=10001", "n=abc", "n=", "n=1&n=2", "n=-5"} {
			var e node.ErrorResponse
			code, err := a.getJSON("/ids?"+q, &e)
			if err != nil || code != http.StatusBadRequest || e.Status != "bad_request" || !strings.Contains(e.Reason, "n") {
				t.Errorf("/ids?%s: HTTP %d %+v, err %v; want 400 with a reason", q, code, e, err)
			}
		}
		if code, _, err := a.get("/nope"); err != nil || code != http.StatusNotFound {
			t.Errorf("/nope: HTTP %d, err %v", code, err)
		}
		resp, err := httpClient.Post(a.url("/ids"), "text/plain", nil)
		if err != nil || resp.StatusCode != http.StatusMethodNotAllowed {
			t.Errorf("POST /ids: %v %v", resp, err)
		}
		if resp != nil {
			resp.Body.Close()
		}
	})

	t.Run("health and metrics", func(t *testing.T) {
		for _, path := range []string{"/health", "/ready"} {
			if code, body, err := c.get(path); err != nil || code != http.StatusOK || string(body) != "{\"status\":\"ok\"}\n" {
				t.Errorf("%s: HTTP %d %s %v", path, code, body, err)
			}
		}
		if code, out, errOut := runBin(t, env, "healthcheck", "--http-addr", a.httpAddr); code != 0 {
			t.Errorf("healthcheck against a: exit %d\n%s%s", code, out, errOut)
		}
		port := a.httpAddr[strings.LastIndex(a.httpAddr, ":"):]
		if code, out, errOut := runBin(t, append(brokerEnv(t), "NODEID_HTTP_ADDR="+port), "healthcheck"); code != 0 {
			t.Errorf("healthcheck with NODEID_HTTP_ADDR=%s: exit %d\n%s%s", port, code, out, errOut)
		}
		// A broker that took a never-created ID wrote no update yet: wait for
		// its first renewal.
		var m string
		waitFor(t, 10*time.Second, "a renewal in b's /metrics", func() (bool, string) {
			code, body, err := b.get("/metrics")
			if err != nil || code != http.StatusOK {
				return false, fmt.Sprintf("HTTP %d %v", code, err)
			}
			m = string(body)
			return strings.Contains(m, `nodeid_s3_requests_total{operation="update",outcome="ok"}`), "no update yet"
		})
		for _, want := range []string{
			`nodeid_lease_state{state="held"} 1`,
			`nodeid_lease_state{state="acquiring"} 0`,
			fmt.Sprintf("nodeid_node_id %d\n", st[b].NodeID),
			"nodeid_node_version 1\n",
			"nodeid_lease_acquisitions_total 1\n",
			"nodeid_lease_acquire_duration_seconds_count 1\n",
			"nodeid_lease_renewals_total ",
			"nodeid_lease_renewal_failures_total 0\n",
			"nodeid_lease_renew_duration_seconds_bucket",
			"nodeid_lease_lost_total 0\n",
			"nodeid_lease_released_total 0\n",
			"nodeid_lease_anomalies_total 0\n",
			`nodeid_s3_requests_total{operation="list",outcome="ok"}`,
			`nodeid_s3_requests_total{operation="update",outcome="ok"}`,
			`nodeid_s3_request_duration_seconds_bucket{operation="update"`,
			fmt.Sprintf("nodeid_ids_issued_total %d\n", idsPerFetch),
			"nodeid_ids_fenced_refusals_total 0\n",
			"go_goroutines ",
			"process_resident_memory_bytes ",
		} {
			if !strings.Contains(m, want) {
				t.Errorf("/metrics lacks %q", want)
			}
		}
	})
	if t.Failed() {
		return
	}

	// The steps below start brokers, so they run in the test itself (a
	// subtest's cleanup would kill them at its end).

	// SIGTERM: c releases its ID and exits 0; d takes it free, version 2.
	cs := st[c]
	c.signal(syscall.SIGTERM)
	if code := c.waitExit(15 * time.Second); code != 0 {
		t.Fatalf("c exited %d after SIGTERM, want 0", code)
	}
	rec := readLease(t, s3url, s3fake.DefaultBucket, cs.NodeID)
	if rec.Holder != "" || rec.Version != cs.Version {
		t.Fatalf("after c's SIGTERM, lease %d = holder %q version %d; want free, version %d", cs.NodeID, rec.Holder, rec.Version, cs.Version)
	}
	d := startBroker(t, "d", env, peerArgs...)
	ds := d.waitTakeover(cs, "free", 10*time.Second)
	fetchIDs(t, d, ds.NodeID, &ids)

	// kill -9: b's ID stays taken until its lease expires; e waits (503
	// acquiring), then takes it with version 2.
	bs := st[b]
	b.signal(syscall.SIGKILL)
	b.waitExit(5 * time.Second)
	killed := time.Now()
	e := startBroker(t, "e", env, peerArgs...)
	var h struct{ Status, Reason string }
	if code, err := e.getJSON("/health", &h); err != nil || code != http.StatusServiceUnavailable || !strings.Contains(h.Reason, "acquiring") {
		t.Errorf("e's /health while acquiring: HTTP %d %+v %v; want 503 acquiring", code, h, err)
	}
	if code, _, err := e.get("/ids"); err != nil || code != http.StatusServiceUnavailable {
		t.Errorf("e's /ids while acquiring: HTTP %d %v; want 503", code, err)
	}
	es := e.waitTakeover(bs, "expired", 20*time.Second)
	t.Logf("e took node %d %v after the kill", es.NodeID, time.Since(killed).Round(time.Millisecond))
	fetchIDs(t, e, es.NodeID, &ids)
	// The readiness gate opens once the live peers' gossip shows version 2.
	waitFor(t, 15*time.Second, "e ready", func() (bool, string) {
		code, body, err := e.get("/ready")
		return err == nil && code == http.StatusOK, fmt.Sprintf("%d %s %v", code, body, err)
	})
	waitGossip(t, a, map[string]int64{
		strconv.Itoa(st[a].NodeID): 1, strconv.Itoa(st[c].NodeID): 2, strconv.Itoa(es.NodeID): es.Version,
	})
	t.Logf("%d IDs from 5 brokers, none repeated", ids.len())
}

// TestServeS3CutOff cuts a broker off its S3 (a proxy that closes the
// connections and then black-holes them): it fences at the renew deadline,
// answers 503 on /health and /ids from then on (never an ID after /health
// went 503), removes its id file and exits 3; healthcheck fails against it.
// Before the cut, renewals push the id file's validUntilMs forward; the last
// one written is no later than the moment /health went 503, so an application
// that stops there by itself (a frozen broker cannot remove the file) stops
// no later than the broker does.
func TestServeS3CutOff(t *testing.T) {
	t.Parallel()
	srv := startFakeS3(t)
	proxy := newCutProxy(t, strings.TrimPrefix(srv.URL(), "http://"))
	idFile := filepath.Join(t.TempDir(), "nodeid.json")
	env := brokerEnv(t)
	args := append([]string{"--bucket", srv.Bucket(), "--s3-endpoint", proxy.URL(), "--s3-path-style", "--cluster-size", "4", "--id-file", idFile}, shortLease...)
	args = append(args, "--drain-delay", "1s") // the last flag wins
	started := time.Now().UnixMilli()
	p := startBroker(t, "cut", env, args...)
	s := p.waitHeld(15 * time.Second)

	var f node.IDFileContent
	readIDFile := func() (bool, string) {
		b, err := os.ReadFile(idFile)
		return err == nil && json.Unmarshal(b, &f) == nil, fmt.Sprint(err)
	}
	waitFor(t, 5*time.Second, "the id file", readIDFile)
	if f.NodeID != s.NodeID || f.Version != s.Version {
		t.Fatalf("id file %+v, want node %d version %d", f, s.NodeID, s.Version)
	}
	// The lease is 2 s: valid until a write's send time (after the start)
	// plus less than that, and no later than 2 s from now. (Whether it is
	// still in the future when read depends on how soon the broker got a core
	// for its last renewal.)
	if now := time.Now().UnixMilli(); f.ValidUntilMs <= started || f.ValidUntilMs > now+2000 {
		t.Fatalf("id file validUntilMs %d, want after the broker's start (%d) and within 2 s after now (%d)", f.ValidUntilMs, started, now)
	}
	first := f.ValidUntilMs
	waitFor(t, 5*time.Second, "a renewal to refresh the id file", func() (bool, string) {
		ok, msg := readIDFile()
		return ok && f.ValidUntilMs > first, msg
	})
	if code, _, err := p.get("/ids?n=5"); err != nil || code != http.StatusOK {
		t.Fatalf("/ids before the cut: HTTP %d %v", code, err)
	}

	proxy.Cut()
	cut := time.Now()
	var healthDown, idsRefused, idsAfterDown int
	var hcRan bool
	for done := false; !done; {
		select {
		case <-p.exited:
			done = true
			continue
		default:
		}
		hcode, _, herr := p.get("/health")
		if herr != nil {
			continue // shutting down: connection refused
		}
		if hcode == http.StatusOK {
			readIDFile() // the last content before the fence
		}
		if hcode == http.StatusServiceUnavailable {
			healthDown++
		}
		// /ids at once after /health: the broker answers 503 from the fence
		// until it has stopped and for the 1 s drain after, so the first 503
		// of /health is followed by one of /ids, whatever the load.
		var r node.IDsResponse
		icode, ierr := p.getJSON("/ids?n=3", &r)
		switch {
		case ierr != nil && icode == 0:
		case icode == http.StatusServiceUnavailable:
			idsRefused++
		case icode == http.StatusOK && healthDown > 0:
			idsAfterDown++
		}
		if healthDown > 0 && !hcRan {
			hcRan = true
			if code, out, errOut := runBin(t, env, "healthcheck", "--http-addr", p.httpAddr); code != 1 {
				t.Errorf("healthcheck against the fenced broker: exit %d, want 1\n%s%s", code, out, errOut)
			}
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Logf("exited %v after the cut; %d /health 503s, %d /ids 503s seen", time.Since(cut).Round(time.Millisecond), healthDown, idsRefused)
	if p.ExitCode() != exitLeaseLost {
		t.Errorf("exit code %d, want %d (lease lost)", p.ExitCode(), exitLeaseLost)
	}
	if healthDown == 0 || idsRefused == 0 {
		t.Errorf("saw %d /health 503s and %d /ids 503s before the exit, want some of each", healthDown, idsRefused)
	}
	if idsAfterDown > 0 {
		t.Errorf("%d /ids requests got IDs after /health answered 503", idsAfterDown)
	}
	// /health turns 503 when the lease enters jeopardy, at the renew
	// deadline; the file's validUntilMs is the fence of the last write that
	// landed, sent before the cut: at most its lease less the safety margin
	// after it.
	if fence := cut.Add(2*time.Second - 500*time.Millisecond).UnixMilli(); f.ValidUntilMs > fence {
		t.Errorf("the id file said valid until %d, after the fence of the last write sent before the cut (%d)", f.ValidUntilMs, fence)
	}
	if fileExists(idFile) {
		t.Errorf("the id file %s is still there after the broker fenced", idFile)
	}
	if p.findLog("lease lost: stopped issuing IDs") == nil {
		t.Errorf("no 'lease lost' line in the log")
	}
	if code, _, errOut := runBin(t, env, "healthcheck", "--http-addr", p.httpAddr); code != 1 || !strings.Contains(errOut, "unhealthy") {
		t.Errorf("healthcheck against the exited broker: exit %d %s, want 1", code, errOut)
	}
}

// TestServeBadInput runs the binary with bad flags and variables: exit 2 with
// a message naming the flag or variable (1 for healthcheck, which Docker
// forbids to exit 2), 2 when no AWS region is set anywhere, and 1 with what
// to fix when S3 is unreachable.
func TestServeBadInput(t *testing.T) {
	t.Parallel()
	env := brokerEnv(t)
	for _, tc := range []struct {
		name     string
		env      []string
		args     []string
		code     int
		contains string
	}{
		{"bad duration flag", nil, []string{"serve", "--bucket", "b", "--lease-duration", "soon"}, 2, "lease-duration"},
		{"bad duration variable", []string{"NODEID_LEASE_DURATION=soon"}, []string{"serve", "--bucket", "b"}, 2, "NODEID_LEASE_DURATION"},
		{"bad bool variable", []string{"NODEID_S3_PATH_STYLE=maybe"}, []string{"serve", "--bucket", "b"}, 2, "NODEID_S3_PATH_STYLE"},
		{"bad int variable", []string{"NODEID_CLUSTER_SIZE=many"}, []string{"serve", "--bucket", "b"}, 2, "NODEID_CLUSTER_SIZE"},
		{"cluster too large", []string{"NODEID_CLUSTER_SIZE=2000"}, []string{"serve", "--bucket", "b"}, 2, "NODEID_CLUSTER_SIZE (--cluster-size) 2000"},
		{"unknown flag", nil, []string{"serve", "--bukket", "b"}, 2, "bukket"},
		{"no bucket", nil, []string{"serve"}, 2, "--bucket"},
		{"stray argument", nil, []string{"serve", "--bucket", "b", "now"}, 2, `"now"`},
		{"join without gossip", nil, []string{"serve", "--bucket", "b", "--join", "10.0.0.1:7946"}, 2, "--join"},
		{"bad gossip addr", nil, []string{"serve", "--bucket", "b", "--gossip-addr", "myhost:7946"}, 2, "--gossip-addr"},
		{"bad gossip key", []string{"NODEID_GOSSIP_KEY=c2hvcnQ="}, []string{"serve", "--bucket", "b"}, 2, "NODEID_GOSSIP_KEY"},
		{"renew after lease", nil, []string{"serve", "--bucket", "b", "--lease-duration", "3s", "--renew-interval", "5s"}, 2, "--renew-interval"},
		{"bad log level", []string{"NODEID_LOG_LEVEL=loud"}, []string{"serve", "--bucket", "b"}, 2, "NODEID_LOG_LEVEL"},
		{"prefix without a slash", nil, []string{"serve", "--bucket", "b", "--prefix", "nodeid"}, 2, `--prefix "nodeid" does not end with "/"`},
		{"prefix variable without a slash", []string{"NODEID_PREFIX=ids"}, []string{"serve", "--bucket", "b"}, 2, `NODEID_PREFIX (--prefix) "ids" does not end with "/"`},
		{"both S3s", nil, []string{"serve", "--embedded-s3", ":0", "--s3-endpoint", "http://x"}, 2, "--embedded-s3"},
		{"bad endpoint", nil, []string{"serve", "--bucket", "b", "--s3-endpoint", "ftp://x"}, 2, `--s3-endpoint "ftp://x" is not an http://`},
		{"no region", nil, []string{"serve", "--bucket", "b", "--http-addr", "127.0.0.1:0"}, 2, "no AWS region: set Config.Region (--region)"},
		{"unreachable S3", nil, []string{"serve", "--bucket", "b", "--s3-endpoint", "http://127.0.0.1:1", "--s3-path-style", "--http-addr", "127.0.0.1:0"}, 1, "http://127.0.0.1:1 refuses connections"},
		{"help", nil, []string{"serve", "--help"}, 0, "NODEID_EMBEDDED_S3"},
		{"healthcheck bad flag", nil, []string{"healthcheck", "--http-adr", "x"}, 1, "http-adr"},
		{"healthcheck bad variable", []string{"NODEID_HTTP_ADDR=nonsense"}, []string{"healthcheck"}, 1, "NODEID_HTTP_ADDR"},
		{"healthcheck nobody there", nil, []string{"healthcheck", "--http-addr", "127.0.0.1:1"}, 1, "unhealthy"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, out, errOut := runBin(t, append(append([]string{}, env...), tc.env...), tc.args...)
			if code != tc.code || !strings.Contains(out+errOut, tc.contains) {
				t.Errorf("exit %d, want %d with %q in the output:\n%s%s", code, tc.code, tc.contains, out, errOut)
			}
		})
	}
}

// TestServeSignalWhileAcquiring stops a broker that waits for a node ID in a
// full cluster: it exits 0 at once, having held nothing.
func TestServeSignalWhileAcquiring(t *testing.T) {
	t.Parallel()
	srv := startFakeS3(t)
	env := brokerEnv(t)
	args := append([]string{"--bucket", srv.Bucket(), "--s3-endpoint", srv.URL(), "--s3-path-style", "--cluster-size", "1"}, shortLease...)
	first := startBroker(t, "first", env, args...)
	first.waitHeld(15 * time.Second)
	second := startBroker(t, "second", env, args...)
	second.waitLog("acquiring a node ID", 10*time.Second)
	if s, err := second.status(); err != nil || s.State != node.StateAcquiring || s.NodeID != -1 || s.Ready {
		t.Fatalf("second: %+v %v, want acquiring", s, err)
	}
	// It says why it waits, in its log and its health check.
	if line := second.waitLog("no node ID taken yet: still acquiring", 10*time.Second); !strings.Contains(fmt.Sprint(line["reason"]), "cluster full") {
		t.Errorf("second's log says it waits because %v, want the cluster full", line["reason"])
	}
	if code, body, err := second.get("/health"); err != nil || code != http.StatusServiceUnavailable || !strings.Contains(string(body), "cluster full") {
		t.Errorf("second's /health: %d %s %v, want 503 naming the full cluster", code, body, err)
	}
	second.signal(syscall.SIGINT)
	if code := second.waitExit(10 * time.Second); code != 0 {
		t.Fatalf("second exited %d after SIGINT while acquiring, want 0", code)
	}
	if s, err := first.status(); err != nil || s.State != node.StateHeld {
		t.Fatalf("first: %+v %v", s, err)
	}
}

// TestServeSignalWhileCheckingTheStore stops a broker whose S3 does not
// answer yet (its store check hangs): it exits 0, having held nothing.
func TestServeSignalWhileCheckingTheStore(t *testing.T) {
	t.Parallel()
	srv := startFakeS3(t)
	proxy := newCutProxy(t, strings.TrimPrefix(srv.URL(), "http://"))
	proxy.Cut() // connections are accepted and never answered
	p := startBroker(t, "waiting", brokerEnv(t), "--bucket", srv.Bucket(), "--s3-endpoint", proxy.URL(), "--s3-path-style")
	p.waitLog("lease store", 10*time.Second)
	p.signal(syscall.SIGTERM)
	if code := p.waitExit(10 * time.Second); code != 0 {
		t.Fatalf("exited %d after SIGTERM during the store check, want 0", code)
	}
	if p.findLog("stopped by a signal before a node ID was acquired") == nil {
		t.Error("no log line saying it stopped before acquiring")
	}
}

// TestServeClockSkewHandover hands a node ID over from a broker whose clock is
// 1 s ahead to one whose clock is 1 s behind (--debug-clock-offset): the
// release lowers the reservation to the last timestamp issued (or to the
// release time: the first broker has an id file), the successor starts above
// it, so its IDs are all above its predecessor's although its clock is 2 s
// behind. On SIGTERM, the id file is removed before the release is written.
func TestServeClockSkewHandover(t *testing.T) {
	t.Parallel()
	srv := startFakeS3(t)
	env := brokerEnv(t)
	args := slices.Concat([]string{"--bucket", srv.Bucket(), "--s3-endpoint", srv.URL(), "--s3-path-style", "--cluster-size", "1"}, shortLease)
	idFile := filepath.Join(t.TempDir(), "id.json")
	ahead := startBroker(t, "ahead", env, slices.Concat(args, []string{"--debug-clock-offset", "1s", "--id-file", idFile, "--id-file-grace", "300ms"})...)
	ahead.waitHeld(15 * time.Second)
	ahead.waitLog("id file written", 5*time.Second)
	var ids idLedger
	fetchIDs(t, ahead, 0, &ids)
	var last node.IDsResponse
	asked := time.Now() // the ID is issued after this, on a clock 1 s ahead
	if code, err := ahead.getJSON("/ids", &last); err != nil || code != http.StatusOK {
		t.Fatalf("/ids: HTTP %d %v", code, err)
	}
	ids.add(t, "ahead", 0, last)
	lastID, _ := snowflake.Parse(last.IDs[0])
	if skew := lastID.Time().Sub(asked); skew < 500*time.Millisecond {
		t.Errorf("the last ID's time is %v after the test's clock when it asked, want about 1s (--debug-clock-offset 1s)", skew)
	}
	ahead.signal(syscall.SIGTERM)
	if code := ahead.waitExit(15 * time.Second); code != 0 {
		t.Fatalf("exit %d after SIGTERM", code)
	}
	// The id file went first, then (after the grace) the release was written.
	removed, released := logTime(ahead.findLog("id file removed")), logTime(ahead.findLog("released node ID"))
	if fileExists(idFile) || removed.IsZero() || released.IsZero() || !removed.Before(released) {
		t.Errorf("after SIGTERM: id file exists %v; removed at %v; released at %v", fileExists(idFile), removed, released)
	}

	behind := startBroker(t, "behind", env, slices.Concat(args, []string{"--debug-clock-offset", "-1s"})...)
	s := behind.waitHeld(15 * time.Second)
	if s.Version != 2 || s.FloorMs < lastID.Time().UnixMilli() {
		t.Fatalf("successor: version %d floor %d; want version 2 and a floor at or above the last ID's time %d", s.Version, s.FloorMs, lastID.Time().UnixMilli())
	}
	var first node.IDsResponse
	if code, err := behind.getJSON("/ids", &first); err != nil || code != http.StatusOK { // waits for its clock to pass the floor
		t.Fatalf("/ids: HTTP %d %v", code, err)
	}
	ids.add(t, "behind", 0, first)
	firstID, _ := snowflake.Parse(first.IDs[0])
	if firstID <= lastID {
		t.Fatalf("successor's first ID %d is not above its predecessor's last %d", firstID, lastID)
	}
	fetchIDs(t, behind, 0, &ids)
	t.Logf("predecessor's last ID %d, successor's first %d (%v later)", lastID, firstID, firstID.Time().Sub(lastID.Time()))
}
