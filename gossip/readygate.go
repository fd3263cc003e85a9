package gossip

import (
	"context"
	"errors"
	"time"
)

// Gate is a readiness gate: closed while peers have not yet seen a new
// version, open once they have or once a timeout has passed. Its Check method
// makes it a health checker for /ready.
type Gate struct {
	done chan struct{}
	err  error // written before done is closed
}

// StartGate starts WaitSeen(nodeID, version, minPeers) on a goroutine the
// Node owns, bounded by timeout (<= 0: no bound), and returns its Gate. Start
// one after SetClaim for a claim that took over an expired lease; a claim that
// took a free or released lease needs none.
func (n *Node) StartGate(nodeID int, version int64, minPeers int, timeout time.Duration) *Gate {
	g := &Gate{done: make(chan struct{})}
	ok := n.goOwned(func() {
		ctx := context.Background()
		if timeout > 0 {
			var cancel context.CancelFunc
			ctx, cancel = context.WithTimeout(ctx, timeout)
			defer cancel()
		}
		g.err = n.WaitSeen(ctx, nodeID, version, minPeers)
		if errors.Is(g.err, ErrNotSeen) {
			n.log.Warn("gossip: readiness gate opened on its timeout, peers have not all seen the new version",
				"nodeId", nodeID, "version", version, "err", g.err)
		}
		close(g.done)
	})
	if !ok {
		g.err = ErrClosed
		close(g.done)
	}
	return g
}

// Check returns ErrWaiting while the gate is closed, and nil once it has
// opened, whether peers saw the version or the timeout passed. It returns
// ErrClosed when the Node closed before the gate opened.
func (g *Gate) Check() error {
	select {
	case <-g.done:
		if errors.Is(g.err, ErrClosed) {
			return ErrClosed
		}
		return nil
	default:
		return ErrWaiting
	}
}

// Done is closed when the gate has opened (or the Node closed).
func (g *Gate) Done() <-chan struct{} { return g.done }

// Err returns nil until Done is closed. Then it returns nil when peers saw the
// version, an error wrapping ErrNotSeen when the gate opened on its timeout,
// or ErrClosed.
func (g *Gate) Err() error {
	select {
	case <-g.done:
		return g.err
	default:
		return nil
	}
}
