package gossip

import (
	"sync"
	"time"

	"github.com/hashicorp/memberlist"
)

// view is this Node's copy of the live members, kept by the EventDelegate.
//
// memberlist's Members returns pointers into its member table, whose Addr,
// Port and Meta its packet handler rewrites in place: reading them after
// Members returns is a data race (hashicorp/memberlist#306). memberlist calls
// the EventDelegate while it holds that table's lock, the one moment those
// fields are safe to read, so the events copy what this package needs here,
// and nothing else reads a *memberlist.Node.
type view struct {
	mu      sync.Mutex
	members map[string]peer // by member name; this one included
	foreign map[string]ForeignMember
	// gone holds the addresses of members that left or were found dead,
	// until a member joins there, each with when it was lost, for
	// reconnect (lostSince); the zero time when reconnect is not to try it
	// (it became a member of another cluster, or reconnect forgot it).
	gone map[string]time.Time
}

// maxGone bounds view.gone: past it, the oldest knowledge is dropped whole.
const maxGone = 4096

// peer is what the view keeps of one live member.
type peer struct {
	addr  string // "host:port"
	claim claim  // valid when held
	held  bool
}

// set records m as live, with its address and claim, and reports whether m
// held a node ID that it now no longer advertises (freed: released, or moved
// to another ID). Only the EventDelegate calls it.
func (v *view) set(m *memberlist.Node) (freed bool) {
	c, ok := decodeMeta(m.Meta)
	p := peer{addr: m.Address(), claim: c, held: ok}
	v.mu.Lock()
	defer v.mu.Unlock()
	if v.members == nil {
		v.members = map[string]peer{}
	}
	old, was := v.members[m.Name]
	v.members[m.Name] = p
	delete(v.gone, p.addr)
	return was && old.held && (!p.held || p.claim.nodeID != old.claim.nodeID)
}

// remove forgets a member that left or was found dead, and reports whether it
// held a node ID (now freed, as far as gossip knows). Its address is kept
// as gone, with lostAt for reconnect; zero lostAt keeps it from reconnect
// (a member of another cluster).
func (v *view) remove(name string, lostAt time.Time) (freed bool) {
	v.mu.Lock()
	defer v.mu.Unlock()
	old, was := v.members[name]
	delete(v.members, name)
	if was {
		if v.gone == nil || len(v.gone) >= maxGone {
			v.gone = map[string]time.Time{}
		}
		v.gone[old.addr] = lostAt
	}
	return was && old.held
}

// lostSince returns the addresses of members that left or were found dead at
// or after since (none has joined there since), and forgets those lost before.
func (v *view) lostSince(since time.Time) []string {
	v.mu.Lock()
	defer v.mu.Unlock()
	var out []string
	for addr, at := range v.gone {
		if at.IsZero() {
			continue
		}
		if at.Before(since) {
			v.gone[addr] = time.Time{} // still gone, no longer tried
			continue
		}
		out = append(out, addr)
	}
	return out
}

// goneAt reports whether the last member seen at addr left or was found
// dead, and none has joined there since.
func (v *view) goneAt(addr string) bool {
	v.mu.Lock()
	defer v.mu.Unlock()
	_, gone := v.gone[addr]
	return gone
}

// get returns the member called name.
func (v *view) get(name string) (peer, bool) {
	v.mu.Lock()
	defer v.mu.Unlock()
	p, ok := v.members[name]
	return p, ok
}

// each calls f for every live member, holding the view's lock: f must be quick.
func (v *view) each(f func(name string, p peer)) {
	v.mu.Lock()
	defer v.mu.Unlock()
	for name, p := range v.members {
		f(name, p)
	}
}

// setForeign records a member of another cluster, and reports whether it is
// new or its cluster changed.
func (v *view) setForeign(name string, f ForeignMember) bool {
	v.mu.Lock()
	defer v.mu.Unlock()
	if v.foreign == nil {
		v.foreign = map[string]ForeignMember{}
	}
	old, ok := v.foreign[name]
	v.foreign[name] = f
	return !ok || old.Cluster != f.Cluster
}

// removeForeign forgets a member of another cluster, and reports whether it
// was one.
func (v *view) removeForeign(name string) bool {
	v.mu.Lock()
	defer v.mu.Unlock()
	_, ok := v.foreign[name]
	delete(v.foreign, name)
	return ok
}

// eachForeign calls f for every live member of another cluster, holding the
// view's lock.
func (v *view) eachForeign(f func(ForeignMember)) {
	v.mu.Lock()
	defer v.mu.Unlock()
	for _, m := range v.foreign {
		f(m)
	}
}
