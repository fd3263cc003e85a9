package main

import (
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/nodeid/nodeid/internal/testkit/freeport"
	"github.com/nodeid/nodeid/node"
)

// onePoolWithin bounds how long brokers on loopback take to form one gossip
// pool once they all hold IDs, or once their join target answers: the
// rejoin loop's longest pause there is 5 s (30 s with LAN timings), tripled
// for a loaded machine.
const onePoolWithin = 15 * time.Second

// rawStatus returns p's /status whatever its HTTP code (503 while acquiring).
func rawStatus(p *proc) (node.StatusResponse, error) {
	var s node.StatusResponse
	_, err := p.getJSON("/status", &s)
	return s, err
}

// waitOnePool waits until every broker's /status knownNodes shows want node
// IDs: one gossip pool that sees each holder.
func waitOnePool(t *testing.T, want int, ps ...*proc) {
	t.Helper()
	waitFor(t, onePoolWithin, fmt.Sprintf("one gossip pool of %d brokers", len(ps)), func() (bool, string) {
		views := ""
		for _, p := range ps {
			s, err := rawStatus(p)
			if err != nil {
				return false, err.Error()
			}
			views += fmt.Sprintf("%s: %v; ", p.name, s.KnownNodes)
			if len(s.KnownNodes) != want {
				return false, views
			}
		}
		return true, views
	})
}

// TestServeGossipHealsAtStartAndRestart: three brokers start at once with
// --join naming a broker that is not up yet (its port answers nobody); the
// join target starts once they hold IDs, with no --join of its own. All four
// form one pool within onePoolWithin. The join target is then restarted on
// the same address, still with no --join: it finds the others from the
// addresses their leases publish, and the four are one pool again.
func TestServeGossipHealsAtStartAndRestart(t *testing.T) {
	t.Parallel()
	env := brokerEnv(t)
	srv := startFakeS3(t)
	seed := "127.0.0.1:" + strconv.Itoa(freeport.TCPAndUDP(t))
	common := slices.Concat([]string{"--bucket", srv.Bucket(), "--s3-endpoint", srv.URL(), "--s3-path-style", "--cluster-size", "4"}, shortLease)
	var ps []*proc
	for i := range 3 {
		ps = append(ps, startBroker(t, fmt.Sprintf("b%d", i), env, slices.Concat(common, []string{"--gossip-addr", "127.0.0.1:0", "--join", seed})...))
	}
	for _, p := range ps {
		p.waitHeld(20 * time.Second)
	}
	first := startBroker(t, "first", env, slices.Concat(common, []string{"--gossip-addr", seed})...)
	first.waitHeld(20 * time.Second)
	waitOnePool(t, 4, append(ps, first)...)

	first.signal(syscall.SIGTERM)
	if code := first.waitExit(15 * time.Second); code != exitOK {
		t.Fatalf("first exited %d after SIGTERM, want 0", code)
	}
	waitOnePool(t, 3, ps...)
	again := startBroker(t, "again", env, slices.Concat(common, []string{"--gossip-addr", seed})...)
	again.waitHeld(20 * time.Second)
	waitOnePool(t, 4, append(ps, again)...)
}

// attemptsRe finds how many acquire rounds a waiting broker's /status error
// counts.
var attemptsRe = regexp.MustCompile(`\((\d+) attempts in `)

// TestServeReadModeNoChallengeForLackOfAView: in read mode, three brokers
// start at once, with no --join, on a cluster of two IDs: two hold, the
// third waits. It finds the holders in gossip (from the addresses their
// leases publish) and challenges neither, round after round: no broker
// counts a challenge written or answered.
func TestServeReadModeNoChallengeForLackOfAView(t *testing.T) {
	t.Parallel()
	env := brokerEnv(t)
	srv := startFakeS3(t)
	args := slices.Concat([]string{"--bucket", srv.Bucket(), "--s3-endpoint", srv.URL(), "--s3-path-style", "--cluster-size", "2",
		"--gossip-addr", "127.0.0.1:0"}, readModeArgs)
	var ps []*proc
	for i := range 3 {
		ps = append(ps, startBroker(t, fmt.Sprintf("b%d", i), env, args...))
	}
	var waiter *proc
	waitFor(t, 30*time.Second, "two holders and a waiter that has looked three times, and no challenge", func() (bool, string) {
		held, detail := 0, ""
		waiter = nil
		for _, p := range ps {
			noChallenge(t, p)
			s, err := rawStatus(p)
			if err != nil {
				return false, err.Error()
			}
			detail += fmt.Sprintf("%s: %s %v %q; ", p.name, s.State, s.KnownNodes, s.Error)
			if s.State == node.StateHeld {
				held++
			} else if m := attemptsRe.FindStringSubmatch(s.Error); m != nil && len(s.KnownNodes) == 2 {
				if n, _ := strconv.Atoi(m[1]); n >= 3 {
					waiter = p
				}
			}
		}
		return held == 2 && waiter != nil, detail
	})
	for _, p := range ps {
		noChallenge(t, p)
	}
}

// noChallenge fails the test when p has exited, or counts a challenge it
// wrote or answered.
func noChallenge(t *testing.T, p *proc) {
	t.Helper()
	select {
	case <-p.exited:
		t.Fatalf("broker %s exited %d", p.name, p.ExitCode())
	default:
	}
	code, b, err := p.get("/metrics")
	if err != nil || code != 200 {
		t.Fatalf("broker %s /metrics: %d %v", p.name, code, err)
	}
	for _, series := range []string{"nodeid_lease_challenges_total", "nodeid_lease_challenges_answered_total"} {
		if v, ok := metricValue(string(b), series); !ok || v != 0 {
			t.Fatalf("broker %s: %s %v (present %v), want 0: a live holder challenged", p.name, series, v, ok)
		}
	}
}
