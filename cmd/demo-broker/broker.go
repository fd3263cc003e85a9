package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"sync/atomic"
	"time"

	"github.com/nodeid/nodeid/gossip"
	"github.com/nodeid/nodeid/internal/metrics"
	"github.com/nodeid/nodeid/lease"
	"github.com/nodeid/nodeid/nodeid"
	"github.com/nodeid/nodeid/s3store"
	"github.com/nodeid/nodeid/s3store/s3fake"
	"github.com/nodeid/nodeid/snowflake"
)

// The states of a broker, as /status and nodeid_lease_state report them.
const (
	stateAcquiring = "acquiring"
	stateHeld      = "held"
	stateFenced    = "fenced"
	stateLost      = "lost"
	stateReleased  = "released"
)

// Reasons for /health to answer 503, besides the claim's own errors.
var (
	errAcquiring    = errors.New("acquiring a node ID")
	errShuttingDown = errors.New("shutting down: the node ID is being released")
	errNotValid     = errors.New("the lease was not renewed in time: fenced")
)

// broker is one running demo-broker serve. The fields set during start-up are
// atomics: the HTTP handlers read them from the start.
type broker struct {
	cfg     serveConfig
	log     *slog.Logger // with the task ID
	rawLog  *slog.Logger // without it, for packages that add it themselves
	metrics *metrics.Metrics

	s3srv    *s3fake.Server // the --embedded-s3 server, or nil
	provider *nodeid.Provider

	gossip   atomic.Pointer[gossip.Node]
	gen      atomic.Pointer[snowflake.Generator] // set before claim
	claim    atomic.Pointer[nodeid.Claim]
	gate     atomic.Pointer[gossip.Gate] // readiness gate after taking over an expired lease
	stopping atomic.Bool                 // set first on shutdown: health 503, no more IDs
	issued   atomic.Int64                // IDs handed out
	renewed  chan struct{}               // a renewal succeeded (buffered 1): refresh the id file
	idFileUp bool                        // the id file was written (the floor passed); lifecycle goroutine only

	released chan struct{} // closed when the lifecycle is over (released, lost or never held)
}

func newBroker(cfg serveConfig, log *slog.Logger) *broker {
	b := &broker{cfg: cfg, log: log.With("task", cfg.taskID), rawLog: log, released: make(chan struct{}), renewed: make(chan struct{}, 1)}
	b.metrics = b.newMetrics()
	return b
}

// state returns the broker's state and, unless it is held, why it serves no IDs.
func (b *broker) state() (string, error) {
	c := b.claim.Load()
	if c == nil {
		return stateAcquiring, errAcquiring
	}
	if err := c.Err(); err != nil {
		if errors.Is(err, nodeid.ErrClosed) {
			return stateReleased, err
		}
		return stateLost, err
	}
	if b.stopping.Load() {
		return stateFenced, errShuttingDown
	}
	if !c.Valid() {
		return stateFenced, errNotValid
	}
	return stateHeld, nil
}

// check is the /health checker: nil only while the lease is held and valid.
func (b *broker) check() error {
	_, err := b.state()
	return err
}

// readyCheck is the /ready checker: health, and the gossip readiness gate.
func (b *broker) readyCheck() error {
	if err := b.check(); err != nil {
		return err
	}
	if g := b.gate.Load(); g != nil {
		return g.Check()
	}
	return nil
}

// acquire opens the store, starts gossip and takes a node ID.
func (b *broker) acquire(ctx context.Context, spawn func(func() error)) (*nodeid.Claim, error) {
	if b.cfg.idFile != "" {
		if err := checkIDFileDir(b.cfg.idFile); err != nil {
			return nil, err
		}
		// A file left by an earlier process of this task names an ID not held.
		if removed, err := removeIDFile(b.cfg.idFile); err != nil {
			return nil, err
		} else if removed {
			b.log.Warn("removed an id file left by an earlier process", "path", b.cfg.idFile)
		}
	}
	store, err := b.openStore(ctx)
	if err != nil {
		return nil, err
	}
	node, err := b.startGossip()
	if err != nil {
		return nil, err
	}
	pc := b.providerConfig()
	if node != nil {
		pc.Peers = node
		b.gossip.Store(node)
		spawn(func() error {
			<-ctx.Done()
			<-b.released // leave only after the release
			if err := node.Close(); err != nil {
				b.log.Warn("gossip did not close cleanly", "err", err)
			}
			return nil
		})
	}
	p, err := nodeid.New(b.metrics.Store(store), pc)
	if err != nil {
		return nil, usagef("%v (flags --cluster-size, --lease-duration, --renew-interval, --renew-deadline, --safety-margin, --max-lease-duration)", err)
	}
	b.provider = p
	b.log.Info("acquiring a node ID", "bucket", b.cfg.bucket, "prefix", b.cfg.prefix, "clusterSize", b.cfg.clusterSize,
		"leaseDuration", b.cfg.leaseDuration.String())
	claim, err := p.Acquire(ctx)
	if err != nil {
		return nil, fmt.Errorf("acquire a node ID: %w", err)
	}
	return claim, nil
}

// openStore starts the embedded S3 if asked, opens the S3 store and checks it.
func (b *broker) openStore(ctx context.Context) (lease.Store, error) {
	sc := s3store.DefaultConfig()
	sc.Bucket, sc.Prefix, sc.Region = b.cfg.bucket, b.cfg.prefix, b.cfg.region
	sc.Endpoint, sc.UsePathStyle = b.cfg.s3Endpoint, b.cfg.s3PathStyle
	if b.cfg.embeddedS3 != "" {
		srv, err := s3fake.Start(s3fake.Config{Addr: b.cfg.embeddedS3, Bucket: b.cfg.bucket, Logger: b.log.With("component", "embedded-s3")})
		if err != nil {
			return nil, fmt.Errorf("--embedded-s3 %s: %w", b.cfg.embeddedS3, err)
		}
		b.s3srv = srv
		b.log.Info("embedded S3 listening", "endpoint", srv.URL(), "bucket", srv.Bucket(),
			"credentials", "any (set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY to anything in brokers that use it)")
		sc = srv.StoreConfig(b.cfg.prefix)
	}
	sc.Logger = b.log.With("component", "s3store")
	store, err := s3store.New(ctx, sc)
	if err != nil {
		return nil, err
	}
	if err := store.Check(ctx); err != nil {
		return nil, err
	}
	return store, nil
}

// startGossip starts the gossip node, or returns nil when --gossip-addr is
// empty. On a loopback address it uses memberlist's local timings.
func (b *broker) startGossip() (*gossip.Node, error) {
	if !b.cfg.gossipOn() {
		return nil, nil
	}
	gc := gossip.DefaultConfig()
	if ip := net.ParseIP(b.cfg.gossipHost); ip != nil && ip.IsLoopback() {
		gc = gossip.DefaultLocalConfig()
	}
	gc.Name = b.cfg.taskID
	gc.BindAddr, gc.BindPort = b.cfg.gossipHost, b.cfg.gossipPort
	gc.Join = b.cfg.join
	gc.SecretKey = b.cfg.gossipKey
	gc.Logger = b.log.With("component", "gossip")
	gc.OnConflict = func(id int, version int64) {
		if c := b.claim.Load(); c != nil && c.NodeID() == id {
			c.ObserveVersion(version) // fences at once when higher
		}
	}
	node, err := gossip.Start(gc)
	if err != nil {
		return nil, fmt.Errorf("--gossip-addr %s:%d: %w", b.cfg.gossipHost, b.cfg.gossipPort, err)
	}
	b.log.Info("gossip listening", "addr", node.Addr(), "join", b.cfg.join)
	return node, nil
}

// providerConfig maps the flags onto nodeid.Config.
func (b *broker) providerConfig() nodeid.Config {
	c := b.cfg
	pc := nodeid.DefaultConfig()
	pc.TaskID, pc.ClusterSize, pc.Order = c.taskID, c.clusterSize, c.order
	pc.LeaseDuration, pc.RenewInterval, pc.RenewDeadline = c.leaseDuration, c.renewInterval, c.renewDeadline
	pc.SafetyMargin, pc.ClockMargin, pc.MaxLeaseDuration = c.safetyMargin, c.clockMargin, c.maxLeaseDuration
	pc.AcquireTimeout = c.acquireTimeout
	pc.StoreTimeout = min(pc.StoreTimeout, c.renewDeadline/2)
	pc.Clock = nodeid.SystemClock(c.clockOffset)
	pc.Logger = b.rawLog.With("component", "nodeid") // it adds the task itself
	pc.Observer = renewSignal{Observer: b.metrics, renewed: b.renewed}
	return pc
}

// renewSignal passes the provider's events on to the metrics and signals each
// successful renewal on renewed, without blocking.
type renewSignal struct {
	nodeid.Observer
	renewed chan<- struct{}
}

// Renewed implements nodeid.Observer.
func (s renewSignal) Renewed(id int, latency time.Duration) {
	s.Observer.Renewed(id, latency)
	select {
	case s.renewed <- struct{}{}:
	default:
	}
}

// activate builds the generator for claim and starts serving: /health turns
// 200, gossip advertises the claim, the id file is written (unless ctx ends or
// the claim is lost first: watch then deals with it).
func (b *broker) activate(ctx context.Context, claim *nodeid.Claim) error {
	pc := b.provider.Config()
	l := pc.Layout
	sc := snowflake.Config{
		Layout: snowflake.Layout{TimestampBits: l.TimestampBits, NodeBits: l.NodeBits, SequenceBits: l.SequenceBits, EpochMs: l.EpochMs},
		NodeID: int64(claim.NodeID()),
		// The claim's monotonic fence, and the broker's own: stopping fences
		// before the release is written.
		Fence:              snowflake.FenceFunc(func() bool { return !b.stopping.Load() && claim.Valid() }),
		FloorMs:            claim.Floor(),
		Reservation:        claim.Reservation,
		MaxClockWait:       pc.MaxClockWait,
		MaxReservationWait: min(5*time.Second, b.cfg.renewDeadline),
	}
	if b.cfg.clockOffset != 0 {
		sc.Clock = shiftedClock{base: snowflake.NewSystemClock(), offset: b.cfg.clockOffset}
	}
	gen, err := snowflake.New(sc)
	if err != nil {
		return fmt.Errorf("snowflake generator for node %d: %w", claim.NodeID(), err)
	}
	claim.SetIssuedFunc(func() int64 {
		last := gen.Stop()
		if b.cfg.idFile != "" {
			// The application may have used the ID with its own clock until
			// the file went away: never lower the reservation below now.
			last = max(last, pc.Clock.Wall().UnixMilli())
		}
		return last
	})
	b.gen.Store(gen)
	b.claim.Store(claim) // from here /health is 200
	if node := b.gossip.Load(); node != nil {
		if err := node.SetClaim(claim.NodeID(), claim.Version()); err != nil {
			b.log.Warn("gossip: could not advertise the node ID", "err", err)
		}
		if claim.TookOverExpired() {
			b.gate.Store(node.StartGate(claim.NodeID(), claim.Version(), 0, b.cfg.readyTimeout))
		}
	}
	b.log.Info("serving IDs", "nodeId", claim.NodeID(), "version", claim.Version(), "floorMs", claim.Floor(),
		"tookOverExpired", claim.TookOverExpired())
	if b.cfg.idFile != "" {
		return b.writeIDFile(ctx, claim, pc.Clock)
	}
	return nil
}

// writeIDFile writes --id-file once this task's wall clock is past the claim's
// floor (the predecessor's reservation), so that an application generating
// IDs itself with the same clock never repeats one of its predecessor's.
func (b *broker) writeIDFile(ctx context.Context, claim *nodeid.Claim, clock nodeid.Clock) error {
	for {
		ahead := time.Duration(claim.Floor()-clock.Wall().UnixMilli()+1) * time.Millisecond
		if ahead <= 0 {
			break
		}
		b.log.Info("waiting for the wall clock to pass the node ID's floor before writing the id file", "wait", ahead.String())
		select {
		case <-claim.Done():
			return nil // watch reports the loss
		case <-ctx.Done():
			return nil // watch releases the claim
		case <-time.After(ahead):
		}
	}
	c := idFileFor(claim, clock)
	if err := writeIDFile(b.cfg.idFile, c); err != nil {
		return err
	}
	b.idFileUp = true
	b.log.Info("id file written", "path", b.cfg.idFile, "nodeId", c.NodeID, "version", c.Version, "validUntilMs", c.ValidUntilMs)
	return nil
}

// refreshIDFile rewrites --id-file after a renewal, with the later
// validUntilMs. A failure only logs: the file on disk expires earlier, which
// stops the application early, never late.
func (b *broker) refreshIDFile(claim *nodeid.Claim) {
	if !b.idFileUp { // not written yet: activate was still waiting for the floor
		return
	}
	c := idFileFor(claim, b.provider.Config().Clock)
	if err := writeIDFile(b.cfg.idFile, c); err != nil {
		b.log.Error("could not refresh the id file: the application will stop at its old validUntilMs", "path", b.cfg.idFile, "err", err)
		return
	}
	b.log.Debug("id file refreshed", "validUntilMs", c.ValidUntilMs)
}

// shiftedClock is a snowflake clock shifted by --debug-clock-offset.
type shiftedClock struct {
	base   snowflake.Clock
	offset time.Duration
}

func (c shiftedClock) Now() time.Time        { return c.base.Now().Add(c.offset) }
func (c shiftedClock) Sleep(d time.Duration) { c.base.Sleep(d) }
