package node

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/nodeid/nodeid/lease"
	"github.com/nodeid/nodeid/nodeid"
)

// namespace prefixes every metric name.
const namespace = "nodeid"

// metrics is the set of a node's metrics. Its methods are safe for concurrent
// use.
type metrics struct {
	gatherer prometheus.Gatherer // nil: /metrics serves nothing

	nodeID, version prometheus.Gauge

	acquisitions, renewals, renewFailures prometheus.Counter
	jeopardies, recoveries                prometheus.Counter
	lost, released, anomalies             prometheus.Counter
	expiredTakeovers                      prometheus.Counter
	acquireDuration, renewLatency         prometheus.Histogram

	readsProved                                         prometheus.Counter // read mode
	readLatency                                         prometheus.Histogram
	challenges, challengesConfirmed, challengesAnswered prometheus.Counter

	storeRequests *prometheus.CounterVec
	storeDuration *prometheus.HistogramVec

	idsIssued, fencedRefusals prometheus.Counter
}

var (
	_ nodeid.ReadObserver      = (*metrics)(nil)
	_ nodeid.ChallengeObserver = (*metrics)(nil)
)

// newMetrics registers the node's metrics on reg; nil: a registry of their
// own, with the Go runtime and process collectors.
func newMetrics(reg prometheus.Registerer, n *Node) (*metrics, error) {
	m := &metrics{}
	if reg == nil {
		r := prometheus.NewRegistry()
		r.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
		reg = r
	}
	if g, ok := reg.(prometheus.Gatherer); ok {
		m.gatherer = g
	}
	f := factory{reg: reg}
	m.nodeID = f.gauge("node_id", "The node ID this node holds or last held; -1 before it holds one.")
	m.version = f.gauge("node_version", "The version (fencing token) of the node ID this node holds or last held; 0 before it holds one.")
	m.acquisitions = f.counter("lease_acquisitions_total", "Node ID leases taken.")
	m.renewals = f.counter("lease_renewals_total", "Successful lease renewals.")
	m.renewFailures = f.counter("lease_renewal_failures_total", "Failed lease renewal attempts; they are retried until the renew deadline.")
	m.jeopardies = f.counter("lease_jeopardies_total",
		"Times the lease's renewals gave up with no evidence of another writer: fenced, renewing on its last write (see nodeid_lease_jeopardy).")
	m.recoveries = f.counter("lease_recoveries_total",
		"Times a write on the lease's last ETag landed after its fence fell, and the node issued IDs again (same version).")
	f.register(prometheus.NewGaugeFunc(prometheus.GaugeOpts{Namespace: namespace, Name: "lease_jeopardy",
		Help: "1 while the lease is in jeopardy: fenced (no IDs, health 503), renewing on its last write until it recovers or the loss grace ends; else 0."},
		func() float64 {
			if s, _ := n.state(); s == StateJeopardy {
				return 1
			}
			return 0
		}))
	m.lost = f.counter("lease_lost_total", "Leases that ended without a release (taken over, renewal failed past its deadline, or a higher version seen in gossip).")
	m.released = f.counter("lease_released_total", "Leases released on shutdown.")
	m.anomalies = f.counter("lease_anomalies_total", "Lease objects found corrupt or otherwise not to be taken (see the log and nodeidctl status).")
	m.expiredTakeovers = f.counter("lease_expired_takeovers_total",
		"Leases this node took over after they expired: their previous holder died, froze or lost the lease without a release (0 or 1 per node).")
	f.register(prometheus.NewGaugeFunc(prometheus.GaugeOpts{Namespace: namespace, Name: "cluster_size",
		Help: "The number of node IDs (Provider.ClusterSize) this node takes one from."},
		func() float64 { return float64(n.cfg.Provider.ClusterSize) }))
	m.acquireDuration = f.histogram("lease_acquire_duration_seconds", "Time taken to acquire a node ID, bootstrap and retries included.",
		[]float64{.01, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60})
	m.renewLatency = f.histogram("lease_renew_duration_seconds", "Latency of successful lease renewals (one conditional write, or more with read-backs).",
		[]float64{.005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5})
	m.readsProved = f.counter("lease_reads_proved_total",
		"Read mode: conditional reads of the lease object that showed it unchanged and kept the lease valid without a write.")
	m.readLatency = f.histogram("lease_read_duration_seconds", "Read mode: latency of the reads that proved the lease (one conditional GET).",
		[]float64{.005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5})
	m.challenges = f.counter("lease_challenges_total",
		"Read mode: challenges this node wrote on another task's held lease (to take its node ID a window later unless the holder answers).")
	m.challengesConfirmed = f.counter("lease_challenges_confirmed_total",
		"Read mode: challenges of this node whose confirm landed too (the node ID may be taken a window later unless the holder answers).")
	m.challengesAnswered = f.counter("lease_challenges_answered_total",
		"Read mode: challenges (or confirms) of this node's own lease that it answered with a write: the lease held.")
	m.storeRequests = prometheus.NewCounterVec(prometheus.CounterOpts{
		Namespace: namespace, Name: "s3_requests_total",
		Help: "Lease store requests by operation (list, get, create, update) and outcome (ok, not_found, not_modified, precondition_failed, conflict, unknown_outcome, error).",
	}, []string{"operation", "outcome"})
	m.storeDuration = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Namespace: namespace, Name: "s3_request_duration_seconds",
		Help:    "Lease store request latency by operation.",
		Buckets: []float64{.005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5},
	}, []string{"operation"})
	f.register(m.storeRequests, m.storeDuration)
	m.idsIssued = f.counter("ids_issued_total", "Snowflake IDs handed out.")
	m.fencedRefusals = f.counter("ids_fenced_refusals_total", "ID requests refused because the node held no valid lease.")
	f.register(stateCollector{n: n}, foreignCollector{n: n}, electionCollector{n: n})
	f.register(probeCollectors(n)...)
	if f.err != nil {
		return nil, fmt.Errorf("node: register metrics: %w", f.err)
	}
	m.nodeID.Set(-1)
	return m, nil
}

// handler returns the /metrics handler, or nil when the registerer the node
// was given cannot be gathered.
func (m *metrics) handler() http.Handler {
	if m.gatherer == nil {
		return nil
	}
	return promhttp.HandlerFor(m.gatherer, promhttp.HandlerOpts{})
}

// Acquired implements nodeid.Observer.
func (m *metrics) Acquired(id int, version int64, took time.Duration) {
	m.nodeID.Set(float64(id))
	m.version.Set(float64(version))
	m.acquisitions.Inc()
	m.acquireDuration.Observe(took.Seconds())
}

// Renewed implements nodeid.Observer.
func (m *metrics) Renewed(_ int, latency time.Duration) {
	m.renewals.Inc()
	m.renewLatency.Observe(latency.Seconds())
}

// RenewFailed implements nodeid.Observer.
func (m *metrics) RenewFailed(int, error) { m.renewFailures.Inc() }

// Jeopardy implements nodeid.Observer.
func (m *metrics) Jeopardy(int, error) { m.jeopardies.Inc() }

// Recovered implements nodeid.Observer.
func (m *metrics) Recovered(int, time.Duration) { m.recoveries.Inc() }

// Lost implements nodeid.Observer.
func (m *metrics) Lost(int, error) { m.lost.Inc() }

// Released implements nodeid.Observer.
func (m *metrics) Released(int) { m.released.Inc() }

// Anomaly implements nodeid.Observer.
func (m *metrics) Anomaly(string, error) { m.anomalies.Inc() }

// ReadProved implements nodeid.ReadObserver.
func (m *metrics) ReadProved(_ int, latency time.Duration) {
	m.readsProved.Inc()
	m.readLatency.Observe(latency.Seconds())
}

// Challenged implements nodeid.ChallengeObserver.
func (m *metrics) Challenged(_ int, _ string, confirmed bool) {
	m.challenges.Inc()
	if confirmed {
		m.challengesConfirmed.Inc()
	}
}

// Answered implements nodeid.ChallengeObserver.
func (m *metrics) Answered(int) { m.challengesAnswered.Inc() }

// factory makes and registers single metrics, keeping the first error.
type factory struct {
	reg prometheus.Registerer
	err error
}

func (f *factory) register(cs ...prometheus.Collector) {
	for _, c := range cs {
		if err := f.reg.Register(c); err != nil && f.err == nil {
			f.err = err
		}
	}
}

func (f *factory) gauge(name, help string) prometheus.Gauge {
	g := prometheus.NewGauge(prometheus.GaugeOpts{Namespace: namespace, Name: name, Help: help})
	f.register(g)
	return g
}

func (f *factory) counter(name, help string) prometheus.Counter {
	c := prometheus.NewCounter(prometheus.CounterOpts{Namespace: namespace, Name: name, Help: help})
	f.register(c)
	return c
}

func (f *factory) histogram(name, help string, buckets []float64) prometheus.Histogram {
	h := prometheus.NewHistogram(prometheus.HistogramOpts{Namespace: namespace, Name: name, Help: help, Buckets: buckets})
	f.register(h)
	return h
}

// stateCollector reports nodeid_lease_state and nodeid_ids_stalled at scrape
// time, from the node's own view, so that they never lag a transition.
type stateCollector struct{ n *Node }

var (
	stateDesc = prometheus.NewDesc(namespace+"_lease_state",
		"The node's lease state: 1 for the current state, 0 for the others.", []string{"state"}, nil)
	stalledDesc = prometheus.NewDesc(namespace+"_ids_stalled",
		"1 while the generator has failed to issue IDs for longer than the node's MaxIssueStall (health fails), else 0.", nil, nil)
)

func (c stateCollector) Describe(ch chan<- *prometheus.Desc) { ch <- stateDesc; ch <- stalledDesc }

func (c stateCollector) Collect(ch chan<- prometheus.Metric) {
	cur, _ := c.n.state()
	for _, s := range States {
		v := 0.0
		if s == cur {
			v = 1
		}
		ch <- prometheus.MustNewConstMetric(stateDesc, prometheus.GaugeValue, v, s)
	}
	stalled := 0.0
	if c.n.stallErr() != nil {
		stalled = 1
	}
	ch <- prometheus.MustNewConstMetric(stalledDesc, prometheus.GaugeValue, stalled)
}

// Outcomes of a store request, the values of the outcome label.
const (
	outcomeOK                 = "ok"
	outcomeNotFound           = "not_found"
	outcomeNotModified        = "not_modified"
	outcomePreconditionFailed = "precondition_failed"
	outcomeConflict           = "conflict"
	outcomeUnknown            = "unknown_outcome"
	outcomeError              = "error"
)

// outcome classifies the error of a store request.
func outcome(err error) string {
	switch {
	case err == nil:
		return outcomeOK
	case errors.Is(err, lease.ErrNotFound):
		return outcomeNotFound
	case errors.Is(err, lease.ErrNotModified):
		return outcomeNotModified
	case errors.Is(err, lease.ErrPreconditionFailed):
		return outcomePreconditionFailed
	case errors.Is(err, lease.ErrConflict):
		return outcomeConflict
	case errors.Is(err, lease.ErrUnknownOutcome):
		return outcomeUnknown
	default:
		return outcomeError
	}
}

// Store returns s wrapped so that every request is counted in
// nodeid_s3_requests_total and timed in nodeid_s3_request_duration_seconds. The
// wrapper changes no result.
func (m *metrics) Store(s lease.Store) lease.Store { return &countedStore{next: s, m: m} }

type countedStore struct {
	next lease.Store
	m    *metrics
}

func (s *countedStore) observe(op string, start time.Time, err error) {
	s.m.storeDuration.WithLabelValues(op).Observe(time.Since(start).Seconds())
	s.m.storeRequests.WithLabelValues(op, outcome(err)).Inc()
}

func (s *countedStore) List(ctx context.Context) (lease.Listing, error) {
	start := time.Now()
	l, err := s.next.List(ctx)
	s.observe("list", start, err)
	return l, err
}

func (s *countedStore) Get(ctx context.Context, key string) ([]byte, lease.Meta, error) {
	start := time.Now()
	b, meta, err := s.next.Get(ctx, key)
	s.observe("get", start, err)
	return b, meta, err
}

// GetIfChanged implements lease.ConditionalReader (lease.GetIfChanged on the
// wrapped store), counted as a get: it is one GET.
func (s *countedStore) GetIfChanged(ctx context.Context, key, etag string) ([]byte, lease.Meta, error) {
	start := time.Now()
	b, meta, err := lease.GetIfChanged(ctx, s.next, key, etag)
	s.observe("get", start, err)
	return b, meta, err
}

func (s *countedStore) Create(ctx context.Context, key string, body []byte) (lease.Meta, error) {
	start := time.Now()
	meta, err := s.next.Create(ctx, key, body)
	s.observe("create", start, err)
	return meta, err
}

func (s *countedStore) Update(ctx context.Context, key string, body []byte, etag string) (lease.Meta, error) {
	start := time.Now()
	meta, err := s.next.Update(ctx, key, body, etag)
	s.observe("update", start, err)
	return meta, err
}

// Scope implements lease.Scoper: the scoped store of the wrapped one (see
// lease.Scope), counted in the same metrics.
func (s *countedStore) Scope(sub string) lease.Store {
	return &countedStore{next: lease.Scope(s.next, sub), m: s.m}
}

// Check implements lease.Checker: the wrapped store's check (lease.Check),
// not counted, as it was not when the broker made it on the store itself:
// the requests counted are the lease operations.
func (s *countedStore) Check(ctx context.Context) error { return lease.Check(ctx, s.next) }

// Describe implements lease.Describer: where the wrapped store is.
func (s *countedStore) Describe() string { return lease.Describe(s.next) }

// CreateLive implements lease.LiveWriter, so that a store judging expiry
// itself (etcd) still binds liveness through this wrapper.
func (s *countedStore) CreateLive(ctx context.Context, key string, body []byte, ttl time.Duration) (lease.Meta, error) {
	start := time.Now()
	meta, err := lease.CreateLive(ctx, s.next, key, body, ttl)
	s.observe("create", start, err)
	return meta, err
}

// UpdateLive implements lease.LiveWriter, as CreateLive.
func (s *countedStore) UpdateLive(ctx context.Context, key string, body []byte, etag string, ttl time.Duration) (lease.Meta, error) {
	start := time.Now()
	meta, err := lease.UpdateLive(ctx, s.next, key, body, etag, ttl)
	s.observe("update", start, err)
	return meta, err
}

// observers passes every event to each Observer.
type observers []nodeid.Observer

func (o observers) Acquired(id int, version int64, took time.Duration) {
	for _, x := range o {
		x.Acquired(id, version, took)
	}
}

func (o observers) Renewed(id int, latency time.Duration) {
	for _, x := range o {
		x.Renewed(id, latency)
	}
}

func (o observers) RenewFailed(id int, err error) {
	for _, x := range o {
		x.RenewFailed(id, err)
	}
}

func (o observers) Jeopardy(id int, err error) {
	for _, x := range o {
		x.Jeopardy(id, err)
	}
}

func (o observers) Recovered(id int, fenced time.Duration) {
	for _, x := range o {
		x.Recovered(id, fenced)
	}
}

func (o observers) Lost(id int, err error) {
	for _, x := range o {
		x.Lost(id, err)
	}
}

func (o observers) Released(id int) {
	for _, x := range o {
		x.Released(id)
	}
}

func (o observers) Anomaly(key string, err error) {
	for _, x := range o {
		x.Anomaly(key, err)
	}
}

// AcquireWaiting implements nodeid.WaitObserver for those of o that do.
func (o observers) AcquireWaiting(round int, err error, next time.Duration) {
	for _, x := range o {
		if w, ok := x.(nodeid.WaitObserver); ok {
			w.AcquireWaiting(round, err, next)
		}
	}
}

// Challenged implements nodeid.ChallengeObserver for those of o that do.
func (o observers) Challenged(id int, holder string, confirmed bool) {
	for _, x := range o {
		if c, ok := x.(nodeid.ChallengeObserver); ok {
			c.Challenged(id, holder, confirmed)
		}
	}
}

// Answered implements nodeid.ChallengeObserver for those of o that do.
func (o observers) Answered(id int) {
	for _, x := range o {
		if c, ok := x.(nodeid.ChallengeObserver); ok {
			c.Answered(id)
		}
	}
}

// ReadProved implements nodeid.ReadObserver for those of o that do.
func (o observers) ReadProved(id int, latency time.Duration) {
	for _, x := range o {
		if r, ok := x.(nodeid.ReadObserver); ok {
			r.ReadProved(id, latency)
		}
	}
}

// nodeEvents passes the provider's events on (to the metrics and the
// caller's observer), and tells the node why an acquisition waits. What the
// node must know of its claim (the id file, the supervised child) it learns
// from the claim itself (Claim.Changed), not from these events: they are
// for metrics.
type nodeEvents struct {
	observers
	n *Node
}

// AcquireWaiting implements nodeid.WaitObserver.
func (e nodeEvents) AcquireWaiting(round int, err error, next time.Duration) {
	e.n.acquireWaiting(round, err)
	e.observers.AcquireWaiting(round, err, next)
}

// foreignCollector reports nodeid_gossip_foreign_members at scrape time.
type foreignCollector struct{ n *Node }

var foreignDesc = prometheus.NewDesc(namespace+"_gossip_foreign_members",
	"Live gossip members of another cluster (a gossip pool joined by mistake): reported, never obeyed. 0 without gossip.", nil, nil)

func (c foreignCollector) Describe(ch chan<- *prometheus.Desc) { ch <- foreignDesc }

func (c foreignCollector) Collect(ch chan<- prometheus.Metric) {
	k := 0
	if g := c.n.gossip.Load(); g != nil {
		k = len(g.Foreign())
	}
	ch <- prometheus.MustNewConstMetric(foreignDesc, prometheus.GaugeValue, float64(k))
}

// MinWriteInterval implements lease.WriteSpacer: the wrapped store's
// (lease.MinWriteInterval), so that nodeid.New still checks the renewal
// interval against it through this wrapper.
func (s *countedStore) MinWriteInterval() time.Duration { return lease.MinWriteInterval(s.next) }

var (
	_ nodeid.ReadObserver      = nodeEvents{}
	_ nodeid.ChallengeObserver = nodeEvents{}
)
