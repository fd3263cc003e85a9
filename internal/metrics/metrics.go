package metrics

import (
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/nodeid/nodeid/nodeid"
)

// namespace prefixes every metric name.
const namespace = "nodeid"

// States are the values of the state label of nodeid_lease_state, the states of
// a broker: looking for a node ID, holding it, fenced (not issuing, for example
// while shutting down), lost (ended without a release), released.
var States = []string{"acquiring", "held", "fenced", "lost", "released"}

// Metrics is the set of a broker's metrics on a registry of its own. Its methods
// are safe for concurrent use.
type Metrics struct {
	reg *prometheus.Registry

	nodeID, version prometheus.Gauge

	acquisitions, renewals, renewFailures prometheus.Counter
	lost, released, anomalies             prometheus.Counter
	acquireDuration, renewLatency         prometheus.Histogram

	s3Requests *prometheus.CounterVec
	s3Duration *prometheus.HistogramVec

	idsIssued, fencedRefusals prometheus.Counter
}

var _ nodeid.Observer = (*Metrics)(nil)

// New returns the metrics, registered on a new registry with the Go runtime and
// process collectors. state, called at every scrape, returns the broker's
// current state, one of States; nil reports none.
func New(state func() string) *Metrics {
	reg := prometheus.NewRegistry()
	f := factory{reg}
	m := &Metrics{
		reg:     reg,
		nodeID:  f.gauge("node_id", "The node ID this broker holds or last held; -1 before it holds one."),
		version: f.gauge("node_version", "The version (fencing token) of the node ID this broker holds or last held; 0 before it holds one."),

		acquisitions:  f.counter("lease_acquisitions_total", "Node ID leases taken."),
		renewals:      f.counter("lease_renewals_total", "Successful lease renewals."),
		renewFailures: f.counter("lease_renewal_failures_total", "Failed lease renewal attempts; they are retried until the renew deadline."),
		lost:          f.counter("lease_lost_total", "Leases that ended without a release (taken over, renewal failed past its deadline, or a higher version seen in gossip)."),
		released:      f.counter("lease_released_total", "Leases released on shutdown."),
		anomalies:     f.counter("lease_anomalies_total", "Lease objects found corrupt or otherwise not to be taken (see the log and nodeidctl status)."),

		acquireDuration: f.histogram("lease_acquire_duration_seconds", "Time taken to acquire a node ID, bootstrap and retries included.",
			[]float64{.01, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60}),
		renewLatency: f.histogram("lease_renew_duration_seconds", "Latency of successful lease renewals (one conditional write, or more with read-backs).",
			[]float64{.005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5}),

		s3Requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: namespace, Name: "s3_requests_total",
			Help: "Lease store requests by operation (list, get, create, update) and outcome (ok, not_found, precondition_failed, unknown_outcome, error).",
		}, []string{"operation", "outcome"}),
		s3Duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Namespace: namespace, Name: "s3_request_duration_seconds",
			Help:    "Lease store request latency by operation.",
			Buckets: []float64{.005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5},
		}, []string{"operation"}),

		idsIssued:      f.counter("ids_issued_total", "Snowflake IDs handed out."),
		fencedRefusals: f.counter("ids_fenced_refusals_total", "ID requests refused with 503 because the broker held no valid lease."),
	}
	m.nodeID.Set(-1)
	reg.MustRegister(m.s3Requests, m.s3Duration, stateCollector{state: state},
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return m
}

// Registry returns the registry the metrics are registered on; callers may add
// their own.
func (m *Metrics) Registry() *prometheus.Registry { return m.reg }

// Handler returns the /metrics handler of the registry.
func (m *Metrics) Handler() http.Handler {
	return promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{Registry: m.reg})
}

// Acquired implements nodeid.Observer.
func (m *Metrics) Acquired(id int, version int64, took time.Duration) {
	m.nodeID.Set(float64(id))
	m.version.Set(float64(version))
	m.acquisitions.Inc()
	m.acquireDuration.Observe(took.Seconds())
}

// Renewed implements nodeid.Observer.
func (m *Metrics) Renewed(_ int, latency time.Duration) {
	m.renewals.Inc()
	m.renewLatency.Observe(latency.Seconds())
}

// RenewFailed implements nodeid.Observer.
func (m *Metrics) RenewFailed(int, error) { m.renewFailures.Inc() }

// Lost implements nodeid.Observer.
func (m *Metrics) Lost(int, error) { m.lost.Inc() }

// Released implements nodeid.Observer.
func (m *Metrics) Released(int) { m.released.Inc() }

// Anomaly implements nodeid.Observer.
func (m *Metrics) Anomaly(string, error) { m.anomalies.Inc() }

// IDsIssued counts n IDs handed out.
func (m *Metrics) IDsIssued(n int) { m.idsIssued.Add(float64(n)) }

// FencedRefusal counts one ID request refused because the broker was not
// serving.
func (m *Metrics) FencedRefusal() { m.fencedRefusals.Inc() }

// factory makes and registers single metrics.
type factory struct{ reg *prometheus.Registry }

func (f factory) gauge(name, help string) prometheus.Gauge {
	g := prometheus.NewGauge(prometheus.GaugeOpts{Namespace: namespace, Name: name, Help: help})
	f.reg.MustRegister(g)
	return g
}

func (f factory) counter(name, help string) prometheus.Counter {
	c := prometheus.NewCounter(prometheus.CounterOpts{Namespace: namespace, Name: name, Help: help})
	f.reg.MustRegister(c)
	return c
}

func (f factory) histogram(name, help string, buckets []float64) prometheus.Histogram {
	h := prometheus.NewHistogram(prometheus.HistogramOpts{Namespace: namespace, Name: name, Help: help, Buckets: buckets})
	f.reg.MustRegister(h)
	return h
}

// stateCollector reports nodeid_lease_state at scrape time, from the broker's
// own view, so that the gauge never lags a transition.
type stateCollector struct{ state func() string }

var stateDesc = prometheus.NewDesc(namespace+"_lease_state",
	"The broker's lease state: 1 for the current state, 0 for the others.", []string{"state"}, nil)

func (c stateCollector) Describe(ch chan<- *prometheus.Desc) { ch <- stateDesc }

func (c stateCollector) Collect(ch chan<- prometheus.Metric) {
	cur := ""
	if c.state != nil {
		cur = c.state()
	}
	for _, s := range States {
		v := 0.0
		if s == cur {
			v = 1
		}
		ch <- prometheus.MustNewConstMetric(stateDesc, prometheus.GaugeValue, v, s)
	}
}
