package gossip

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nodeid/nodeid/internal/testkit/logbuf"
)

func TestThreeNodesSeeEachOthersIDs(t *testing.T) {
	nodes := cluster(t, names(3)...)
	claims := []struct {
		id int
		v  int64
	}{{0, 1}, {1, 4}, {2, 9}}
	for i, n := range nodes {
		if err := n.SetClaim(claims[i].id, claims[i].v); err != nil {
			t.Fatal(err)
		}
	}
	want := map[int]int64{0: 1, 1: 4, 2: 9}
	for _, n := range nodes {
		eventually(t, n.Name()+" knows every ID", func() bool { return mapsEqual(n.KnownNodes(), want) })
	}
	for _, n := range nodes {
		if !strings.HasPrefix(n.Addr(), "127.0.0.1:") || strings.HasSuffix(n.Addr(), ":0") {
			t.Errorf("%s: Addr = %q, want 127.0.0.1 and the bound port", n.Name(), n.Addr())
		}
	}
	ms := nodes[1].Members()
	if len(ms) != 3 {
		t.Fatalf("Members = %+v, want 3", ms)
	}
	for i, m := range ms {
		if m.Name != nodes[i].Name() || m.Addr != nodes[i].Addr() || m.NodeID != claims[i].id || m.Version != claims[i].v {
			t.Errorf("Members[%d] = %+v, want %s at %s with %d/%d", i, m, nodes[i].Name(), nodes[i].Addr(), claims[i].id, claims[i].v)
		}
	}
}

func TestNoClaimAdvertisesNothing(t *testing.T) {
	nodes := cluster(t, names(2)...)
	if got := nodes[0].KnownNodes(); len(got) != 0 {
		t.Errorf("KnownNodes = %v, want empty", got)
	}
	for _, m := range nodes[0].Members() {
		if m.NodeID != -1 || m.Version != 0 {
			t.Errorf("member %+v advertises an ID", m)
		}
	}
	for _, c := range []claim{{-1, 1}, {MaxNodeID + 1, 1}, {3, -1}} {
		if err := nodes[1].SetClaim(c.nodeID, c.version); err == nil {
			t.Errorf("SetClaim(%d, %d) succeeded", c.nodeID, c.version)
		}
	}
}

func TestKnownNodesKeepsHighestVersion(t *testing.T) {
	nodes := cluster(t, names(3)...)
	a, b, c := nodes[0], nodes[1], nodes[2]
	if err := a.SetClaim(5, 2); err != nil {
		t.Fatal(err)
	}
	if err := b.SetClaim(5, 7); err != nil {
		t.Fatal(err)
	}
	for _, n := range nodes {
		eventually(t, n.Name()+" keeps version 7 of ID 5", func() bool { return mapsEqual(n.KnownNodes(), map[int]int64{5: 7}) })
	}
	if err := b.ClearClaim(); err != nil {
		t.Fatal(err)
	}
	eventually(t, "c falls back to version 2 once b clears its claim", func() bool {
		return mapsEqual(c.KnownNodes(), map[int]int64{5: 2})
	})
}

// conflictRecorder collects OnConflict calls.
type conflictRecorder struct {
	mu    sync.Mutex
	calls []string
}

func (r *conflictRecorder) on(id int, v int64) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.calls = append(r.calls, fmt.Sprintf("%d/%d", id, v))
}

func (r *conflictRecorder) get() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.calls)
}

func TestConflictWhenOwnIDHasHigherVersion(t *testing.T) {
	var rec conflictRecorder
	cfgs := names(3)
	cfgs[0].OnConflict = rec.on
	nodes := cluster(t, cfgs...)
	a, b, c := nodes[0], nodes[1], nodes[2]
	if err := a.SetClaim(3, 2); err != nil {
		t.Fatal(err)
	}
	// Lower and equal versions of our ID, and other IDs, are no conflict.
	if err := c.SetClaim(3, 1); err != nil {
		t.Fatal(err)
	}
	if err := b.SetClaim(4, 8); err != nil {
		t.Fatal(err)
	}
	eventually(t, "a sees b and c", func() bool { return mapsEqual(a.KnownNodes(), map[int]int64{3: 2, 4: 8}) })
	if err := b.SetClaim(3, 5); err != nil {
		t.Fatal(err)
	}
	eventually(t, "a reports 3/5", func() bool { return slices.Contains(rec.get(), "3/5") })
	if err := c.SetClaim(3, 6); err != nil {
		t.Fatal(err)
	}
	eventually(t, "a reports 3/6", func() bool { return slices.Contains(rec.get(), "3/6") })
	if got := rec.get(); !slices.Equal(got, []string{"3/5", "3/6"}) {
		t.Errorf("conflicts = %v, want [3/5 3/6] (each once, in order)", got)
	}
}

func TestConflictFoundAtSetClaim(t *testing.T) {
	var rec conflictRecorder
	cfgs := names(2)
	cfgs[0].OnConflict = rec.on
	nodes := cluster(t, cfgs...)
	if err := nodes[1].SetClaim(4, 9); err != nil {
		t.Fatal(err)
	}
	eventually(t, "a sees b's claim", func() bool { return nodes[0].KnownNodes()[4] == 9 })
	if err := nodes[0].SetClaim(4, 3); err != nil {
		t.Fatal(err)
	}
	eventually(t, "a reports 4/9", func() bool { return slices.Equal(rec.get(), []string{"4/9"}) })
}

func TestLeftNodeDisappears(t *testing.T) {
	nodes := cluster(t, names(3)...)
	for i, n := range nodes {
		if err := n.SetClaim(i, 1); err != nil {
			t.Fatal(err)
		}
	}
	a, c := nodes[0], nodes[2]
	eventually(t, "a knows three IDs", func() bool { return len(a.KnownNodes()) == 3 })
	if !a.TaskLive(a.Name()) || !a.TaskLive(c.Name()) || a.TaskLive("nobody") {
		t.Errorf("TaskLive before c leaves: self %v, c %v, a stranger %v", a.TaskLive(a.Name()), a.TaskLive(c.Name()), a.TaskLive("nobody"))
	}
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	eventually(t, "c's ID leaves a's view", func() bool {
		return mapsEqual(a.KnownNodes(), map[int]int64{0: 1, 1: 1}) && len(a.Members()) == 2
	})
	if a.TaskLive(c.Name()) || c.TaskLive(c.Name()) {
		t.Errorf("TaskLive of the closed c: in a's view %v, in its own %v", a.TaskLive(c.Name()), c.TaskLive(c.Name()))
	}

	// A closed node stays closed.
	if err := c.Close(); err != nil {
		t.Errorf("second Close = %v", err)
	}
	if got := c.KnownNodes(); len(got) != 0 {
		t.Errorf("KnownNodes after Close = %v, want empty", got)
	}
	if err := c.SetClaim(2, 2); !errors.Is(err, ErrClosed) {
		t.Errorf("SetClaim after Close = %v, want ErrClosed", err)
	}
	if err := c.ClearClaim(); !errors.Is(err, ErrClosed) {
		t.Errorf("ClearClaim after Close = %v, want ErrClosed", err)
	}
	if _, err := c.Join([]string{a.Addr()}); !errors.Is(err, ErrClosed) {
		t.Errorf("Join after Close = %v, want ErrClosed", err)
	}
}

func TestJoinAtStart(t *testing.T) {
	a := start(t, testConfig("a"))
	cfg := testConfig("b")
	cfg.Join = []string{a.Addr()}
	b := start(t, cfg)
	eventually(t, "a sees b", func() bool { return len(a.Members()) == 2 && len(b.Members()) == 2 })

	// Nobody to join is not fatal: gossip is advisory.
	cfg = testConfig("c")
	cfg.Join = []string{"127.0.0.1:1"}
	c := start(t, cfg)
	if got := len(c.Members()); got != 1 {
		t.Errorf("c has %d members, want 1", got)
	}
}

func TestEncryption(t *testing.T) {
	key := []byte("0123456789abcdef")
	cfgs := names(2)
	for i := range cfgs {
		cfgs[i].SecretKey = key
	}
	nodes := cluster(t, cfgs...)
	if err := nodes[0].SetClaim(1, 1); err != nil {
		t.Fatal(err)
	}
	eventually(t, "b sees a's claim through encrypted gossip", func() bool { return nodes[1].KnownNodes()[1] == 1 })

	wrong := testConfig("wrong-key")
	wrong.SecretKey = []byte("fedcba9876543210fedcba98")
	none := testConfig("no-key")
	for _, cfg := range []Config{wrong, none} {
		n := start(t, cfg)
		joined, err := n.Join([]string{nodes[0].Addr()})
		if err == nil || joined != 0 {
			t.Errorf("%s joined %d members (err %v), want an error", cfg.Name, joined, err)
		}
		if got := len(n.Members()); got != 1 {
			t.Errorf("%s has %d members, want 1", cfg.Name, got)
		}
	}
	if got := len(nodes[0].Members()); got != 2 {
		t.Errorf("a has %d members after the refused joins, want 2", got)
	}
}

func TestCloseIsIdempotentAndConcurrent(t *testing.T) {
	n, err := Start(testConfig("solo"))
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			if err := n.Close(); err != nil {
				t.Errorf("Close: %v", err)
			}
		})
	}
	wg.Wait()
	if !waitClosed(n, time.Second) {
		t.Error("goroutines still running after Close")
	}
}

// waitClosed reports whether n's goroutines have stopped within d.
func waitClosed(n *Node, d time.Duration) bool {
	done := make(chan struct{})
	go func() { n.wg.Wait(); close(done) }()
	select {
	case <-done:
		return true
	case <-time.After(d):
		return false
	}
}

// crash stops n the way a killed task stops: no leave message.
func crash(n *Node) {
	n.once.Do(func() {
		n.goMu.Lock()
		n.closed.Store(true)
		close(n.quit)
		n.stop()
		n.goMu.Unlock()
		_ = n.ml.Shutdown()
		n.wg.Wait()
	})
}

func TestCrashedNodeDisappears(t *testing.T) {
	nodes := cluster(t, names(3)...)
	for i, n := range nodes {
		if err := n.SetClaim(i, 2); err != nil {
			t.Fatal(err)
		}
	}
	a, c := nodes[0], nodes[2]
	eventually(t, "a knows three IDs", func() bool { return len(a.KnownNodes()) == 3 })
	crash(c)
	eventually(t, "failure detection drops c's ID", func() bool {
		return mapsEqual(a.KnownNodes(), map[int]int64{0: 2, 1: 2}) && len(a.Members()) == 2
	})
	// The readiness gate does not wait for a dead member.
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := a.WaitSeen(ctx, 0, 2, 0); err != nil {
		t.Errorf("WaitSeen after c died = %v", err)
	}
}

// TestCloseAfterLeaveTimeout: a leave that is not broadcast within
// LeaveTimeout (on a loaded machine, the gossip loop may not get a core in
// time) is logged, and Close still shuts down and returns nil. Neither member
// gossips or probes (hour-long intervals), so nothing can carry a's leave
// message before its 1 ms timeout.
func TestCloseAfterLeaveTimeout(t *testing.T) {
	quiet := func(name string) Config {
		c := testConfig(name)
		c.GossipInterval, c.ProbeInterval, c.PushPullInterval = time.Hour, time.Hour, time.Hour
		return c
	}
	b := start(t, quiet("b"))
	var log logbuf.Buffer
	cfg := quiet("a")
	cfg.LeaveTimeout = time.Millisecond
	cfg.Logger = slog.New(slog.NewTextHandler(&log, &slog.HandlerOptions{Level: slog.LevelWarn}))
	a, err := Start(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := a.Join([]string{b.Addr()}); err != nil {
		t.Fatal(err)
	}
	if err := a.Close(); err != nil {
		t.Fatalf("Close after a leave timeout: %v, want nil", err)
	}
	if !strings.Contains(log.String(), "leave not broadcast in time") {
		t.Errorf("the leave timeout was not logged; log:\n%s", log.String())
	}
}
