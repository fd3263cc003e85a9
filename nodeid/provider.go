package nodeid

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"log/slog"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nodeid/nodeid/lease"
)

// Provider leases node IDs from a lease.Store. It is safe for concurrent use; one
// Provider usually serves one Claim for the life of the process.
type Provider struct {
	store   lease.Store
	cfg     Config
	t       Timings // cfg resolved: derived timings are read here, never from cfg
	log     *slog.Logger
	clock   Clock
	suspend SuspendClock // clock, when it counts suspended time: claims fence on it too
	base    time.Time    // monotonic origin of claim deadlines

	randMu sync.Mutex
	rand   *rand.Rand

	deletedMu   sync.Mutex
	deletedSeen map[int]bool // the deleted lease objects reported (noteDeleted)

	// plainReads: the store answered a conditional read with a 304 that does
	// not show the ETag, so every claim reads with plain GETs since.
	plainReads atomic.Bool

	badPeersMu sync.Mutex
	badPeers   []int // the node IDs of the gossip entries last reported (knownNodes)

	clockMu sync.Mutex // guards storeZero and manifest
	// storeZero is a lower bound of the store's clock at base (observeDate):
	// it reads at least storeZero + (t - base) at local instant t.
	storeZero time.Time
	manifest  *cachedManifest // the last manifest read and checked (cachedView)

	rules rules // productionRules unless a test or mutation build chose others
}

// New returns a Provider over store after validating cfg (see Config).
func New(store lease.Store, cfg Config) (*Provider, error) {
	if store == nil {
		return nil, errors.New("nodeid: nil store")
	}
	if err := cfg.ValidateFor(store); err != nil {
		return nil, err
	}
	cfg.Clock = cmp.Or(cfg.Clock, SystemClock(0))
	cfg.Logger = cmp.Or(cfg.Logger, slog.New(slog.DiscardHandler))
	cfg.Observer = cmp.Or[Observer](cfg.Observer, NopObserver{})
	if _, ok := store.(lease.ConditionalReader); cfg.readMode() && !ok {
		return nil, fmt.Errorf("nodeid: KeepAlive %q needs a store with conditional reads (lease.ConditionalReader); %s has none", KeepAliveRead, lease.Describe(store))
	}
	h := fnv.New64a()
	_, _ = h.Write([]byte(cfg.TaskID))
	seed := h.Sum64()
	p := &Provider{
		store: store, cfg: cfg, t: cfg.Timings(), clock: cfg.Clock, base: cfg.Clock.Now(),
		log:         cfg.Logger.With("task", cfg.TaskID),
		rand:        rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15)),
		deletedSeen: map[int]bool{},
	}
	p.suspend, _ = cfg.Clock.(SuspendClock)
	p.rules = productionRules()
	switch {
	case cfg.rules != nil:
		p.rules = *cfg.rules
	case mutant != nil:
		p.rules = *mutant
		p.log.Warn("SAFETY RULE BROKEN ON PURPOSE (nodeid_mutation build)", slog.String("mutation", mutation))
	}
	p.cfg.IssuesNoIDs = cfg.IssuesNoIDs && !p.rules.electionFloors
	return p, nil
}

// Config returns the configuration New was given, with its defaults for a
// nil Clock, Logger and Observer filled in; Timings has the timings resolved.
func (p *Provider) Config() Config { return p.cfg }

// Timings returns the timings this Provider runs by: Config().Timings().
func (p *Provider) Timings() Timings { return p.t }

// Acquire bootstraps the cluster if needed and takes a free or expired node ID,
// its claim configured by opts; the Claim renews itself until it is closed or
// lost. When none is free it retries with jittered backoff until
// Config.AcquireTimeout, then returns an error wrapping ErrClusterFull; it
// returns at once on an error retrying cannot fix (a store error matching
// lease.ErrMisconfigured, a manifest that does not match the configuration, a
// corrupt manifest). An ID taken with a floor far ahead is returned once this
// task's clock nears it, or released when ctx ends first (Config.MaxClockWait).
func (p *Provider) Acquire(ctx context.Context, opts ...ClaimOption) (*Claim, error) {
	start := p.clock.Now()
	pace := p.newBackoff(p.cfg.AcquireBackoff, 8*p.cfg.AcquireBackoff)
	w := p.newWatched()
	for _, opt := range opts {
		opt(&w.opts)
	}
	lastLook := start
	for round := 1; ; round++ {
		if err := p.awaitFreed(ctx, start, lastLook, round > 1); err != nil {
			if ctx.Err() != nil {
				return nil, fmt.Errorf("nodeid: acquire: %w", ctx.Err())
			}
			return nil, err
		}
		freed := p.freedSignal()
		lastLook = p.clock.Now()
		c, err := p.acquireRound(ctx, w)
		if c != nil {
			if err = p.awaitFloor(ctx, c, round); err == nil {
				p.cfg.Observer.Acquired(c.id, c.version, p.clock.Now().Sub(start))
				return c, nil
			}
		}
		if errors.Is(err, ErrManifestMismatch) || errors.Is(err, ErrClockBehind) || errors.Is(err, lease.ErrCorrupt) ||
			errors.Is(err, lease.ErrLivenessUnbound) || errors.Is(err, lease.ErrMisconfigured) { // retrying cannot fix these
			return nil, err
		}
		if ctx.Err() != nil {
			return nil, fmt.Errorf("nodeid: acquire: %w", ctx.Err())
		}
		wait := pace.next()
		// Look again as soon as a lease seen held can be found expired, if
		// that is sooner: a dead holder's ID is taken without waiting out the
		// backoff (the take is still judged on a fresh read).
		if at, ok := p.localWhen(w.soonest); ok {
			if d := at.Sub(p.clock.Now()); d < wait {
				wait = max(d, p.cfg.AcquireBackoff/8)
			}
		}
		if p.clock.Now().Add(wait).Sub(start) > p.cfg.AcquireTimeout {
			if errors.Is(err, ErrClusterFull) {
				return nil, fmt.Errorf("%w after %d rounds in %v: %s", err, round, p.clock.Now().Sub(start).Round(time.Millisecond), p.clusterFullHint())
			}
			return nil, fmt.Errorf("nodeid: acquire failed after %d rounds: %w", round, err)
		}
		p.log.Debug("no node ID acquired, retrying", "round", round, "wait", wait, "err", err)
		if o, ok := p.cfg.Observer.(WaitObserver); ok {
			o.AcquireWaiting(round, err, wait)
		}
		if err := sleepOrWake(ctx, p.clock, wait, freed); err != nil {
			return nil, fmt.Errorf("nodeid: acquire: %w", err)
		}
	}
}

// acquireRound bootstraps and makes one pass over the candidates; with
// PeerHints, it first tries an ID gossip freed (takeFreed).
func (p *Provider) acquireRound(ctx context.Context, w *watched) (*Claim, error) {
	if c, err := p.takeFreed(ctx, w); c != nil || err != nil {
		return c, err
	}
	view, err := p.bootstrap(ctx)
	if err != nil {
		return nil, err
	}
	w.soonest = time.Time{}
	return p.takeFirst(ctx, view, w)
}

// observeDate records the Date of a response received at local instant recv
// (Clock.Now): the store's clock read at least date at recv. It only
// schedules looks (localWhen), never decides a take.
func (p *Provider) observeDate(date, recv time.Time) {
	if date.IsZero() {
		return
	}
	z := date.Add(-recv.Sub(p.base))
	p.clockMu.Lock()
	defer p.clockMu.Unlock()
	if z.After(p.storeZero) {
		p.storeZero = z
	}
}

// localWhen returns the local instant (Clock.Now) by which the store's clock
// has surely reached t; false when t is zero or no Date was observed yet.
func (p *Provider) localWhen(t time.Time) (time.Time, bool) {
	p.clockMu.Lock()
	z := p.storeZero
	p.clockMu.Unlock()
	if t.IsZero() || z.IsZero() {
		return time.Time{}, false
	}
	return p.base.Add(t.Sub(z)), true
}
