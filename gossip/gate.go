package gossip

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"time"

	"github.com/hashicorp/memberlist"
)

// The readiness gate's protocol, and why it cannot open early, is described
// in the package doc. A query is msgQuery followed by the JSON of query; an
// answer is msgAnswer followed by the JSON of answer. Both are single UDP
// packets.

// Message kinds: the first byte of a user message.
const (
	msgQuery  byte = 'q'
	msgAnswer byte = 'a'
)

// query asks a member for the version of NodeID it sees.
type query struct {
	From   string `json:"from"`
	NodeID int    `json:"nodeId"`
}

// answer reports the highest version of NodeID that From sees (-1: none).
type answer struct {
	From    string `json:"from"`
	NodeID  int    `json:"nodeId"`
	Version int64  `json:"version"`
}

// encodeMsg returns kind followed by v as JSON.
func encodeMsg(kind byte, v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err) // strings and integers always marshal
	}
	return append([]byte{kind}, b...)
}

// waiter is one WaitSeen in progress.
type waiter struct {
	nodeID int
	heard  map[string]int64 // member name -> highest version it reported
	wake   chan struct{}    // capacity 1: an answer arrived
}

// waiters is the set of WaitSeen calls in progress.
type waiters struct {
	mu  sync.Mutex
	set map[*waiter]struct{}
}

// serve handles gate messages until Close: it answers queries and hands
// answers to the waiters.
func (n *Node) serve() {
	defer n.wg.Done()
	for {
		select {
		case <-n.quit:
			return
		case b := <-n.inbox:
			n.handle(b)
		}
	}
}

// handle handles one message; malformed ones are dropped.
func (n *Node) handle(b []byte) {
	switch b[0] {
	case msgQuery:
		var q query
		if json.Unmarshal(b[1:], &q) != nil || q.NodeID < 0 {
			n.log.Debug("gossip: dropped a malformed query")
			return
		}
		a := answer{From: n.cfg.Name, NodeID: q.NodeID, Version: -1}
		if v, ok := n.KnownNodes()[q.NodeID]; ok {
			a.Version = v
		}
		p, ok := n.view.get(q.From)
		if !ok || q.From == n.cfg.Name {
			return // the asker is not a live member here: no answer
		}
		n.send(q.From, p.addr, encodeMsg(msgAnswer, a))
	case msgAnswer:
		var a answer
		if json.Unmarshal(b[1:], &a) != nil {
			n.log.Debug("gossip: dropped a malformed answer")
			return
		}
		n.gates.mu.Lock()
		defer n.gates.mu.Unlock()
		for w := range n.gates.set {
			if w.nodeID != a.NodeID {
				continue
			}
			if v, ok := w.heard[a.From]; !ok || a.Version > v {
				w.heard[a.From] = a.Version
			}
			select {
			case w.wake <- struct{}{}:
			default:
			}
		}
	default:
		n.log.Debug("gossip: dropped a message of unknown kind", "kind", b[0])
	}
}

// WaitSeen blocks until enough other live members report that their gossip
// shows nodeID at version or higher: minPeers of them, or all of them when
// minPeers <= 0 or more than are live. With no other live member it returns
// nil at once. It returns an error wrapping ErrNotSeen and ctx.Err() when ctx
// ends first, and ErrClosed when the Node closes.
//
// Call it after SetClaim(nodeID, version), typically with a deadline, to hold
// readiness after taking over an expired lease (see StartGate). The set of
// live members is re-read on every round: a member that dies or leaves stops
// counting, one that joins starts counting.
func (n *Node) WaitSeen(ctx context.Context, nodeID int, version int64, minPeers int) error {
	if nodeID < 0 || version < 0 {
		return fmt.Errorf("gossip: WaitSeen(%d, %d): node ID and version must not be negative", nodeID, version)
	}
	w := &waiter{nodeID: nodeID, heard: map[string]int64{}, wake: make(chan struct{}, 1)}
	n.gates.mu.Lock()
	n.gates.set[w] = struct{}{}
	n.gates.mu.Unlock()
	defer func() {
		n.gates.mu.Lock()
		delete(n.gates.set, w)
		n.gates.mu.Unlock()
	}()
	tick := time.NewTicker(n.cfg.QueryInterval)
	defer tick.Stop()
	ask := true
	q := encodeMsg(msgQuery, query{From: n.cfg.Name, NodeID: nodeID})
	for {
		if n.closed.Load() {
			return ErrClosed
		}
		var pending []memberlist.Address
		seen, others := 0, 0
		n.gates.mu.Lock()
		n.view.each(func(name string, p peer) {
			if name == n.cfg.Name {
				return
			}
			others++
			if v, ok := w.heard[name]; ok && v >= version {
				seen++
			} else {
				pending = append(pending, memberlist.Address{Addr: p.addr, Name: name})
			}
		})
		n.gates.mu.Unlock()
		need := minPeers
		if need <= 0 || need > others {
			need = others
		}
		if seen >= need {
			n.log.Debug("gossip: peers see the version", "nodeId", nodeID, "version", version, "seen", seen, "live", others)
			return nil
		}
		if ask {
			for _, a := range pending {
				n.send(a.Name, a.Addr, q)
			}
			ask = false
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%w: node %d version %d: %d of %d needed (%d live peers): %w",
				ErrNotSeen, nodeID, version, seen, need, others, ctx.Err())
		case <-n.quit:
			return ErrClosed
		case <-w.wake:
		case <-tick.C:
			ask = true
		}
	}
}

// send sends msg to the member name at addr as a best-effort (UDP) user
// message, encrypted when a key is set; a failure is only logged: WaitSeen
// asks again.
func (n *Node) send(name, addr string, msg []byte) {
	if err := n.ml.SendToAddress(memberlist.Address{Addr: addr, Name: name}, msg); err != nil {
		n.log.Debug("gossip: message not sent", "peer", name, "err", err)
	}
}
