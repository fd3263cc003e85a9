package main

import (
	"bytes"
	"context"
	"math"
	"testing"
	"time"

	"github.com/nodeid/nodeid/cmd/nodeid-bench/internal/latproxy"
	"github.com/nodeid/nodeid/nodeid"
)

// shortRead is read mode with timings short enough for a test: W 3 s,
// backstop 12 s (written every 4 s), polls every 700 ms as derived.
var shortRead = keepAliveOpts{window: 3 * time.Second, backstop: 12 * time.Second}

// steadyRowOf measures the take-to-backstop interval (the take is before the
// window), counts GETs and LISTs per node-hour over the window, and prices
// them.
func TestSteadyRowOf(t *testing.T) {
	t0 := time.Date(2026, 11, 28, 0, 0, 0, 0, time.UTC)
	from, to := t0.Add(10*time.Second), t0.Add(10*time.Second+time.Hour)
	g := steadyGroup{label: "steady-read/", renew: 200 * time.Second, lease: 10 * time.Minute,
		info: keepAliveInfo{Mode: string(nodeid.KeepAliveRead), Window: toMS(15 * time.Second), Backstop: toMS(10 * time.Minute),
			BackstopInterval: toMS(200 * time.Second), PollInterval: toMS(7500 * time.Millisecond)}}
	var events []latproxy.Event
	window := latproxy.Counts{}
	for node := range 2 {
		label := "steady-read/" + string(rune('0'+node))
		take := t0.Add(time.Duration(node) * time.Second)
		events = append(events, latproxy.Event{Label: label + "/acquire", Op: latproxy.OpCreate, Status: 200, Sent: take})
		for k := 1; k <= 18; k++ { // one backstop write every 200 s for an hour
			events = append(events, latproxy.Event{Label: label + "/hold", Op: latproxy.OpUpdate, Status: 200, Sent: take.Add(time.Duration(k) * 200 * time.Second)})
		}
		window[latproxy.Key{Label: label + "/hold", Op: latproxy.OpUpdate, Status: 200}] = 18
		window[latproxy.Key{Label: label + "/hold", Op: latproxy.OpGet, Status: 304}] = 480
	}
	// Another group's requests are not this one's.
	window[latproxy.Key{Label: "steady-15s/0/hold", Op: latproxy.OpUpdate, Status: 200}] = 720
	row, targets := steadyRowOf(g, 2, window, events, from, to)
	if row.PutIntervals != 36 || row.MeanPutInterval != toMS(200*time.Second) || math.Abs(row.PutPerHour-18) > 1e-9 || row.PutsPerRenewInterval != 1 {
		t.Errorf("%d intervals, mean %vms, %.3f PUT/h, %.3f per backstop interval; want 36, 200000, 18, 1",
			row.PutIntervals, row.MeanPutInterval, row.PutPerHour, row.PutsPerRenewInterval)
	}
	if math.Abs(row.GetPerHour-480) > 1e-9 || row.ListPerHour != 0 || math.Abs(row.PutCountedPerHour-18) > 1e-9 {
		t.Errorf("GET %.3f, LIST %.3f, PUT counted %.3f per node-hour; want 480, 0, 18", row.GetPerHour, row.ListPerHour, row.PutCountedPerHour)
	}
	// 730 h x (18 x $0.005 + 480 x $0.0004) / 1000 = $0.2059.
	if want := 730 * (18*0.005 + 480*0.0004) / 1000; math.Abs(row.CostPerMonth-want) > 1e-9 {
		t.Errorf("cost %.4f, want %.4f", row.CostPerMonth, want)
	}
	if len(targets) != 2 || !targets[0].Met || !targets[1].Met || targets[1].Note != "" {
		t.Errorf("targets %+v; want both met, at the target's timings", targets)
	}
}

// The stand-in for gossip: a killed task is seen dead after the detection
// delay (its ID leaves KnownNodes, Freed fires); a release after the spread;
// Rank orders the live members that hold nothing.
func TestFakeGossip(t *testing.T) {
	g := newFakeGossip(50*time.Millisecond, 0)
	for _, n := range []string{"a", "b", "c"} {
		g.join(n)
	}
	g.claim("a", 1, 3)
	g.claim("b", 2, 5)
	v := g.view("c")
	if k := v.KnownNodes(); len(k) != 2 || k[1] != 3 || k[2] != 5 {
		t.Fatalf("KnownNodes %v; want 1:3 and 2:5", k)
	}
	if r, of := v.Rank(); r != 0 || of != 1 {
		t.Errorf("Rank %d of %d; want 0 of 1", r, of)
	}
	freed := v.Freed()
	g.kill("a")
	if !v.TaskLive("a") || len(v.KnownNodes()) != 2 {
		t.Error("a seen dead before the detection delay")
	}
	select {
	case <-freed:
	case <-time.After(5 * time.Second):
		t.Fatal("Freed not closed after a holder was seen dead")
	}
	if v.TaskLive("a") || !v.TaskLive("b") || v.TaskLive("nobody") {
		t.Error("TaskLive: want a dead, b live, an unknown task dead")
	}
	if k := v.KnownNodes(); len(k) != 1 || k[2] != 5 {
		t.Errorf("KnownNodes %v after a died; want 2:5", k)
	}
	freed = v.Freed()
	g.release("b")
	select {
	case <-freed:
	default:
		t.Fatal("Freed not closed by a release (spread 0)")
	}
	if len(v.KnownNodes()) != 0 || v.TaskLive("b") {
		t.Error("a released task still holds or lives")
	}
}

// Read-mode failover in-process, small and short: a claim issuing no IDs and
// an ID issuer, each cut off, are challenged once gossip shows them dead and
// their IDs taken with a higher version (the successor's first ID above the
// old holder's last); a release is taken without a challenge.
func TestFailoverReadSmoke(t *testing.T) {
	ctx := context.Background()
	o := failoverOpts{keepAliveOpts: shortRead, ids: 3, runs: 1, keepAlive: string(nodeid.KeepAliveRead), gossip: true,
		detect: 200 * time.Millisecond, spread: 10 * time.Millisecond}
	o.latency, o.seed = time.Millisecond, 5
	b, err := startBackend(ctx, o.common, true)
	if err != nil {
		t.Fatal(err)
	}
	defer b.close()
	rep, err := failover(ctx, b, o, []string{kindNoIDs, kindCrash, kindRelease}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Runs) != 3 || rep.KeepAlive.ReadProbe != "passed" || rep.KeepAlive.PollInterval != toMS(700*time.Millisecond) {
		t.Fatalf("%d runs, keep-alive %+v; want 3 runs, the probe passed, polls every 700ms", len(rep.Runs), rep.KeepAlive)
	}
	for _, r := range rep.Runs {
		if r.KillToTake <= 0 || r.Overlap {
			t.Errorf("%s: kill to take %vms, overlap %v", r.Kind, r.KillToTake, r.Overlap)
		}
		switch r.Kind {
		case kindNoIDs, kindCrash:
			if r.Challenges < 1 || r.Confirms < 1 {
				t.Errorf("%s: %d challenges, %d confirmed; want the dead holder challenged", r.Kind, r.Challenges, r.Confirms)
			}
		case kindRelease:
			if r.Challenges != 0 {
				t.Errorf("release: %d challenges, want none", r.Challenges)
			}
		}
		if r.Kind != kindNoIDs && (r.KillToFirstID < r.KillToTake || r.SuccessorIDs == 0 || r.VictimIssued == 0) {
			t.Errorf("%s: first ID %vms after the kill (take %vms), %d IDs before, %d after", r.Kind, r.KillToFirstID, r.KillToTake, r.VictimIssued, r.SuccessorIDs)
		}
	}
	if len(rep.Targets) != 5 {
		t.Errorf("%d targets, want 5 (take for each kind, first ID for crash and release)", len(rep.Targets))
	}
}

// Rolling in read mode with gossip, small: every new task takes a released
// ID, no live holder is lost, and the counts of challenges are reported.
func TestRollingReadSmoke(t *testing.T) {
	ctx := context.Background()
	const n = 6
	o := rollingOpts{leaseOpts: leaseOpts{ids: n, acquireTimeout: time.Minute}, keepAliveOpts: shortRead,
		minHealthy: -1, stopDelay: 200 * time.Millisecond, keepAlive: string(nodeid.KeepAliveRead), gossip: true, spread: 10 * time.Millisecond}
	o.latency, o.seed = time.Millisecond, 3
	b, err := startBackend(ctx, o.common, false)
	if err != nil {
		t.Fatal(err)
	}
	defer b.close()
	rep, err := rolling(ctx, b, o, []int{100}, nil)
	if err != nil {
		t.Fatal(err)
	}
	r := rep.Runs[0]
	if r.Acquired != n || r.Released != n || !r.Distinct || r.Lost != 0 || len(r.Errors) != 0 {
		t.Errorf("%d of %d acquired, %d released, distinct %v, lost %d: %v", r.Acquired, n, r.Released, r.Distinct, r.Lost, r.Errors)
	}
	if r.Challenges < r.Confirms || r.ChallengesMax > r.Challenges || len(rep.Targets) != 3 || rep.KeepAlive.Mode != string(nodeid.KeepAliveRead) {
		t.Errorf("challenges %d, confirmed %d, max %d, %d targets, mode %q", r.Challenges, r.Confirms, r.ChallengesMax, len(rep.Targets), rep.KeepAlive.Mode)
	}
}

func TestReadModeCommandLine(t *testing.T) {
	var out, errb bytes.Buffer
	for _, args := range [][]string{
		{"steady", "--keepalive", "sometimes"}, {"steady", "--keepalive", "read,read"},
		{"steady", "--keepalive", "read", "--read-window", "1s", "--backstop", "2s"},
		{"failover", "--keepalive", "maybe"}, {"failover", "--kinds", "crash,crash"}, {"failover", "--kinds", "explode"},
		{"rolling", "--keepalive", "read", "--backstop", "1s"},
	} {
		if code := run(context.Background(), args, &out, &errb); code != 2 {
			t.Errorf("%v: exit %d, want 2", args, code)
		}
	}
	if k, err := parseKinds("crash, noids,release"); err != nil || len(k) != 3 {
		t.Errorf("parseKinds: %v, %v", k, err)
	}
}
