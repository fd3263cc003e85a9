package gossip_test

import (
	"context"
	"log"
	"sync/atomic"
	"time"

	"github.com/nodeid/nodeid/gossip"
	"github.com/nodeid/nodeid/nodeid"
)

// Example wires gossip to a nodeid claim: the provider takes its hints from
// the node, a higher version of the claim's ID seen in gossip fences the claim,
// and readiness waits for peers after taking over a lease.
func Example() {
	var claim atomic.Pointer[nodeid.Claim]

	cfg := gossip.DefaultConfig()
	cfg.Name = "arn:aws:ecs:eu-west-1:123456789012:task/demo/0123456789abcdef"
	cfg.Join = []string{"10.0.1.17:7946"}
	cfg.OnConflict = func(id int, version int64) {
		if c := claim.Load(); c != nil && c.NodeID() == id {
			c.ObserveVersion(version) // fences at once when version is higher
		}
	}
	g, err := gossip.Start(cfg)
	if err != nil {
		log.Fatal(err)
	}
	defer g.Close()

	var p *nodeid.Provider // nodeid.New(store, nodeid.Config{Peers: g, ...})
	c, err := p.Acquire(context.Background())
	if err != nil {
		log.Fatal(err)
	}
	claim.Store(c)
	if err := g.SetClaim(c.NodeID(), c.Version()); err != nil {
		log.Fatal(err)
	}
	ready := g.StartGate(c.NodeID(), c.Version(), 0, 10*time.Second)
	_ = ready // serve /ready with health.All(c, ready)
}
