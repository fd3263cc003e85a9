package nodeid_test

import (
	"slices"
	"strings"
	"time"

	"github.com/nodeid/nodeid/nodeid"
)

// simGossip is the gossip the tasks share, as package gossip gives it to a
// node: each member's claim as it last advertised it, seen by the others a
// moment later (50 ms to 1 s), a member that crashed seen dead a while later
// (1 to 5 s), a member that stopped gone once it left. One view serves every
// observer (real views differ by milliseconds). It only gives hints
// (nodeid.PeerHints), and a node fences when it shows the node's ID with a
// higher version (Claim.ObserveVersion, as node.Node does).
type simGossip struct {
	s       *sim
	members map[*simTask]gossipEntry // as the others see them now
	seq     map[*simTask]int         // each member's last change applied
	bad     bool                     // a misbehaving member advertises an impossible node ID
	freed   chan struct{}            // closed when a node ID leaves the view
}

// gossipEntry is one member's claim as advertised.
type gossipEntry struct {
	id      int
	version int64
	held    bool
}

// badNodeID is what the misbehaving member advertises: above any layout's
// node bits, so no lease record can carry it.
const badNodeID = 1 << 22

func newSimGossip(s *sim) *simGossip {
	return &simGossip{s: s, members: map[*simTask]gossipEntry{}, seq: map[*simTask]int{}, freed: make(chan struct{})}
}

// advertise makes e t's claim as the others see it, a moment from now
// (leave: t left gossip, after releasing).
func (g *simGossip) advertise(t *simTask, e gossipEntry, leave bool) {
	g.change(t, e, leave, g.s.between(50*time.Millisecond, time.Second))
}

// dead makes t, which crashed, drop out of the view once it is found dead.
func (g *simGossip) dead(t *simTask) {
	g.change(t, gossipEntry{}, true, g.s.between(time.Second, 5*time.Second))
}

// change applies t's change after lag, unless a later change of t was
// applied first.
func (g *simGossip) change(t *simTask, e gossipEntry, leave bool, lag time.Duration) {
	t.gossipSeq++
	seq := t.gossipSeq
	g.s.schedule(g.s.now+lag, nil, false, func() {
		if g.seq[t] >= seq {
			return
		}
		g.seq[t] = seq
		old, was := g.members[t]
		if leave {
			delete(g.members, t)
		} else {
			g.members[t] = e
		}
		if was && old.held && (leave || !e.held || e.id != old.id) {
			g.fire()
		}
		g.conflicts()
	})
}

// fire closes the freed channel: a node ID left the view.
func (g *simGossip) fire() {
	close(g.freed)
	g.freed = make(chan struct{})
}

// conflicts fences every claim the view shows with a higher version, as
// node.Node's gossip callback does.
func (g *simGossip) conflicts() {
	for _, e := range g.members {
		if !e.held {
			continue
		}
		for _, t := range g.s.tasks {
			if c := t.claim; c != nil && !t.crashed && c.NodeID() == e.id && e.version > c.Version() {
				c.ObserveVersion(e.version)
			}
		}
	}
}

// setBad starts or ends the misbehaving member's advertisement.
func (g *simGossip) setBad(bad bool) {
	g.bad = bad
	if bad {
		g.s.counts["bad peer"]++
	}
}

// hints returns t's view of gossip.
func (g *simGossip) hints(t *simTask) nodeid.PeerHints { return simHints{g, t} }

// simHints is one task's gossip, as *gossip.Node gives it.
type simHints struct {
	g *simGossip
	t *simTask
}

// KnownNodes is the highest version per node ID in the view, this task's own
// claim included at once.
func (h simHints) KnownNodes() map[int]int64 {
	out := map[int]int64{}
	add := func(id int, v int64) {
		if old, ok := out[id]; !ok || v > old {
			out[id] = v
		}
	}
	for m, e := range h.g.members {
		if e.held && m != h.t {
			add(e.id, e.version)
		}
	}
	if c := h.t.claim; c != nil && !isDone(c) {
		add(c.NodeID(), c.Version())
	}
	if h.g.bad {
		add(badNodeID, 1)
	}
	return out
}

func (h simHints) Freed() <-chan struct{} { return h.g.freed }

// Rank is this task's place among the members holding no node ID, by name.
func (h simHints) Rank() (rank, of int) {
	var waiting []string
	for m, e := range h.g.members {
		if !e.held && m != h.t {
			waiting = append(waiting, m.name)
		}
	}
	if c := h.t.claim; c == nil || isDone(c) {
		waiting = append(waiting, h.t.name)
	}
	slices.SortFunc(waiting, strings.Compare)
	return max(slices.Index(waiting, h.t.name), 0), len(waiting)
}
