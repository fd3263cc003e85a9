package nodeid

import (
	"maps"
	"slices"
)

// knownNodes returns gossip's view (node ID -> highest version seen): written
// into records, and used to tell a deleted object from a never-created one.
// nil without Peers. It builds a new map at each call. An entry no record may
// carry (lease.KnownNodeValid), which a buggy peer can advertise, is dropped
// (written, it would fail every holder's renewals) and logged, once for each
// set of node IDs, not at every renewal while the same peer misbehaves.
func (p *Provider) knownNodes() map[int]int64 {
	if p.cfg.Peers == nil {
		return nil
	}
	known := p.cfg.Peers.KnownNodes()
	var bad map[int]int64
	for id, v := range known {
		if !p.rules.knownNodeValid(id, v) {
			if bad == nil {
				bad = map[int]int64{}
			}
			bad[id] = v
			delete(known, id)
		}
	}
	if bad == nil {
		return known
	}
	ids := slices.Sorted(maps.Keys(bad))
	p.badPeersMu.Lock()
	defer p.badPeersMu.Unlock()
	if !slices.Equal(ids, p.badPeers) {
		p.badPeers = ids
		p.log.Warn("gossip: ignoring entries no lease record can carry (a peer advertises an impossible node ID or version)",
			"entries", bad)
	}
	return known
}
