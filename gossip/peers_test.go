package gossip_test

import (
	"github.com/nodeid/nodeid/gossip"
	"github.com/nodeid/nodeid/nodeid"
)

// A *gossip.Node is the provider's source of gossip hints, without either
// package importing the other.
var _ nodeid.PeerHints = (*gossip.Node)(nil)
