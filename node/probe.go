package node

import (
	"context"
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/nodeid/nodeid/internal/ctxtime"
	"github.com/nodeid/nodeid/lease"
)

// StoreProbeStatus is the result of the store probe (lease.Probe) the node ran
// before taking an ID, as GET /status shows it.
type StoreProbeStatus struct {
	// OK is true when the store refused both conditional writes it should
	// refuse.
	OK bool `json:"ok"`
	// Error says why the probe failed or was inconclusive, when it was.
	Error string `json:"error,omitempty"`
	// ClockOffsetMs is the store's clock minus this host's wall clock (the
	// response Date against the receive time), in ms; positive: the store is
	// ahead. Whole-second resolution.
	ClockOffsetMs int64 `json:"clockOffsetMs"`
	// ClockUncertaintyMs is the round trip of the response ClockOffsetMs came
	// from, in ms.
	ClockUncertaintyMs int64 `json:"clockUncertaintyMs"`
	// DateSeen and LastModifiedSeen report whether the store's responses
	// carried the Date and Last-Modified headers expiry is judged by.
	DateSeen         bool `json:"dateSeen"`
	LastModifiedSeen bool `json:"lastModifiedSeen"`
}

// Backoff between inconclusive store probes.
const (
	probeRetryMin = 100 * time.Millisecond
	probeRetryMax = 2 * time.Second
)

// probeOutcome is the recorded result of the probe.
type probeOutcome struct {
	result lease.ProbeResult
	err    error
}

// runProbe probes the store, unless Config.SkipProbe, and records the result.
// A store that ignores a condition stops the node at once (the error wraps
// lease.ErrConditionIgnored), and so does a store error that retrying cannot
// fix (lease.ErrMisconfigured); an inconclusive probe (a lost answer, a 5xx) is
// retried with backoff for up to Provider.AcquireTimeout, as Acquire retries,
// and then stops the node (the error wraps lease.ErrProbeInconclusive).
func (n *Node) runProbe(ctx context.Context) error {
	if n.cfg.SkipProbe {
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, n.cfg.Provider.AcquireTimeout)
	defer cancel()
	var (
		r   lease.ProbeResult
		err error
	)
	for wait := probeRetryMin; ; wait = min(2*wait, probeRetryMax) {
		r, err = lease.Probe(ctx, n.store)
		n.probe.Store(&probeOutcome{result: r, err: err})
		if err == nil || !errors.Is(err, lease.ErrProbeInconclusive) || ctx.Err() != nil {
			break
		}
		n.log.Warn("store probe inconclusive: retrying", "err", err, "in", wait.String())
		if ctxtime.Sleep(ctx, wait) != nil {
			break
		}
	}
	if err != nil {
		return fmt.Errorf("store probe of %s: %w", lease.Describe(n.store), err)
	}
	if err := n.probeReads(ctx, r); err != nil {
		return err
	}
	n.log.Info("store probe passed", "clockOffset", r.ClockOffset.String(), "roundTrip", r.ClockUncertainty.String(),
		"dateSeen", r.DateSeen, "lastModifiedSeen", r.LastModifiedSeen)
	return nil
}

// probeReads runs lease.ProbeReads when the provider keeps its lease alive
// by reads (docs/evidence/design.md section 11): a store whose reads may miss a
// completed write (a cache in front of it) stops the node (one whose 304
// answers do not show the ETag is probed with plain GETs, which its holders
// then send); an inconclusive probe is retried as
// runProbe retries. The second client is Config.ReadProbeStore (the broker
// opens one), else the node's own store: a cache on its path is found, a
// replica only another connection reaches is not. The failure is recorded
// as the probe's (GET /status, store_probe_ok).
func (n *Node) probeReads(ctx context.Context, r lease.ProbeResult) error {
	if n.cfg.Provider.KeepAlive.Mode() != lease.KeepAliveRead {
		return nil
	}
	var err error
	for wait := probeRetryMin; ; wait = min(2*wait, probeRetryMax) {
		var rr lease.ReadsProbeResult
		rr, err = lease.ProbeReads(ctx, n.store, n.readProbeStore())
		if err == nil && rr.PlainReads {
			n.log.Info("read probe: the store's 304s do not show the ETag; holders read with plain GETs, which passed the probe")
		}
		if err == nil || !errors.Is(err, lease.ErrProbeInconclusive) || ctx.Err() != nil {
			break
		}
		n.log.Warn("read probe inconclusive: retrying", "err", err, "in", wait.String())
		if ctxtime.Sleep(ctx, wait) != nil {
			break
		}
	}
	if err != nil {
		err = fmt.Errorf("read probe of %s (keep-alive by reads needs reads that show every completed write): %w", lease.Describe(n.store), err)
		n.probe.Store(&probeOutcome{result: r, err: err})
	}
	return err
}

// readProbeStore is the read probe's other client: Config.ReadProbeStore,
// else the node's own store.
func (n *Node) readProbeStore() lease.Store {
	if s := n.cfg.ReadProbeStore; s != nil {
		return s
	}
	return n.store
}

// probeStatus returns the /status view of the probe, nil before it ran or when
// it is skipped.
func (n *Node) probeStatus() *StoreProbeStatus {
	p := n.probe.Load()
	if p == nil {
		return nil
	}
	s := &StoreProbeStatus{
		OK:                 p.err == nil,
		ClockOffsetMs:      p.result.ClockOffset.Milliseconds(),
		ClockUncertaintyMs: p.result.ClockUncertainty.Milliseconds(),
		DateSeen:           p.result.DateSeen,
		LastModifiedSeen:   p.result.LastModifiedSeen,
	}
	if p.err != nil {
		s.Error = p.err.Error()
	}
	return s
}

// probeCollectors returns the probe's metrics: nodeid_store_probe_ok and
// nodeid_store_clock_offset_seconds, NaN before the probe ran (or when it is
// skipped, or the store sent no Date).
func probeCollectors(n *Node) []prometheus.Collector {
	return []prometheus.Collector{
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Namespace: namespace, Name: "store_probe_ok",
			Help: "1 when the store probe at start-up found If-None-Match and If-Match honoured, 0 when it did not or could not tell; NaN before it ran or when skipped."},
			func() float64 {
				switch p := n.probe.Load(); {
				case p == nil:
					return math.NaN()
				case p.err != nil:
					return 0
				}
				return 1
			}),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Namespace: namespace, Name: "store_clock_offset_seconds",
			Help: "The store's clock minus this host's (response Date against receive time, whole-second resolution) as the store probe measured it; NaN when unknown."},
			func() float64 {
				p := n.probe.Load()
				if p == nil || !p.result.DateSeen {
					return math.NaN()
				}
				return p.result.ClockOffset.Seconds()
			}),
	}
}
