package gossip

import (
	"slices"
	"sync"
)

// conflicts holds the conflicts raised and not yet dispatched: the highest
// version per node ID. raise never blocks; dispatch delivers in order.
type conflicts struct {
	mu      sync.Mutex
	pending map[int]int64
	wake    chan struct{} // capacity 1: "pending is not empty"
}

// raise records a conflict and wakes dispatch.
func (c *conflicts) raise(cl claim) {
	c.mu.Lock()
	if c.pending == nil {
		c.pending = map[int]int64{}
	}
	if v, ok := c.pending[cl.nodeID]; !ok || cl.version > v {
		c.pending[cl.nodeID] = cl.version
	}
	c.mu.Unlock()
	select {
	case c.wake <- struct{}{}:
	default:
	}
}

// take returns the pending conflicts, sorted by node ID, and clears them.
func (c *conflicts) take() []claim {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make([]claim, 0, len(c.pending))
	for id, v := range c.pending {
		out = append(out, claim{nodeID: id, version: v})
	}
	clear(c.pending)
	slices.SortFunc(out, func(a, b claim) int { return a.nodeID - b.nodeID })
	return out
}

// dispatch calls Config.OnConflict for each conflict that still concerns the
// current claim, once per claim and version, until Close.
func (n *Node) dispatch() {
	defer n.wg.Done()
	var last *claim // the claim of the last call
	var lastV int64 // the version of the last call
	for {
		select {
		case <-n.quit:
			return
		case <-n.conf.wake:
		}
		for _, c := range n.conf.take() {
			own := n.claim.Load()
			if own == nil || c.nodeID != own.nodeID || c.version <= own.version || (own == last && c.version <= lastV) {
				continue // stale: the claim changed, or this was reported
			}
			last, lastV = own, c.version
			if n.cfg.OnConflict != nil && !n.closed.Load() {
				n.cfg.OnConflict(c.nodeID, c.version)
			}
		}
	}
}
