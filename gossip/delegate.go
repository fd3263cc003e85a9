package gossip

import (
	"time"

	"github.com/hashicorp/memberlist"
)

// delegate is the Node as a memberlist.Delegate. memberlist calls it from its
// own goroutines, concurrently: every method is quick and never blocks.
type delegate Node

var _ memberlist.Delegate = (*delegate)(nil)

// NodeMeta returns this member's claim as metadata.
func (d *delegate) NodeMeta(limit int) []byte {
	b := encodeMeta(d.claim.Load(), d.cfg.label())
	if len(b) > limit {
		return nil // cannot happen: about 40 bytes plus a label of at most 255, against memberlist's 512
	}
	return b
}

// NotifyMsg hands a gate message to serve; when its queue is full the message
// is dropped (WaitSeen asks again).
func (d *delegate) NotifyMsg(b []byte) {
	if len(b) == 0 {
		return
	}
	select {
	case d.inbox <- append([]byte(nil), b...):
	default:
		d.log.Debug("gossip: message queue full, dropped a message")
	}
}

// GetBroadcasts sends no broadcasts of its own: the metadata rides on
// memberlist's alive messages.
func (d *delegate) GetBroadcasts(overhead, limit int) [][]byte { return nil }

// LocalState adds nothing to push/pull: the metadata is part of it already.
func (d *delegate) LocalState(join bool) []byte { return nil }

// MergeRemoteState ignores remote state (LocalState sends none).
func (d *delegate) MergeRemoteState(buf []byte, join bool) {}

// events is the Node as a memberlist.EventDelegate. memberlist calls it one
// event at a time, in order, holding its member table's lock: every method is
// quick, never blocks and never calls back into memberlist. It keeps the view.
type events Node

var _ memberlist.EventDelegate = (*events)(nil)

// NotifyJoin records a joining member and checks it for a conflict.
func (e *events) NotifyJoin(m *memberlist.Node) {
	if (*Node)(e).foreign(m) {
		return
	}
	if e.view.set(m) && m.Name != e.cfg.Name {
		e.freed.fire()
	}
	if m.Name == e.cfg.Name {
		return
	}
	c, ok := (*Node)(e).claimOf(m)
	e.log.Debug("gossip: member joined", "peer", m.Name, "addr", m.Address(), "nodeId", c.nodeID, "version", c.version)
	if ok {
		(*Node)(e).observe(m.Name, c)
	}
}

// NotifyUpdate records a member's new metadata and checks it for a conflict.
func (e *events) NotifyUpdate(m *memberlist.Node) {
	if (*Node)(e).foreign(m) {
		return
	}
	if e.view.set(m) && m.Name != e.cfg.Name {
		e.freed.fire()
	}
	if m.Name == e.cfg.Name {
		return
	}
	if c, ok := (*Node)(e).claimOf(m); ok {
		(*Node)(e).observe(m.Name, c)
	}
}

// claimOf returns the claim member m advertises, and reports a claim it
// refuses (an out-of-range node ID, a negative version): such a member
// counts as holding none, so that it cannot reach KnownNodes, a conflict or
// a gate. It does not block.
func (n *Node) claimOf(m *memberlist.Node) (claim, bool) {
	c, ok, bad := parseMeta(m.Meta)
	if bad != "" {
		n.log.Warn("gossip: ignoring a member's claim that no node can hold (a bug or an incompatible release?)",
			"peer", m.Name, "addr", m.Address(), "claim", bad)
	}
	return c, ok
}

// NotifyLeave forgets a member that left or was found dead: it drops out of
// Members and KnownNodes. Its address is kept for the rejoin loop's
// reconnect: memberlist does not tell a member that left from one found dead
// (the Node's State is not kept up to date).
func (e *events) NotifyLeave(m *memberlist.Node) {
	if e.view.remove(m.Name, time.Now()) && m.Name != e.cfg.Name {
		e.freed.fire()
	}
	e.view.removeForeign(m.Name)
	if m.Name != e.cfg.Name {
		e.log.Debug("gossip: member left", "peer", m.Name, "addr", m.Address())
		if (*Node)(e).alone() {
			e.lonely.fire()
		}
	}
}

// observe raises a conflict when member name (not this one) advertises c,
// this member's node ID with a higher version. It does not block.
func (n *Node) observe(name string, c claim) {
	own := n.claim.Load()
	if own == nil || c.nodeID != own.nodeID || c.version <= own.version {
		return
	}
	n.conf.raise(c)
	n.log.Warn("gossip: a peer advertises our node ID with a higher version", "peer", name,
		"nodeId", c.nodeID, "version", c.version, "ourVersion", own.version)
}

// foreign reports whether m belongs to another cluster: its metadata names a
// cluster other than this member's label (a member without one names none).
// Such a member is kept apart (Foreign), logged once when first seen or when
// its cluster changes, and never enters the view: it reaches neither
// KnownNodes, nor OnConflict, nor the gates. It does not block.
func (n *Node) foreign(m *memberlist.Node) bool {
	if m.Name == n.cfg.Name {
		return false
	}
	cluster := metaCluster(m.Meta)
	if cluster == n.cfg.label() {
		if n.view.removeForeign(m.Name) {
			n.log.Info("gossip: member now advertises our cluster", "peer", m.Name, "cluster", cluster)
		}
		return false
	}
	if n.view.remove(m.Name, time.Time{}) {
		n.freed.fire()
	}
	if n.view.setForeign(m.Name, ForeignMember{Name: m.Name, Addr: m.Address(), Cluster: cluster}) {
		n.log.Warn("gossip: ignoring a member of another cluster (a gossip pool joined by mistake?)",
			"peer", m.Name, "addr", m.Address(), "peerCluster", cluster, "cluster", n.cfg.label())
	}
	return true
}
