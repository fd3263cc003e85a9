package node

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nodeid/nodeid/gossip"
	"github.com/nodeid/nodeid/internal/ctxtime"
	"github.com/nodeid/nodeid/internal/hostclock"
	"github.com/nodeid/nodeid/lease"
	"github.com/nodeid/nodeid/nodeid"
	"github.com/nodeid/nodeid/snowflake"
)

// Node is one running nodeid node: a claim on a node ID, the Snowflake
// generator fenced by it, gossip, the id file, health and metrics, composed
// the one safe way. Build it with New, start it with Start (or Run), serve
// its Handler, and Close it. Its methods are safe for concurrent use, and
// the checkers and the Handler answer from New on (503 until the ID is
// held).
type Node struct {
	cfg     Config
	store   lease.Store // counted by the metrics
	clock   nodeid.Clock
	host    *hostclock.Clock // what an id-file reader or the supervised child stamps IDs with
	log     *slog.Logger
	metrics *metrics

	provider atomic.Pointer[nodeid.Provider]
	gossip   atomic.Pointer[gossip.Node]
	gen      atomic.Pointer[snowflake.Generator] // set before claim
	claim    atomic.Pointer[nodeid.Claim]
	gate     atomic.Pointer[gossip.Gate] // readiness gate after taking over an expired lease
	stopping atomic.Bool                 // set first by Close: health 503, no more IDs
	// hostIssues: Supervise runs a child, which stamps IDs with the host's
	// clock: the claim's renewals reserve above it (reserveClock).
	hostIssues atomic.Bool
	issued     atomic.Int64                 // IDs handed out
	base       time.Time                    // Clock.Now at New: the origin of stalled
	stalled    atomic.Int64                 // 1 + ns after base of the first failed issue since the last success; 0: none
	probe      atomic.Pointer[probeOutcome] // the store probe's result; nil before it ran or when skipped
	waiting    atomic.Pointer[acquireWait]  // why the acquisition has taken no ID yet; nil before a round failed

	// Set and read by Start's goroutine alone (acquire, and the provider's
	// AcquireWaiting calls during its Acquire).
	acquireStart time.Time // Clock.Now when the acquisition began
	waitLogged   time.Time // Clock.Now of the last "still acquiring" log line

	idFile   idFileState
	seedBook seedBook // the lease records gossipSeeds read
	elector  *elector // nil unless Config.Elect
	// idFileRefresh is how often the watcher rewrites the id file besides
	// the claim's changes (Claim.Changed): Config.IDFileHorizon/4.
	idFileRefresh time.Duration

	mu          sync.Mutex         // guards the fields below
	started     bool               // Start was called
	closed      bool               // Close was called
	cancelStart context.CancelFunc // ends a Start in progress
	childDone   chan struct{}      // set by Supervise, closed once its child is gone; nil: none
	err         error

	startDone chan struct{} // closed when Start returns
	serving   chan struct{} // closed when Start has succeeded
	closing   chan struct{} // closed by Close: the watcher stops
	watchDone chan struct{} // closed when the watcher has stopped (or never ran)
	done      chan struct{} // closed when the node has ended
	endOnce   sync.Once
	closeOnce sync.Once
	closeErr  error
}

// New validates cfg (for store: nodeid.Config.ValidateFor) and returns a
// Node over store. It does no I/O: the
// node's Handler and checkers answer at once (503, "acquiring") until Start
// has taken a node ID.
func New(store lease.Store, cfg Config) (*Node, error) {
	if store == nil {
		return nil, errors.New("node: nil store")
	}
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if pc := cfg.Provider; true {
		// The store's own limits (lease.MinWriteInterval) before any request:
		// a probe would write first.
		if err := pc.ValidateFor(store); err != nil {
			return nil, fmt.Errorf("node: %w", err)
		}
	}
	n := &Node{
		cfg: cfg, clock: cfg.Provider.Clock, base: cfg.Provider.Clock.Now(), log: cfg.Logger.With("task", cfg.Provider.TaskID),
		host:      hostclock.New(cfg.HostClock, cfg.Provider.Clock),
		startDone: make(chan struct{}), serving: make(chan struct{}), closing: make(chan struct{}), watchDone: make(chan struct{}),
		done: make(chan struct{}),
	}
	n.idFile.path, n.idFile.horizon, n.idFileRefresh = cfg.IDFile, cfg.IDFileHorizon, cfg.IDFileHorizon/4
	m, err := newMetrics(cfg.Metrics, n)
	if err != nil {
		return nil, err
	}
	n.metrics = m
	n.store = m.Store(store)
	if n.elector, err = newElector(n.store, cfg, gossipTasks{n}); err != nil {
		return nil, err
	}
	return n, nil
}

// Start takes a node ID and starts serving it; it blocks until the node
// serves IDs, which may take up to Provider.AcquireTimeout (or longer, while
// the wall clock passes the ID's floor before the id file is written).
// Serve Handler (or the checkers) meanwhile: they answer 503 with the
// reason. Its first request is the store's own check (lease.Check, when the
// store is a lease.Checker, as s3store's and etcdstore's are), bounded by
// the store's request timeout (their RequestTimeout, 5 s by default) and not
// retried: a store that does not answer it, or refuses it, ends Start with
// the store's error, which names the endpoint. The store probe follows
// (Config.SkipProbe). Start starts gossip then, if configured, and leaves it
// again if it fails. It may be called once; Close ends a Start in progress.
//
// After Start returns nil, the node renews its lease in the background
// until Close, or until the lease is lost: then Done is closed and Err
// wraps nodeid.ErrLeaseLost, and the process should exit non-zero.
func (n *Node) Start(ctx context.Context) error {
	n.mu.Lock()
	switch {
	case n.closed:
		n.mu.Unlock()
		return ErrClosed
	case n.started:
		n.mu.Unlock()
		return ErrStarted
	}
	n.started = true
	ctx, cancel := context.WithCancel(ctx)
	n.cancelStart = cancel
	n.mu.Unlock()
	defer close(n.startDone)
	defer cancel()
	claim, err := n.acquire(ctx)
	if err != nil {
		close(n.watchDone)
		n.leaveGossip()
		n.end(err)
		return err
	}
	changed := claim.Changed() // before activate reads the claim: no change after it is missed
	n.activate(claim)
	go n.watch(claim, changed)
	if n.cfg.IDFile != "" {
		if err := n.idFile.writeOnceFloorPassed(ctx, claim, n.host, n.log); err != nil {
			return err
		}
	}
	if n.elector != nil {
		n.elector.start(n)
	}
	close(n.serving)
	return nil
}

// Run starts the node (Start), serves until ctx ends or the lease is lost,
// and then closes it (Close, bounded by Config.ShutdownTimeout): the whole
// life of a node, as client-go's RunOrDie. It returns nil after a release
// (or when ctx ended before a node ID was held), an error wrapping
// nodeid.ErrLeaseLost after a loss, and any other error of Start or
// Close.
func (n *Node) Run(ctx context.Context) error {
	return n.runWith(ctx, func(ctx context.Context) error {
		select {
		case <-ctx.Done():
		case <-n.Done():
		}
		return nil
	})
}

// runWith is Start, then work while the node serves, then Close (bounded by
// Config.ShutdownTimeout). A loss wins over work's error, which wins over
// Close's.
func (n *Node) runWith(ctx context.Context, work func(context.Context) error) error {
	err := n.Start(ctx)
	if err == nil {
		err = work(ctx)
	}
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), n.cfg.ShutdownTimeout)
	defer cancel()
	cerr := n.Close(cctx)
	switch {
	case err != nil && ctx.Err() != nil && n.claim.Load() == nil:
		return nil // stopped before a node ID was held
	case errors.Is(cerr, nodeid.ErrLeaseLost) && !errors.Is(err, nodeid.ErrLeaseLost):
		return cerr
	case err != nil:
		return err
	}
	return cerr
}

// acquire starts gossip, if configured, and takes a node ID.
func (n *Node) acquire(ctx context.Context) (*nodeid.Claim, error) {
	if err := n.idFile.prepare(n.log); err != nil {
		return nil, err
	}
	if err := n.checkStore(ctx); err != nil {
		return nil, err
	}
	if err := n.runProbe(ctx); err != nil {
		return nil, err
	}
	pc := n.cfg.Provider
	pc.Observer = nodeEvents{observers: observers{n.metrics, pc.Observer}, n: n}
	if n.cfg.Gossip != nil {
		g, err := n.startGossip()
		if err != nil {
			return nil, err
		}
		pc.Peers, pc.GossipAddr = g, g.Addr()
	}
	p, err := nodeid.New(n.store, pc)
	if err != nil {
		return nil, err
	}
	n.provider.Store(p)
	n.acquireStart = n.clock.Now()
	n.log.Info("acquiring a node ID", "clusterSize", pc.ClusterSize, "leaseDuration", p.Timings().Lease.String())
	claim, err := p.Acquire(ctx, nodeid.WithIssuedFunc(n.lastIssued), nodeid.WithReserveClock(n.reserveClock))
	if err != nil {
		return nil, fmt.Errorf("acquire a node ID: %w", err)
	}
	return claim, nil
}

// checkStore runs the store's own check (lease.Check: s3store's one-key
// listing, etcdstore's count of the prefix) before anything else is sent,
// as nodeid-broker did before the node ran it. It is one request, bounded by
// the store's request timeout (s3store's and etcdstore's RequestTimeout,
// 5 s by default), and not retried: a store that does not answer it, or
// answers it wrongly, ends Start, with the store's error, which names where
// it is (lease.Checker). Without the check, an endpoint that accepts connections and never
// answers left every probe write to time out and the probe to retry it as
// inconclusive until Provider.AcquireTimeout (30 s), with an error that
// named no endpoint.
func (n *Node) checkStore(ctx context.Context) error {
	if err := lease.Check(ctx, n.store); err != nil {
		return fmt.Errorf("store check: %w", err) // the store's error names where it is
	}
	return nil
}

// startGossip starts the gossip member; a peer advertising this node's ID
// with a higher version fences the claim.
func (n *Node) startGossip() (*gossip.Node, error) {
	gc := *n.cfg.Gossip
	userConflict := gc.OnConflict
	gc.OnConflict = func(id int, version int64) {
		if c := n.claim.Load(); c != nil && c.NodeID() == id {
			c.ObserveVersion(version) // fences at once when higher
		}
		if userConflict != nil {
			userConflict(id, version)
		}
	}
	userSeeds := gc.Seeds
	gc.Seeds = func(ctx context.Context) []string {
		seeds := n.gossipSeeds(ctx)
		if userSeeds != nil {
			seeds = append(seeds, userSeeds(ctx)...)
		}
		return seeds
	}
	g, err := gossip.Start(gc)
	if err != nil {
		return nil, fmt.Errorf("gossip on %s:%d: %w", gc.BindAddr, gc.BindPort, err)
	}
	n.gossip.Store(g)
	n.log.Info("gossip listening", "addr", g.Addr(), "join", gc.Join)
	return g, nil
}

// claimFence is the fence of a node's generator: the claim's, and the
// node's own stop flag (Close fences before the release is written). It is
// a snowflake.ClockedFence, as the claim is, so that the claim's clock
// reading on its way to an ID stamps it too: one reading per ID.
type claimFence struct {
	stopping *atomic.Bool
	claim    *nodeid.Claim
}

// Valid implements snowflake.Fence.
func (f claimFence) Valid() bool { return !f.stopping.Load() && f.claim.Valid() }

// ValidNow implements snowflake.ClockedFence.
func (f claimFence) ValidNow() (int64, bool) {
	if f.stopping.Load() {
		return 0, false
	}
	return f.claim.ValidNow()
}

// activate builds the generator for claim and starts serving: health turns
// 200 and gossip advertises the claim.
func (n *Node) activate(claim *nodeid.Claim) {
	p := n.provider.Load()
	pc := p.Config()
	gen, err := snowflake.New(snowflake.Config{
		Layout: pc.Layout,
		NodeID: int64(claim.NodeID()),
		// The claim's monotonic fence, and the node's own: Close fences
		// before the release is written.
		Fence:              claimFence{stopping: &n.stopping, claim: claim},
		FloorMs:            claim.Floor(),
		Reservation:        claim.Reservation,
		Clock:              nodeid.SnowflakeClock(pc.Clock), // the clock the reservations are stamped with
		MaxClockWait:       pc.MaxClockWait,
		MaxReservationWait: n.cfg.MaxReservationWait,
	})
	if err != nil { // the provider validated the layout and the floor: a bug
		panic(fmt.Sprintf("node: snowflake generator for node %d: %v", claim.NodeID(), err))
	}
	n.gen.Store(gen) // lastIssued's from here

	if claim.TookOverExpired() {
		n.metrics.expiredTakeovers.Inc()
	}
	n.claim.Store(claim) // from here health is 200
	if g := n.gossip.Load(); g != nil {
		if err := g.SetClaim(claim.NodeID(), claim.Version()); err != nil {
			n.log.Warn("gossip: could not advertise the node ID", "err", err)
		}
		if claim.TookOverExpired() {
			n.gate.Store(g.StartGate(claim.NodeID(), claim.Version(), 0, n.cfg.ReadyTimeout))
		}
	}
	n.log.Info("serving IDs", "nodeId", claim.NodeID(), "version", claim.Version(), "floorMs", claim.Floor(),
		"tookOverExpired", claim.TookOverExpired())
}

// lastIssued is the claim's issued function (nodeid.WithIssuedFunc), given
// to Acquire before the generator exists, since the generator is built from
// the claim: it reads the generator activate stores. Until then nothing was
// issued (Start activates the claim Acquire returns before anything else
// can use it; Acquire itself may close a claim it gives up), and it reports
// 0: the release lowers the reservation to the floor, as after a generator
// that issued nothing. The id file's reader and a supervised child are
// covered too (idFileState.lowestRelease).
func (n *Node) lastIssued() int64 {
	last := int64(0)
	if g := n.gen.Load(); g != nil {
		last = g.Stop()
	}
	return n.idFile.lowestRelease(last, n.host)
}

// reserveClock is the claim's reserve clock (nodeid.WithReserveClock): the
// host's clock (hostclock.Clock.High) once an issuer outside the node stamps IDs
// with it, the id file's reader (Config.IDFile) or a supervised child
// (hostIssues); before, the zero Time: the Provider's Wall alone.
func (n *Node) reserveClock() time.Time {
	if n.cfg.IDFile == "" && !n.hostIssues.Load() {
		return time.Time{}
	}
	return n.host.High()
}

// watch keeps the id file in line with the claim until the claim ends or
// Close begins: at each change of the claim (Claim.Changed, from changed
// on: a renewal, a read that moved the fence, a jeopardy, a recovery), and
// every IDFileHorizon/4, it writes the file with a fresh validUntilMs while the
// claim is valid, and takes it down while it is not. On a loss it removes
// the id file for good and ends the node. The id file is written and removed
// only by Start, watch and Close, one after the other, so a refresh never
// brings back a file removed for good.
func (n *Node) watch(claim *nodeid.Claim, changed <-chan struct{}) {
	defer close(n.watchDone)
	var tick <-chan time.Time
	if n.cfg.IDFile != "" {
		t := time.NewTicker(n.idFileRefresh)
		defer t.Stop()
		tick = t.C
	}
	for {
		select {
		case <-changed: // the claim's end is a change too
		case <-tick:
		case <-n.closing:
			return
		}
		select {
		case <-claim.Done():
			n.idFile.remove(n.log)
			err := claim.Err()
			if errors.Is(err, nodeid.ErrLeaseLost) {
				n.log.Error("lease lost: stopped issuing IDs", "nodeId", claim.NodeID(), "version", claim.Version(), "err", err)
				n.end(err)
			}
			return
		default:
		}
		changed = claim.Changed() // before sync reads the claim
		n.idFile.sync(claim, n.host, n.log, !n.stopping.Load())
	}
}

// Close stops the node, in this order: it fences (health 503, no more IDs),
// removes the id file, waits IDFileGrace for the application to stop using
// it, releases the node ID (free at once for a successor), and leaves
// gossip; an elector resigns meanwhile. ctx bounds it: a release not confirmed by then leaves the lease to
// expire, which is safe. A Start in progress is ended first. Close is
// idempotent; later calls return the first call's result. It returns an
// error wrapping nodeid.ErrLeaseLost when the lease had been lost; the
// resignation then gets one store attempt (nodeid.Config.StoreTimeout), not
// all of ctx, so that a node that lost its ID ends at once.
func (n *Node) Close(ctx context.Context) error {
	n.closeOnce.Do(func() { n.closeErr = n.close(ctx) })
	return n.closeErr
}

func (n *Node) close(ctx context.Context) error {
	n.stopping.Store(true)
	n.mu.Lock()
	started, cancel, childDone := n.started, n.cancelStart, n.childDone
	n.closed = true
	n.mu.Unlock()
	close(n.closing)
	if started {
		cancel()
		<-n.startDone
		<-n.watchDone
	}
	if childDone != nil {
		<-childDone // Supervise stops its child (closing): the ID is released only once it is gone
	}
	rctx, cancelResign := n.resignContext(ctx)
	defer cancelResign()
	resigned := n.resign(rctx)
	endErr, err := n.release(ctx)
	<-resigned
	n.end(endErr)
	return err
}

// resignContext bounds the resignation. After a loss of the node ID the
// node is to end at once (the broker exits 3), so the resignation gets one
// store attempt (nodeid.Config.StoreTimeout), not all of ctx: a store that
// does not answer leaves the leadership to expire, as when ctx ends.
func (n *Node) resignContext(ctx context.Context) (context.Context, context.CancelFunc) {
	claim := n.claim.Load()
	if claim == nil || !errors.Is(claim.Err(), nodeid.ErrLeaseLost) {
		return context.WithCancel(ctx)
	}
	return context.WithTimeout(ctx, n.provider.Load().Timings().StoreTimeout)
}

// resign stops the elector, if any, in the background (its leadership is a
// lease of its own: a store that does not confirm the resignation must not
// take the release's time): the channel closes when it is done.
func (n *Node) resign(ctx context.Context) <-chan struct{} {
	done := make(chan struct{})
	if n.elector == nil {
		close(done)
		return done
	}
	go func() {
		defer close(done)
		if err := n.elector.stop(ctx); err != nil {
			n.log.Warn("resign not confirmed; the leadership will expire", "election", n.cfg.Elect, "err", err)
		}
	}()
	return done
}

// release fences and releases the node ID, if one is held, and leaves
// gossip. It returns why the node ended (ErrClosed, or the loss) and Close's
// error.
func (n *Node) release(ctx context.Context) (endErr, err error) {
	claim := n.claim.Load()
	if claim == nil {
		n.leaveGossip()
		return ErrClosed, nil
	}
	n.log.Info("stopping: fencing and releasing the node ID", "nodeId", claim.NodeID(), "version", claim.Version())
	if n.idFile.remove(n.log) && claim.Err() == nil && !n.idFile.childGone() {
		// The application stops at its next read. A supervised child, the
		// file's reader, is gone by now (Close waited for it, and no other
		// may start), and a lost claim releases nothing: no grace to give.
		sleepCtx(ctx, n.cfg.IDFileGrace)
	}
	err = claim.Close(ctx)
	n.leaveGossip()
	if lerr := claim.Err(); errors.Is(lerr, nodeid.ErrLeaseLost) {
		return lerr, lerr // lost before the release: nothing was ours to release
	}
	if err != nil {
		err = fmt.Errorf("release: %w", err)
	}
	return ErrClosed, err
}

// leaveGossip leaves the gossip cluster, if this node joined one.
func (n *Node) leaveGossip() {
	if g := n.gossip.Load(); g != nil {
		if err := g.Close(); err != nil {
			n.log.Warn("gossip did not close cleanly", "err", err)
		}
	}
}

// end records why the node ended and closes Done, once.
func (n *Node) end(err error) {
	n.endOnce.Do(func() {
		n.mu.Lock()
		n.err = err
		n.mu.Unlock()
		close(n.done)
	})
}

// Serving is closed once Start has succeeded: the node serves IDs from then
// until Done is closed. With Run, it is the moment to start leader-only or
// ID-dependent work.
func (n *Node) Serving() <-chan struct{} { return n.serving }

// Done is closed when the node has ended: its lease lost, Start failed, or
// Close done.
func (n *Node) Done() <-chan struct{} { return n.done }

// Err returns nil while the node runs (or has not ended), and once Done is
// closed why it ended: an error wrapping nodeid.ErrLeaseLost after a loss,
// ErrClosed after Close, or Start's error.
func (n *Node) Err() error {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.err
}

// NodeID returns the node ID held (or last held), -1 before one is held.
func (n *Node) NodeID() int {
	if c := n.claim.Load(); c != nil {
		return c.NodeID()
	}
	return -1
}

// Version returns the version (fencing token) of the node ID held (or last
// held), 0 before one is held.
func (n *Node) Version() int64 {
	if c := n.claim.Load(); c != nil {
		return c.Version()
	}
	return 0
}

// Claim returns the node's claim, nil before one is held: for status pages
// and for what the node does not wrap. Do not Close it: Close the node.
func (n *Node) Claim() *nodeid.Claim { return n.claim.Load() }

// sleepCtx waits d or until ctx ends; it reports whether d passed.
func sleepCtx(ctx context.Context, d time.Duration) bool {
	return d <= 0 || ctxtime.Sleep(ctx, d) == nil
}
