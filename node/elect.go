package node

import (
	"context"
	"errors"
	"net/http"
	"sync"
	"sync/atomic"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/nodeid/nodeid/election"
	"github.com/nodeid/nodeid/lease"
	"github.com/nodeid/nodeid/nodeid"
)

// LeaderResponse is the body of GET /leader (and the Leader of /status).
type LeaderResponse struct {
	// Name is the election's name (Config.Elect).
	Name string `json:"name"`
	// Leader is the task identity of the live leader.
	Leader string `json:"leader"`
	// Value is the value the leader campaigned with (Config.ElectValue);
	// absent when it has none.
	Value string `json:"value,omitempty"`
	// Term is the leader's term (its fencing token).
	Term int64 `json:"term"`
	// Self reports whether this node is the leader and its leadership valid.
	Self bool `json:"self"`
}

// elector campaigns for one election beside the node ID (Config.Elect): it
// campaigns again after a loss, and resigns on Close.
type elector struct {
	name  string
	value string
	task  string
	pc    nodeid.Config       // the Elections' configuration, without GossipAddr
	e     *election.Elections // for reads (/leader); campaigns use campaigner's
	cur   atomic.Pointer[election.Leadership]

	cancel context.CancelFunc
	done   chan struct{}
	once   sync.Once
}

// newElector returns nil when cfg.Elect is empty. With gossip, the
// campaign sees which tasks live through it (tasks): in read mode a leader
// gossip finds dead is challenged at once.
func newElector(store lease.Store, cfg Config, tasks nodeid.Tasks) (*elector, error) {
	if cfg.Elect == "" {
		return nil, nil
	}
	if err := election.CheckName(cfg.Elect); err != nil {
		return nil, err
	}
	pc := cfg.Provider
	if cfg.Gossip != nil && pc.Tasks == nil {
		pc.Tasks = tasks
	}
	e, err := election.New(store, pc)
	if err != nil {
		return nil, err
	}
	return &elector{name: cfg.Elect, value: cfg.ElectValue, task: cfg.Provider.TaskID, pc: pc, e: e, done: make(chan struct{})}, nil
}

// campaigner returns the Elections to campaign with. Once gossip has
// started, its leadership records publish this node's gossip address
// (nodeid.Config.GossipAddr), as the node ID's record does: in read mode a
// candidate that has not yet met this leader in gossip joins it there
// (gossipTasks is a nodeid.GossipJoiner) instead of challenging a live leader.
func (el *elector) campaigner(n *Node) *election.Elections {
	g := n.gossip.Load()
	if g == nil {
		return el.e
	}
	pc := el.pc
	pc.GossipAddr = g.Addr()
	e, err := election.New(n.store, pc)
	if err != nil { // the node ID's provider took the same address
		n.log.Warn("campaigning without publishing the gossip address", "election", el.name, "err", err)
		return el.e
	}
	return e
}

// gossipTasks is the node's gossip view of live tasks (nodeid.TasksHints); every
// task counts as live until gossip started, so that nothing is challenged
// for want of a view.
type gossipTasks struct{ n *Node }

var (
	_ nodeid.TasksHints   = gossipTasks{}
	_ nodeid.GossipJoiner = gossipTasks{}
)

// TaskLive implements nodeid.Tasks.
func (t gossipTasks) TaskLive(taskID string) bool {
	g := t.n.gossip.Load()
	return g == nil || g.TaskLive(taskID)
}

// JoinGossip implements nodeid.GossipJoiner: gossip's JoinGossip, so that a
// campaign in read mode meets a leader it suspects before it challenges it;
// errGossipNotStarted before gossip started.
func (t gossipTasks) JoinGossip(ctx context.Context, addr string) error {
	g := t.n.gossip.Load()
	if g == nil {
		return errGossipNotStarted
	}
	return g.JoinGossip(ctx, addr)
}

// errGossipNotStarted is JoinGossip's error before gossip started.
var errGossipNotStarted = errors.New("node: gossip not started")

// Freed implements nodeid.TasksHints: gossip's Freed, which closes when a
// member that held a node ID leaves or is found dead (a leader holds one);
// nil (never closed) before gossip started.
func (t gossipTasks) Freed() <-chan struct{} {
	if g := t.n.gossip.Load(); g != nil {
		return g.Freed()
	}
	return nil
}

// start campaigns in the background until stop.
func (el *elector) start(n *Node) {
	ctx, cancel := context.WithCancel(context.Background())
	el.cancel = cancel
	e := el.campaigner(n)
	go func() {
		defer close(el.done)
		for ctx.Err() == nil {
			l, err := e.Campaign(ctx, el.name, el.value)
			if err != nil {
				if ctx.Err() == nil {
					n.log.Warn("campaign failed, campaigning again", "election", el.name, "err", err)
					sleepCtx(ctx, n.cfg.Provider.AcquireBackoff)
				}
				continue
			}
			el.cur.Store(l)
			n.log.Info("elected leader", "election", el.name, "term", l.Term())
			select {
			case <-l.Done():
				n.log.Warn("leadership lost", "election", el.name, "term", l.Term(), "err", l.Err())
			case <-ctx.Done():
			}
		}
	}()
}

// stop ends the campaign and resigns, so that another node is elected at once.
func (el *elector) stop(ctx context.Context) error {
	var err error
	el.once.Do(func() {
		if el.cancel == nil {
			return
		}
		el.cancel()
		<-el.done
		if l := el.cur.Load(); l != nil {
			err = l.Resign(ctx)
		}
	})
	return err
}

// self returns the valid leadership of this node, or nil.
func (el *elector) self() *election.Leadership {
	if l := el.cur.Load(); l != nil && l.Valid() {
		return l
	}
	return nil
}

// errNoLeader is the reason of a 503 from /leader.
var errNoLeader = errors.New("no live leader")

// leader answers who leads: this node from its own fence, others from one
// read of the election's lease object.
func (el *elector) leader(ctx context.Context) (LeaderResponse, error) {
	if l := el.self(); l != nil {
		return LeaderResponse{Name: el.name, Leader: el.task, Value: el.value, Term: l.Term(), Self: true}, nil
	}
	info, err := el.e.Leader(ctx, el.name)
	if err != nil {
		return LeaderResponse{Name: el.name}, err
	}
	if !info.Live || info.Leader == el.task { // our own lease, no longer valid here: fenced
		return LeaderResponse{Name: el.name}, errNoLeader
	}
	return LeaderResponse{Name: el.name, Leader: info.Leader, Value: info.Value, Term: info.Term}, nil
}

// handleLeader serves GET /leader: 404 when the node campaigns for nothing,
// 503 with the reason while no leader is known.
func (n *Node) handleLeader(w http.ResponseWriter, r *http.Request) {
	if n.elector == nil {
		writeJSON(w, http.StatusNotFound, map[string]string{"error": "this node takes part in no election (--elect)"})
		return
	}
	resp, err := n.elector.leader(r.Context())
	if err != nil {
		writeJSON(w, http.StatusServiceUnavailable, map[string]any{"name": resp.Name, "error": err.Error()})
		return
	}
	writeJSON(w, http.StatusOK, resp)
}

// electionCollector exports nodeid_leader{name} (1 while this node leads)
// and nodeid_leader_term{name} (the term it holds or last held).
type electionCollector struct{ n *Node }

var (
	leaderDesc     = prometheus.NewDesc(namespace+"_leader", "1 while this node is the valid leader of the election, else 0.", []string{"name"}, nil)
	leaderTermDesc = prometheus.NewDesc(namespace+"_leader_term", "The term (fencing token) this node holds or last held in the election; 0 if never elected.", []string{"name"}, nil)
)

func (c electionCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- leaderDesc
	ch <- leaderTermDesc
}

func (c electionCollector) Collect(ch chan<- prometheus.Metric) {
	el := c.n.elector
	if el == nil {
		return
	}
	self, term := 0.0, 0.0
	if l := el.cur.Load(); l != nil {
		term = float64(l.Term())
		if l.Valid() {
			self = 1
		}
	}
	ch <- prometheus.MustNewConstMetric(leaderDesc, prometheus.GaugeValue, self, el.name)
	ch <- prometheus.MustNewConstMetric(leaderTermDesc, prometheus.GaugeValue, term, el.name)
}
