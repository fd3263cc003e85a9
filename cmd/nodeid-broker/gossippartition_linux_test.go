package main

import (
	"bytes"
	"context"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/nodeid/nodeid/internal/testkit/brokerproc"
	"github.com/nodeid/nodeid/node"
	"github.com/nodeid/nodeid/s3store/s3fake"
)

// The network of TestServeGossipPartitionHeals: a bridge in the test's own
// network namespace (the hub, with the store) and one namespace a broker on
// it, each with a veth on the bridge.
const (
	netnsPrefix = "10.77.0."            // broker i is netnsPrefix + i, i from 1
	netnsHub    = "10.77.0.254"         // the test: the store, and the /status polls
	netnsBridge = "nodeid-br0"          // the bridge in the hub
	netnsMarker = "netns-unavailable: " // how the re-run test says namespaces cannot be made
)

// splitWithin bounds how long the halves of a partition take to find each
// other dead with memberlist's local timings (1 s probes, suspicion of 3
// probe intervals, up to 6 times that unconfirmed), with slack for a loaded
// machine.
const splitWithin = 40 * time.Second

// partitionHold is how long the cut stands once the halves are apart: past
// GossipToTheDeadTime (15 s with --gossip-timings local:
// gossip.DefaultLocalConfig) after every death, so that neither half still
// gossips to the other's dead (which would heal a short partition by
// chance) and only the reconnect can join them.
const partitionHold = 17 * time.Second

// healWithin is the bound the test states for one pool again after the
// partition heals, with --gossip-timings local: a reconnect tick
// (gossip.DefaultLocalConfig's ReconnectInterval, 2 s) plus 5 probe
// intervals of 1 s (the push/pull of the join, the dead members'
// refutation, /status), doubled for a loaded machine.
const healWithin = 14 * time.Second

// partitionLease are the brokers' lease flags: a lease of 10 s, whose
// renewals ride out a loaded machine's pauses (the test is about gossip),
// and a short drain.
var partitionLease = []string{"--lease-duration", "10s", "--drain-delay", "200ms", "--log-level", "info"}

var netnsMarkerRe = regexp.MustCompile(netnsMarker + `.*`)

// TestServeGossipPartitionHeals: four real brokers, each in a network
// namespace of its own (on a bridge, gossip with --gossip-timings local),
// started at once with --join naming the first, form one pool; a partition
// cuts them 2|2 (each namespace drops, silently, every packet from the other
// half: a policy rule ahead of the local table); each half finds the other
// dead and sees only its own two node IDs; once the cut is lifted the four
// are one pool again within healWithin, the rejoin loop's reconnect to a
// member found dead doing it. No broker loses or changes its node ID, and
// the four stay distinct; the store stays reachable by all throughout.
//
// The test re-runs its own binary in a new user and network namespace, where
// it may make bridges, veths and namespaces. Where that cannot be done (no
// user namespaces, no ip or nsenter) it skips, unless CI is "true".
func TestServeGossipPartitionHeals(t *testing.T) {
	if os.Getenv(netnsChildEnv) != "" {
		partitionHeals(t)
		return
	}
	t.Parallel()
	for _, tool := range []string{"ip", "nsenter", "sleep"} {
		if _, err := exec.LookPath(tool); err != nil {
			netnsUnavailable(t, err.Error())
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, os.Args[0], "-test.run=^TestServeGossipPartitionHeals$", "-test.count=1", "-test.v")
	cmd.Env = append(os.Environ(), netnsChildEnv+"="+brokerBin)
	cmd.SysProcAttr = &syscall.SysProcAttr{
		Cloneflags:  syscall.CLONE_NEWUSER | syscall.CLONE_NEWNET,
		UidMappings: []syscall.SysProcIDMap{{ContainerID: 0, HostID: os.Getuid(), Size: 1}},
		GidMappings: []syscall.SysProcIDMap{{ContainerID: 0, HostID: os.Getgid(), Size: 1}},
		Pdeathsig:   syscall.SIGKILL,
	}
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		netnsUnavailable(t, fmt.Sprintf("re-run the test in a new user and network namespace: %v", err))
	}
	err := cmd.Wait()
	if m := netnsMarkerRe.Find(out.Bytes()); m != nil {
		netnsUnavailable(t, string(m))
	}
	if err != nil || !strings.Contains(out.String(), "--- PASS: TestServeGossipPartitionHeals") {
		t.Fatalf("in its namespaces: %v\n%s", err, out.String())
	}
	t.Logf("in its namespaces:\n%s", out.String())
}

// netnsUnavailable skips the test, or fails it when CI is "true".
func netnsUnavailable(t *testing.T, why string) {
	t.Helper()
	if os.Getenv("CI") == "true" {
		t.Fatalf("network namespaces needed (CI=true): %s", why)
	}
	t.Skipf("network namespaces cannot be made here: %s", why)
}

// partitionHeals is TestServeGossipPartitionHeals inside its user and
// network namespace.
func partitionHeals(t *testing.T) {
	setup := func(args ...string) {
		t.Helper()
		if out, err := exec.Command(args[0], args[1:]...).CombinedOutput(); err != nil {
			t.Skipf("%s%s: %v: %s", netnsMarker, strings.Join(args, " "), err, bytes.TrimSpace(out))
		}
	}
	setup("ip", "link", "set", "lo", "up")
	setup("ip", "link", "add", netnsBridge, "type", "bridge")
	setup("ip", "addr", "add", netnsHub+"/24", "dev", netnsBridge)
	setup("ip", "link", "set", netnsBridge, "up")
	var pids []string // each broker's namespace, held by a sleep
	for i := 1; i <= 4; i++ {
		hold := exec.Command("sleep", "3600")
		hold.SysProcAttr = &syscall.SysProcAttr{Cloneflags: syscall.CLONE_NEWNET, Pdeathsig: syscall.SIGKILL}
		if err := hold.Start(); err != nil {
			t.Skipf("%sa network namespace: %v", netnsMarker, err)
		}
		t.Cleanup(func() { _ = hold.Process.Kill(); _ = hold.Wait() })
		pid := strconv.Itoa(hold.Process.Pid)
		pids = append(pids, pid)
		veth := "nodeid-v" + strconv.Itoa(i)
		setup("ip", "link", "add", veth, "type", "veth", "peer", "name", "eth0", "netns", pid)
		setup("ip", "link", "set", veth, "master", netnsBridge, "up")
		in := func(args ...string) {
			t.Helper()
			setup(slices.Concat([]string{"nsenter", "-t", pid, "-n", "ip"}, args)...)
		}
		in("link", "set", "lo", "up")
		in("addr", "add", netnsPrefix+strconv.Itoa(i)+"/24", "dev", "eth0")
		in("link", "set", "eth0", "up")
		// The local table's rule (pref 0) would deliver a packet before any
		// rule could drop it: it goes after the partition's (pref 10).
		in("rule", "add", "pref", "100", "table", "local")
		in("rule", "del", "pref", "0")
	}
	srv, err := s3fake.Start(s3fake.Config{Addr: netnsHub + ":0"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = srv.Close() })

	env := brokerEnv(t)
	common := slices.Concat([]string{"--bucket", srv.Bucket(), "--s3-endpoint", srv.URL(), "--s3-path-style", "--cluster-size", "4",
		"--gossip-timings", "local", "--join", netnsPrefix + "1:7946"}, partitionLease)
	var ps []*proc
	for i, pid := range pids {
		ip := netnsPrefix + strconv.Itoa(i+1)
		args := slices.Concat([]string{"-t", pid, "-n", "--", brokerBin, "serve", "--http-addr", ip + ":8080", "--gossip-addr", ip + ":7946"}, common)
		p := startProc(t, fmt.Sprintf("b%d", i+1), brokerproc.Config{Bin: "nsenter", Args: args, Env: env,
			SysProcAttr: &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}})
		ps = append(ps, p)
	}
	ids := map[*proc]int{}
	for _, p := range ps {
		p.httpAddr = p.waitLog("http listening", 15*time.Second)["addr"].(string)
		ids[p] = p.waitHeld(20 * time.Second).NodeID
	}
	if n := len(slices.Compact(slices.Sorted(maps.Values(ids)))); n != 4 {
		t.Fatalf("node IDs %v: %d distinct, want 4", ids, n)
	}
	idsOf := func(half ...*proc) []string {
		var out []string
		for _, p := range half {
			out = append(out, strconv.Itoa(ids[p]))
		}
		return out
	}
	all := idsOf(ps...)
	left, right := ps[:2], ps[2:]
	start := time.Now()
	waitKnown(t, onePoolWithin, "one pool of 4", ids, map[*proc][]string{ps[0]: all, ps[1]: all, ps[2]: all, ps[3]: all})
	t.Logf("one pool of 4 %v after all held", time.Since(start).Round(time.Millisecond))

	cut := func(add bool) {
		op := "del"
		if add {
			op = "add"
		}
		for _, a := range []int{1, 2} {
			for _, b := range []int{3, 4} {
				for _, r := range [][2]int{{a, b}, {b, a}} { // in r[0]'s namespace, drop what comes from r[1]
					args := []string{"nsenter", "-t", pids[r[0]-1], "-n", "ip", "rule", op, "pref", "10", "from", netnsPrefix + strconv.Itoa(r[1]), "blackhole"}
					if out, err := exec.Command(args[0], args[1:]...).CombinedOutput(); err != nil {
						t.Fatalf("%s: %v: %s", strings.Join(args, " "), err, out)
					}
				}
			}
		}
	}
	cut(true)
	cutAt := time.Now()
	waitKnown(t, splitWithin, "each half to see only its own", ids, map[*proc][]string{
		left[0]: idsOf(left...), left[1]: idsOf(left...), right[0]: idsOf(right...), right[1]: idsOf(right...)})
	t.Logf("halves apart %v after the cut; the cut stands %v more", time.Since(cutAt).Round(time.Millisecond), partitionHold)
	holdApart(t, partitionHold, ids, map[*proc][]string{
		left[0]: idsOf(left...), left[1]: idsOf(left...), right[0]: idsOf(right...), right[1]: idsOf(right...)})

	cut(false)
	healAt := time.Now()
	waitKnown(t, healWithin, fmt.Sprintf("one pool of 4 within %v of the heal", healWithin), ids,
		map[*proc][]string{ps[0]: all, ps[1]: all, ps[2]: all, ps[3]: all})
	t.Logf("one pool of 4 %v after the heal (bound %v)", time.Since(healAt).Round(time.Millisecond), healWithin)
	waitFor(t, 5*time.Second, "a broker's log line of its reconnect to a member gone (what healed the pool)", func() (bool, string) {
		for _, p := range ps {
			if p.findLog("gossip reconnected to a member gone") != nil {
				return true, ""
			}
		}
		return false, "none"
	})
}

// holdApart polls every broker's /status for d and fails the test when a
// broker's knownNodes names a node ID outside half[broker] (the cut crossed),
// or as idStatus does. (A member of a half may briefly miss the other member
// of its half: it suspected it, and the suspect refutes.)
func holdApart(t *testing.T, d time.Duration, ids map[*proc]int, half map[*proc][]string) {
	t.Helper()
	for end := time.Now().Add(d); time.Now().Before(end); time.Sleep(25 * time.Millisecond) {
		for p, h := range half {
			s := idStatus(t, p, ids[p])
			for id := range s.KnownNodes {
				if !slices.Contains(h, id) {
					t.Fatalf("broker %s sees node ID %s across the cut: %v", p.name, id, s.KnownNodes)
				}
			}
		}
	}
}

// idStatus returns p's /status, failing the test at once when p exited, or
// holds no node ID or another than id. A holder whose renewals on a loaded
// machine came late (jeopardy, fenced until one lands) keeps its ID: the
// store is not what this test partitions.
func idStatus(t *testing.T, p *proc, id int) node.StatusResponse {
	t.Helper()
	select {
	case <-p.exited:
		t.Fatalf("broker %s exited %d:\n%s", p.name, p.ExitCode(), p.log())
	default:
	}
	s, err := rawStatus(p)
	if err != nil {
		t.Fatalf("broker %s: /status: %v", p.name, err)
	}
	if !slices.Contains([]string{node.StateHeld, node.StateJeopardy, node.StateFenced}, s.State) || s.NodeID != id {
		t.Fatalf("broker %s: state %s node ID %d, want node ID %d held: %+v", p.name, s.State, s.NodeID, id, s)
	}
	return s
}

// waitKnown waits up to within until each broker holds its node ID and its
// /status knownNodes names exactly want[broker]'s node IDs, failing the test
// at once as idStatus does.
func waitKnown(t *testing.T, within time.Duration, what string, ids map[*proc]int, want map[*proc][]string) {
	t.Helper()
	waitFor(t, within, what, func() (bool, string) {
		ok, views := true, ""
		for p, w := range want {
			s := idStatus(t, p, ids[p])
			views += fmt.Sprintf("%s: %s %v; ", p.name, s.State, s.KnownNodes)
			if s.State != node.StateHeld {
				ok = false
			}
			if got := slices.Sorted(maps.Keys(s.KnownNodes)); !slices.Equal(got, slices.Sorted(slices.Values(w))) {
				ok = false
			}
		}
		return ok, views
	})
}
