package gossip

import (
	"slices"
	"strings"
	"sync"
)

// Freed returns a channel that is closed as soon as a node ID that a peer
// advertised leaves KnownNodes after this call: the peer advertised none or
// another ID (a release), left the cluster, or was found dead. Each change
// closes the channel handed out before it, so a caller that takes the channel,
// then looks at the store, then waits on it misses no change made after it
// took it. After Close the channel closes at once. With Rank, it satisfies
// nodeid.PeerHints: a waiting Acquire looks again when an ID was freed
// instead of at the end of its pause.
func (n *Node) Freed() <-chan struct{} {
	ch := n.freed.wait()
	if n.closed.Load() {
		n.freed.fire()
	}
	return ch
}

// Rank returns this member's place among the live members that advertise no
// node ID, by name (0 for the first), and how many there are; (0, 0) when
// this member advertises one. Members waiting for a node ID that see the same
// membership get distinct ranks: nodeid uses them to spread their picks over
// the free IDs so that they do not race for the same one.
func (n *Node) Rank() (rank, of int) {
	if n.claim.Load() != nil || n.closed.Load() {
		return 0, 0
	}
	var waiting []string
	n.view.each(func(name string, p peer) {
		if name == n.cfg.Name || !p.held {
			waiting = append(waiting, name)
		}
	})
	if !slices.Contains(waiting, n.cfg.Name) {
		waiting = append(waiting, n.cfg.Name)
	}
	slices.SortFunc(waiting, strings.Compare)
	return slices.Index(waiting, n.cfg.Name), len(waiting)
}

// signal is a broadcast of "something changed": wait returns a channel that
// the next fire closes. Its zero value is ready to use.
type signal struct {
	mu sync.Mutex
	ch chan struct{}
}

// wait returns the channel the next fire closes.
func (s *signal) wait() <-chan struct{} {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ch == nil {
		s.ch = make(chan struct{})
	}
	return s.ch
}

// fire closes the channel handed out by wait, if any; the next wait gets a
// new one. It never blocks for long (EventDelegate callbacks call it).
func (s *signal) fire() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ch != nil {
		close(s.ch)
		s.ch = nil
	}
}
