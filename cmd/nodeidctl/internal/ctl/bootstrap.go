package ctl

import (
	"context"
	"log/slog"
	"strings"
	"sync"
	"time"

	"github.com/nodeid/nodeid/lease"
	"github.com/nodeid/nodeid/nodeid"
)

// operatorTaskID names nodeidctl in the provider's configuration; nodeid.Init
// uses it in logs only.
const operatorTaskID = "nodeidctl"

// checkMaxLease refuses a --max-lease-duration no provider can run with, before
// a command that calls nodeid.Init opens the store.
func (c *commonFlags) checkMaxLease(f *flagSet) error {
	if c.maxLease < time.Second {
		return usagef("%s %v is below 1s: no provider runs with a maximum lease below its 1s minimum lease", f.Source("max-lease-duration"), c.maxLease)
	}
	return nil
}

// nodeidConfig returns the provider configuration nodeid.Init runs with: the
// cluster's range of node IDs and layout given (m's), and the expiry flags. The lease timings are
// the defaults, scaled down when --max-lease-duration is below the default
// lease so that the configuration validates, or in read mode the manifest's
// keep-alive (derived from its backstop); Init itself never takes a lease.
func (a *app) nodeidConfig(c *commonFlags, m lease.Manifest) nodeid.Config {
	cfg := nodeid.DefaultConfig()
	cfg.TaskID = operatorTaskID
	cfg.ClusterSize, cfg.FirstNodeID, cfg.Layout = m.ClusterSize, m.FirstNodeID, m.Layout
	cfg.ClockMargin, cfg.MaxLeaseDuration = c.clockMargin, c.maxLease
	if m.KeepAlive.Mode() == lease.KeepAliveRead {
		// The manifest's mode, window and backstop, which a provider must
		// match; its timings derive from the backstop.
		cfg.KeepAlive = lease.KeepAliveRead
		cfg.Window = time.Duration(m.WindowMillis) * time.Millisecond
		cfg.Backstop = time.Duration(m.BackstopMillis) * time.Millisecond
	} else if l := c.maxLease; l < cfg.LeaseDuration {
		cfg.LeaseDuration, cfg.SafetyMargin, cfg.RenewInterval, cfg.RenewDeadline = l, l/4, l/4, l/2
	}
	cfg.Clock = wallClock{Clock: nodeid.SystemClock(0), wall: a.env.Now}
	return cfg
}

// wallClock is the system clock with the operator's wall clock (Env.Now), which
// stamps the manifest's createdAt.
type wallClock struct {
	nodeid.Clock
	wall func() time.Time
}

func (c wallClock) Wall() time.Time { return c.wall() }

// staticPeers hands nodeid.Init the highest versions the bucket has seen, as
// gossip would: a missing object with a version seen was deleted.
type staticPeers map[int]int64

func (p staticPeers) KnownNodes() map[int]int64 { return p }

// noteHandler prints the provider's warnings (why a create or the fill failed,
// a cluster size that differs) as notes on stderr; other levels are dropped,
// since nodeidctl reports what Init did itself.
type noteHandler struct {
	a  *app
	mu *sync.Mutex
}

func (h noteHandler) Enabled(_ context.Context, l slog.Level) bool { return l == slog.LevelWarn }

func (h noteHandler) Handle(_ context.Context, r slog.Record) error {
	var b strings.Builder
	b.WriteString(r.Message)
	r.Attrs(func(at slog.Attr) bool {
		if at.Key == "err" {
			b.WriteString(": " + at.Value.String())
		} else {
			b.WriteString(" " + at.Key + "=" + at.Value.String())
		}
		return true
	})
	h.mu.Lock()
	defer h.mu.Unlock()
	h.a.note("nodeid: %s", b.String())
	return nil
}

// WithAttrs drops the provider's fixed attributes (the task identity).
func (h noteHandler) WithAttrs([]slog.Attr) slog.Handler { return h }
func (h noteHandler) WithGroup(string) slog.Handler      { return h }

// bootstrap runs nodeid.Init with cfg. mv is the manifest as read just before
// (missing, or ok). When lease objects are missing, the highest versions the
// bucket has seen (records and their gossip maps) are read first and given to
// Init as gossip's view: a missing object with a version seen was deleted (in
// a filled cluster, every missing one was), and Init leaves it missing and
// reports it (nodeidctl repair restores it). The result is valid, as far as it
// goes, when Init fails too.
func (a *app) bootstrap(ctx context.Context, st lease.Store, c *commonFlags, cfg nodeid.Config, mv manifestView) (nodeid.InitReport, error) {
	if mv.state == manifestOK {
		peers, err := versionsIfMissing(ctx, st, c, mv.m)
		if err != nil {
			return nodeid.InitReport{}, err
		}
		if peers != nil {
			cfg.Peers = peers
		}
	}
	cfg.Logger = slog.New(noteHandler{a: a, mu: &sync.Mutex{}})
	rep, err := nodeid.Init(ctx, st, cfg)
	return rep, err
}

// versionsIfMissing lists the prefix and, when a lease object of m's range is
// missing, reads every object for the highest versions seen; else it returns nil.
func versionsIfMissing(ctx context.Context, st lease.Store, c *commonFlags, m lease.Manifest) (staticPeers, error) {
	missing, err := missingIn(ctx, st, m)
	if err != nil || len(missing) == 0 {
		return nil, err
	}
	s, err := scan(ctx, st, c.rules())
	if err != nil {
		return nil, err
	}
	perID, _ := s.highestVersions()
	return perID, nil
}

// reportObjects prints what bootstrap created. quiet (or a failed Init, err)
// omits the line saying that nothing needed creating.
func (a *app) reportObjects(r nodeid.InitReport, c *commonFlags, quiet bool, err error) {
	if len(r.Created) > 0 {
		a.out("created %d lease object(s), free: IDs %s", len(r.Created), idRanges(r.Created))
	}
	if len(r.Deleted) > 0 {
		a.out("found %d deleted lease object(s), not recreated: IDs %s", len(r.Deleted), idRanges(r.Deleted))
		a.note("a lease object that existed (the cluster is filled, or a version of it was seen) was deleted by someone; no task takes its ID " +
			"until an operator restores it with a floor confirmed by hand, above every timestamp its last holder may have issued: " +
			"nodeidctl repair --id N --floor MS (its version comes from every record in the bucket)")
	}
	if len(r.Created)+len(r.Deleted) == 0 && !quiet && err == nil && r.Manifest.ClusterSize > 0 {
		a.out("all lease objects %s exist: nothing to create", idRanges(ownIDs(r.Manifest)))
	}
}
