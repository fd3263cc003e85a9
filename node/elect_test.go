package node

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nodeid/nodeid/election"
	"github.com/nodeid/nodeid/gossip"
	"github.com/nodeid/nodeid/lease"
	"github.com/nodeid/nodeid/lease/storetest"
	"github.com/nodeid/nodeid/nodeid"
)

// leaderOf serves GET /leader on n.
func leaderOf(t *testing.T, n *Node) (int, LeaderResponse) {
	t.Helper()
	code, body := get(n.Handler(), "/leader")
	var r LeaderResponse
	if code == http.StatusOK {
		if err := json.Unmarshal([]byte(body), &r); err != nil {
			t.Fatalf("/leader body %q: %v", body, err)
		}
	}
	return code, r
}

// waitSelf waits until one of nodes leads and returns it.
func waitSelf(t *testing.T, ctx context.Context, nodes ...*Node) *Node {
	t.Helper()
	for {
		for _, n := range nodes {
			if n.elector.self() != nil {
				return n
			}
		}
		select {
		case <-ctx.Done():
			t.Fatal("no node was elected")
		case <-time.After(10 * time.Millisecond):
		}
	}
}

// startLeader starts a node of task-a on a cluster of size that campaigns
// for election "jobs" on store, and waits until it leads.
func startLeader(t *testing.T, ctx context.Context, store lease.Store, size int) *Node {
	t.Helper()
	cfg := testConfig("task-a", size)
	cfg.Elect = "jobs"
	n, err := New(store, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := n.Start(ctx); err != nil {
		t.Fatal(err)
	}
	waitSelf(t, ctx, n)
	return n
}

// Two nodes campaign for one election: exactly one says self; closing it
// hands over at once to the other, with a higher term.
func TestElectLeaderAndHandOver(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	store := storetest.NewMemStore()
	var nodes []*Node
	for _, task := range []string{"task-a", "task-b"} {
		cfg := testConfig(task, 4)
		cfg.Elect, cfg.ElectValue = "jobs", "http://"+task+":8080"
		n, err := New(store, cfg)
		if err != nil {
			t.Fatal(err)
		}
		if err := n.Start(ctx); err != nil {
			t.Fatal(err)
		}
		defer n.Close(closeCtx(t))
		nodes = append(nodes, n)
	}
	first := waitSelf(t, ctx, nodes...)
	other := nodes[0]
	if other == first {
		other = nodes[1]
	}
	code, lf := leaderOf(t, first)
	if code != http.StatusOK || !lf.Self || lf.Term != 1 || lf.Name != "jobs" || lf.Leader != first.cfg.Provider.TaskID || lf.Value != first.cfg.ElectValue {
		t.Fatalf("leader's /leader = %d %+v", code, lf)
	}
	code, lo := leaderOf(t, other)
	if code != http.StatusOK || lo.Self || lo.Term != 1 || lo.Leader != first.cfg.Provider.TaskID || lo.Value != first.cfg.ElectValue {
		t.Fatalf("follower's /leader = %d %+v", code, lo)
	}
	if s := first.Status(); s.Leader == nil || !s.Leader.Self {
		t.Fatalf("leader's /status has no leadership: %+v", s)
	}
	_, metrics := get(first.Handler(), "/metrics")
	if !strings.Contains(metrics, `nodeid_leader{name="jobs"} 1`) || !strings.Contains(metrics, `nodeid_leader_term{name="jobs"} 1`) {
		t.Fatalf("leader's metrics lack nodeid_leader: %s", metrics)
	}
	if err := first.Close(ctx); err != nil {
		t.Fatal(err)
	}
	if waitSelf(t, ctx, other) != other {
		t.Fatal("unreachable")
	}
	code, lo = leaderOf(t, other)
	if code != http.StatusOK || !lo.Self || lo.Term != 2 || lo.Value != other.cfg.ElectValue {
		t.Fatalf("successor's /leader = %d %+v, want self with term 2", code, lo)
	}
}

func TestLeaderWithoutElect(t *testing.T) {
	n, err := New(storetest.NewMemStore(), testConfig("task-a", 1))
	if err != nil {
		t.Fatal(err)
	}
	if code, _ := get(n.Handler(), "/leader"); code != http.StatusNotFound {
		t.Fatalf("/leader without Elect = %d, want 404", code)
	}
}

// TestElectValueValidated: a value without an election, or too long for the
// record, is refused by New, before any campaign.
func TestElectValueValidated(t *testing.T) {
	for name, edit := range map[string]func(*Config){
		"without Elect": func(c *Config) { c.ElectValue = "http://a:8080" },
		"too long":      func(c *Config) { c.Elect, c.ElectValue = "jobs", strings.Repeat("v", lease.MaxValueLen+1) },
	} {
		t.Run(name, func(t *testing.T) {
			cfg := testConfig("task-a", 1)
			edit(&cfg)
			_, err := New(storetest.NewMemStore(), cfg)
			if err == nil || !strings.Contains(err.Error(), "Node.ElectValue") {
				t.Fatalf("New = %v, want an error naming Node.ElectValue", err)
			}
		})
	}
}

// TestCloseReleasesWhileTheResignHangs: a leader whose election writes hang
// (the store answers nothing for the election's object) still releases its
// node ID within Close's context: the resignation runs beside the release,
// not before it, and is left to expire.
func TestCloseReleasesWhileTheResignHangs(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	mem := storetest.NewMemStore()
	store := storetest.NewFaultStore(mem)
	n := startLeader(t, ctx, store, 4)
	id := n.Status().NodeID
	var electionWrites atomic.Int64
	store.SetInjector(func(op storetest.Op, key string) storetest.Fault {
		if strings.HasPrefix(key, "elections/") && (op == storetest.OpUpdate || op == storetest.OpCreate) {
			electionWrites.Add(1)
			return storetest.Fault{Delay: time.Hour} // until Close's context ends
		}
		return storetest.Fault{}
	})
	cctx, ccancel := context.WithTimeout(ctx, 2*time.Second)
	defer ccancel()
	if err := n.Close(cctx); err != nil {
		t.Fatalf("Close: %v; want the release confirmed although the resignation hangs", err)
	}
	if electionWrites.Load() == 0 {
		t.Fatal("the resignation wrote nothing: the test did not make it hang")
	}
	body, _, err := mem.Get(ctx, lease.RecordKey(id))
	if err != nil {
		t.Fatal(err)
	}
	if r, err := lease.DecodeRecord(body, id); err != nil || r.Holder != "" {
		t.Fatalf("node %d after Close: %+v %v; want it free", id, r, err)
	}
}

// hungResign is a store whose election releases (a free record written under
// elections/), once armed, answer nothing until their context ends; it
// counts them.
type hungResign struct {
	lease.Store
	armed  atomic.Bool
	writes atomic.Int64
}

func (s *hungResign) Update(ctx context.Context, key string, body []byte, etag string) (lease.Meta, error) {
	var rec struct {
		Holder string `json:"holder"`
	}
	if !s.armed.Load() || !strings.HasPrefix(key, "elections/") || json.Unmarshal(body, &rec) != nil || rec.Holder != "" {
		return s.Store.Update(ctx, key, body, etag)
	}
	s.writes.Add(1)
	<-ctx.Done()
	return lease.Meta{}, &lease.UnknownOutcomeError{Op: "update", Key: key, Err: ctx.Err()}
}

// TestLostNodeResignsWithinOneAttempt: a leader that lost its node ID ends
// at once. Its resignation, which the store does not answer, gets one store
// attempt (StoreTimeout), not all of Close's context: one write, where the
// release's retries would write again and again until the context ended.
func TestLostNodeResignsWithinOneAttempt(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	mem := storetest.NewMemStore()
	store := &hungResign{Store: mem}
	n := startLeader(t, ctx, store, 1)
	store.armed.Store(true)
	steal(t, mem, 0)
	select {
	case <-n.Done():
	case <-ctx.Done():
		t.Fatal("the node did not notice the loss")
	}
	if err := n.Close(ctx); !errors.Is(err, nodeid.ErrLeaseLost) {
		t.Fatalf("Close after the loss: %v, want ErrLeaseLost", err)
	}
	if got := store.writes.Load(); got != 1 {
		t.Fatalf("the resignation wrote %d times; want one attempt", got)
	}
}

// TestLeaderRecordPublishesGossip: with gossip, the leadership record
// publishes the leader's gossip address, as its node ID's record does, so
// that a candidate in read mode that has not met the leader in gossip yet
// joins it there instead of challenging it; the campaign's Tasks can join.
func TestLeaderRecordPublishesGossip(t *testing.T) {
	store := storetest.NewMemStore()
	c := testConfig("task-a", 2)
	c.Elect = "jobs"
	gc := gossip.DefaultLocalConfig()
	c.Gossip = &gc
	n, err := New(store, c)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := n.Start(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = n.Close(closeCtx(t)) })
	waitSelf(t, ctx, n)
	addr := n.gossip.Load().Addr()
	if rec := readRecord(t, lease.Scope(store, election.Dir+"jobs/"), 0); rec.Gossip != addr {
		t.Errorf("the leadership record publishes gossip %q, want %q", rec.Gossip, addr)
	}
	other := gossipNode(t, "task-b", 2, storetest.NewMemStore(), gossip.DefaultLocalConfig())
	var j nodeid.GossipJoiner = gossipTasks{other}
	if err := j.JoinGossip(ctx, addr); err != nil {
		t.Fatalf("JoinGossip(%s): %v", addr, err)
	}
	if !other.gossip.Load().TaskLive("task-a") {
		t.Errorf("after JoinGossip, task-b's gossip does not show task-a live: %v", other.gossip.Load().Members())
	}
}
