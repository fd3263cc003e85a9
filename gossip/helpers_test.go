package gossip

import (
	"fmt"
	"log/slog"
	"testing"
	"time"
)

// testConfig is DefaultLocalConfig with timings short enough for quick tests.
func testConfig(name string) Config {
	c := DefaultLocalConfig()
	c.Name = name
	c.GossipInterval = 20 * time.Millisecond
	c.ProbeInterval = 200 * time.Millisecond
	c.ProbeTimeout = 100 * time.Millisecond
	c.PushPullInterval = 2 * time.Second
	c.TCPTimeout = time.Second
	c.UpdateTimeout = 500 * time.Millisecond
	// Leave returns as soon as the leave broadcast is sent; on a loaded
	// machine 500 ms was seen to pass before the gossip loop got a core, which
	// Close logs and does not return (TestCloseAfterLeaveTimeout).
	c.LeaveTimeout = 500 * time.Millisecond
	c.QueryInterval = 20 * time.Millisecond
	c.RejoinMin = 20 * time.Millisecond
	c.RejoinMax = 200 * time.Millisecond
	return c
}

// start starts a Node with cfg and closes it when the test ends.
func start(t *testing.T, cfg Config) *Node {
	t.Helper()
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.NewTextHandler(t.Output(), &slog.HandlerOptions{Level: slog.LevelWarn}))
	}
	n, err := Start(cfg)
	if err != nil {
		t.Fatalf("Start(%s): %v", cfg.Name, err)
	}
	t.Cleanup(func() {
		if err := n.Close(); err != nil {
			t.Errorf("Close(%s): %v", cfg.Name, err)
		}
	})
	return n
}

// cluster starts len(cfgs) nodes, joins each to the first, and waits until
// every node sees all of them.
func cluster(t *testing.T, cfgs ...Config) []*Node {
	t.Helper()
	nodes := make([]*Node, len(cfgs))
	for i, c := range cfgs {
		nodes[i] = start(t, c)
		if i > 0 {
			if _, err := nodes[i].Join([]string{nodes[0].Addr()}); err != nil {
				t.Fatalf("%s joins %s: %v", c.Name, nodes[0].Addr(), err)
			}
		}
	}
	for _, n := range nodes {
		eventually(t, fmt.Sprintf("%s sees %d members", n.Name(), len(nodes)), func() bool {
			return len(n.Members()) == len(nodes)
		})
	}
	return nodes
}

// names returns test configs named a, b, c...
func names(k int) []Config {
	out := make([]Config, k)
	for i := range out {
		out[i] = testConfig(string(rune('a' + i)))
	}
	return out
}

// eventually polls cond until it holds, failing the test after 10 s.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting until %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// mapsEqual reports whether two KnownNodes maps are equal.
func mapsEqual(a, b map[int]int64) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if w, ok := b[k]; !ok || w != v {
			return false
		}
	}
	return true
}
