package gossip

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/hashicorp/memberlist"
)

// Node is this task's member of the gossip cluster. Its methods are safe for
// concurrent use.
type Node struct {
	cfg  Config
	log  *slog.Logger
	ml   *memberlist.Memberlist
	addr string // advertised "host:port"
	view view   // live members, kept by the EventDelegate

	claimMu sync.Mutex            // serialises SetClaim and ClearClaim
	claim   atomic.Pointer[claim] // advertised claim; nil: none
	closed  atomic.Bool           // set by Close before anything stops
	inbox   chan []byte           // gate messages, from NotifyMsg to serve
	conf    conflicts             // pending conflicts, for dispatch
	gates   waiters               // WaitSeen calls in progress
	freed   signal                // fired when a peer's node ID leaves KnownNodes
	lonely  signal                // fired when the last other live member leaves or dies
	stop    context.CancelFunc    // called by Close: ends the rejoin loop and its Seeds calls
	quit    chan struct{}         // closed by Close: stops the goroutines
	wg      sync.WaitGroup        // serve, dispatch and gate goroutines
	goMu    sync.Mutex            // orders wg.Add against Close's wg.Wait
	once    sync.Once             // Close runs once
	doneErr error                 // Close's result
}

// Start validates cfg, starts a member listening on cfg.BindAddr:BindPort and
// joins cfg.Join. The member advertises no node ID until SetClaim.
func Start(cfg Config) (*Node, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	n := &Node{
		cfg:   cfg,
		log:   cfg.Logger.With("member", cfg.Name),
		inbox: make(chan []byte, 64),
		conf:  conflicts{wake: make(chan struct{}, 1)},
		gates: waiters{set: map[*waiter]struct{}{}},
		quit:  make(chan struct{}),
	}
	ml, err := memberlist.Create(cfg.memberlistConfig(n))
	if err != nil {
		return nil, fmt.Errorf("gossip: start memberlist: %w", err)
	}
	n.ml = ml
	if self, ok := n.view.get(cfg.Name); ok { // set by NotifyJoin in Create
		n.addr = self.addr
	}
	ctx, stop := context.WithCancel(context.Background())
	n.stop = stop
	n.wg.Add(2)
	go n.serve()
	go n.dispatch()
	n.log.Info("gossip started", "addr", n.Addr(), "encrypted", len(cfg.SecretKey) > 0, "cluster", cfg.label())
	settled := true
	if len(cfg.Join) > 0 || cfg.Seeds != nil {
		var joined int
		joined, settled = n.joinOnce(ctx)
		switch {
		case joined > 0 && !n.alone():
			n.log.Info("gossip joined", "members", joined)
		case len(cfg.Join) > 0:
			n.log.Warn("gossip: joined no member at start; trying again until one answers", "join", cfg.Join,
				"rejoinMax", cfg.RejoinMax.String())
		}
	}
	n.wg.Add(1)
	go func() {
		defer n.wg.Done()
		n.rejoin(ctx, settled)
	}()
	return n, nil
}

// Name returns this member's name (Config.Name).
func (n *Node) Name() string { return n.cfg.Name }

// Addr returns the "host:port" other members reach this one at: the address
// to pass to their Join.
func (n *Node) Addr() string { return n.addr }

// Join contacts the members at addrs ("host:port", or "host" for the BindPort)
// and synchronises state with them. It returns how many it reached, and an
// error only when it reached none (with a wrong SecretKey, none is reached).
func (n *Node) Join(addrs []string) (int, error) {
	if n.closed.Load() {
		return 0, ErrClosed
	}
	joined, err := n.ml.Join(addrs)
	if err != nil {
		return joined, fmt.Errorf("gossip: join %s: %w", strings.Join(addrs, ","), err)
	}
	return joined, nil
}

// JoinGossip joins the member at addr ("host:port"), unless the last member
// this one saw there left or was found dead (ErrGone): a crashed holder's
// address is not worth a TCP timeout. It satisfies nodeid.GossipJoiner.
func (n *Node) JoinGossip(ctx context.Context, addr string) error {
	if n.view.goneAt(addr) {
		return fmt.Errorf("gossip: join %s: %w", addr, ErrGone)
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	_, err := n.Join([]string{addr})
	return err
}

// Member is one live member as this one sees it.
type Member struct {
	// Name is the member's name: its task identity.
	Name string
	// Addr is its gossip address, "host:port".
	Addr string
	// NodeID is the node ID it advertises, or -1 for none.
	NodeID int
	// Version is the version of NodeID it advertises (0 when NodeID is -1).
	Version int64
}

// Members returns the live members, this one included, sorted by name. A
// member that left or was found dead is not live; a suspected one still is.
func (n *Node) Members() []Member {
	own := n.claim.Load()
	var out []Member
	n.view.each(func(name string, p peer) {
		m := Member{Name: name, Addr: p.addr, NodeID: -1}
		if name == n.cfg.Name {
			p.claim, p.held = claim{}, own != nil
			if own != nil {
				p.claim = *own
			}
		}
		if p.held {
			m.NodeID, m.Version = p.claim.nodeID, p.claim.version
		}
		out = append(out, m)
	})
	slices.SortFunc(out, func(a, b Member) int { return strings.Compare(a.Name, b.Name) })
	return out
}

// ForeignMember is a live member whose metadata names another cluster (see
// Config.Cluster): it reached this one despite the label, typically because it
// has no label. It is reported, never obeyed.
type ForeignMember struct {
	// Name is the member's name.
	Name string
	// Addr is its gossip address, "host:port".
	Addr string
	// Cluster is the cluster label its metadata names; "" for a member without
	// a Cluster.
	Cluster string
}

// Foreign returns the live members of another cluster, sorted by name. They
// are not in Members nor KnownNodes, raise no conflict and count for no gate.
func (n *Node) Foreign() []ForeignMember {
	var out []ForeignMember
	n.view.eachForeign(func(f ForeignMember) { out = append(out, f) })
	slices.SortFunc(out, func(a, b ForeignMember) int { return strings.Compare(a.Name, b.Name) })
	return out
}

// Cluster returns the label this member gossips under: Config.Cluster, or its
// hash when longer than MaxLabelLen.
func (n *Node) Cluster() string { return n.cfg.label() }

// KnownNodes returns the highest version advertised per node ID among the
// live members, this one included. It satisfies nodeid.Peers. After Close it
// returns an empty map.
func (n *Node) KnownNodes() map[int]int64 {
	out := map[int]int64{}
	if n.closed.Load() {
		return out
	}
	add := func(c claim) {
		if v, ok := out[c.nodeID]; !ok || c.version > v {
			out[c.nodeID] = c.version
		}
	}
	n.view.each(func(name string, p peer) {
		if name != n.cfg.Name && p.held {
			add(p.claim)
		}
	})
	if c := n.claim.Load(); c != nil {
		add(*c)
	}
	return out
}

// TaskLive reports whether the member called name (a task identity: the
// broker names members by task) is live in this member's view, this one
// included; false after Close. It satisfies nodeid.Tasks.
func (n *Node) TaskLive(name string) bool {
	if n.closed.Load() {
		return false
	}
	if name == n.cfg.Name {
		return true
	}
	_, ok := n.view.get(name)
	return ok
}

// SetClaim advertises that this member holds nodeID at version, and returns
// once the update is broadcast or Config.UpdateTimeout has passed (it keeps
// spreading). From now on, another member advertising nodeID with a higher
// version calls Config.OnConflict; one doing so already is reported too.
func (n *Node) SetClaim(nodeID int, version int64) error {
	c := claim{nodeID: nodeID, version: version}
	if bad := checkClaim(c); bad != "" {
		return fmt.Errorf("gossip: SetClaim(%d, %d): %s", nodeID, version, bad)
	}
	return n.advertise(&c)
}

// ClearClaim advertises that this member holds no node ID (after a release or
// a loss), and returns as SetClaim does.
func (n *Node) ClearClaim() error { return n.advertise(nil) }

// advertise sets the claim (nil: none) and re-advertises this member.
func (n *Node) advertise(c *claim) error {
	n.claimMu.Lock()
	defer n.claimMu.Unlock()
	if n.closed.Load() {
		return ErrClosed
	}
	n.claim.Store(c)
	if err := n.ml.UpdateNode(n.cfg.UpdateTimeout); err != nil {
		n.log.Debug("gossip: update not yet broadcast; it keeps spreading", "err", err)
	}
	if c == nil {
		n.log.Info("gossip: advertising no node ID")
		return nil
	}
	n.log.Info("gossip: advertising node ID", "nodeId", c.nodeID, "version", c.version)
	n.view.each(func(name string, p peer) {
		if name != n.cfg.Name && p.held {
			n.observe(name, p.claim)
		}
	})
	return nil
}

// Close leaves the cluster (waiting up to Config.LeaveTimeout for the leave
// to be broadcast), shuts memberlist down and waits for the Node's goroutines
// to stop. A leave not broadcast by then is logged, not returned: how soon the
// gossip loop gets a core is no failure of Close, and the peers find the
// member gone by their probes, as after a crash. Pending WaitSeen calls return
// ErrClosed. Close is idempotent: later calls return the first call's result.
func (n *Node) Close() error {
	n.once.Do(func() {
		n.goMu.Lock()
		n.closed.Store(true)
		close(n.quit)
		n.stop()
		n.freed.fire()
		n.goMu.Unlock()
		if err := n.ml.Leave(n.cfg.LeaveTimeout); err != nil { // memberlist: a timeout, its only error
			n.log.Warn("gossip: leave not broadcast in time; the peers' probes will find this member gone",
				"leaveTimeout", n.cfg.LeaveTimeout.String(), "err", err)
		}
		if err := n.ml.Shutdown(); err != nil {
			n.doneErr = fmt.Errorf("gossip: shutdown: %w", err)
		}
		n.wg.Wait()
		n.log.Info("gossip stopped")
	})
	return n.doneErr
}

// goOwned runs f on a goroutine that Close waits for, or reports false when
// the Node is closed.
func (n *Node) goOwned(f func()) bool {
	n.goMu.Lock()
	defer n.goMu.Unlock()
	if n.closed.Load() {
		return false
	}
	n.wg.Add(1)
	go func() {
		defer n.wg.Done()
		f()
	}()
	return true
}
