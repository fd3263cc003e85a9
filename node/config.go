package node

import (
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/nodeid/nodeid/gossip"
	"github.com/nodeid/nodeid/lease"
	"github.com/nodeid/nodeid/nodeid"
)

// Config configures a Node. Start from DefaultConfig (or DefaultLocalConfig
// for tests and demos on one machine); New validates it once.
type Config struct {
	// Provider configures the lease protocol: task identity, cluster size,
	// layout, lease timings and the clock. The Snowflake generator reads
	// the same Clock (its Wall) as the reservations the Provider writes, so
	// the two never disagree. Default nodeid.DefaultConfig().
	Provider nodeid.Config

	// Gossip, when set, starts a gossip member with this configuration
	// before acquiring: it schedules the Acquire (peers' live node IDs are
	// not read, a waiting Acquire looks when gossip frees one, and waiting
	// members spread their picks: nodeid.PeerHints), a peer advertising
	// this node's ID with a higher version fences it at once, and after
	// taking over an expired lease /ready waits for peers to see the new
	// version. The node publishes the member's address in the lease it
	// holds and in an election's leadership record (nodeid.Config.GossipAddr),
	// and joins those the cluster's other
	// leases publish (added to Seeds), so that nodes with no Join find each
	// other. Its Name defaults to Provider.TaskID; OnConflict, if set, is
	// called after the node's own handling. Nil: no gossip (it is
	// advisory).
	Gossip *gossip.Config

	// IDFile, when set, is the path of a JSON file naming the held node ID
	// (see IDFile), for an application in another process that issues IDs
	// itself: written once the wall clock is past the ID's floor,
	// rewritten with a later validUntilMs every IDFileHorizon/4 and after
	// every renewal, taken down while the lease is in jeopardy, removed
	// the moment the node fences. Its directory must exist and be
	// writable. Empty: no file.
	IDFile string

	// IDFileHorizon is how far past the host's clock each write of the id
	// file lets the application issue IDs: validUntilMs is at most the
	// host's clock at the write plus this (and never past the fence). It
	// bounds what the application may have issued, whatever the host's
	// clock did, by a time that is soon in the past: the release keeps the
	// reservation at the highest validUntilMs written, so a successor
	// waits for none of it when IDFileGrace is at least IDFileHorizon. It
	// also bounds how long the application issues after the node crashed
	// or froze. At least 2 s, so that 3/4 of it exceeds the application's
	// re-read period (1 s) with slack. Default (and zero): 3 s.
	IDFileHorizon time.Duration

	// IDFileGrace is, on Close, the time between removing the id file and
	// releasing the lease, for the application to notice and stop: it must
	// exceed the application's re-read period of the file with slack (the
	// documented period is 1 s). The release keeps the reservation at the
	// highest validUntilMs written, at most IDFileHorizon after the last
	// write: a grace of at least IDFileHorizon leaves a successor nothing
	// to wait for. With a supervised child (Supervise, RunChild), the child
	// is the file's reader: once it has exited there is no grace to give,
	// and Close skips it. Default 3 s.
	IDFileGrace time.Duration

	// Elect, when set, is an election this node campaigns for beside its
	// node ID (see package election), once it holds the ID; GET /leader
	// and /status report the leader, Close resigns first. Empty: none.
	Elect string

	// ElectValue is the value published with the campaign for Elect (see
	// election.Elections.Campaign): this node's address, say, so that a
	// follower's GET /leader tells where the leader is. At most
	// lease.MaxValueLen bytes. Empty: none.
	ElectValue string

	// ShutdownTimeout bounds the Close that Run and RunChild make when
	// their context ends or the lease is lost: the fence, the id file's
	// grace, the release write and gossip's leave. A release not confirmed
	// by then leaves the lease to expire, which is safe, only slower for a
	// successor. Keep the orchestrator's stop timeout (ECS stopTimeout,
	// systemd TimeoutStopSec) above it. Default 10 s.
	ShutdownTimeout time.Duration

	// ReadyTimeout bounds the readiness gate after taking over an expired
	// lease: /ready waits at most this long for gossip peers to see the new
	// version. Default 10 s.
	ReadyTimeout time.Duration

	// MaxReservationWait is how long an ID request may wait for a renewal
	// to raise the reservation once the clock has passed it. Default: the
	// lesser of 5 s and Provider.Timings().RenewDeadline.
	MaxReservationWait time.Duration

	// MaxIssueStall is how long the generator may fail to issue IDs (for
	// any reason but a fence: a clock behind the floor, an exhausted
	// reservation) before health and readiness fail, so that the
	// orchestrator replaces a task that cannot serve. Default: the
	// lesser of 30 s and 2 * Provider.Timings().Lease (the backstop in read mode).
	MaxIssueStall time.Duration

	// SkipProbe skips the store probe Start runs before taking an ID
	// (lease.Probe: a second If-None-Match: * create and an If-Match with a
	// replaced ETag must be refused, and of two concurrent updates on one
	// ETag at most one applied). Without it, Start fails on a store that
	// ignores either condition, even only sometimes, with an error wrapping
	// lease.ErrConditionIgnored, and at once on a store error that retrying
	// cannot fix (a missing bucket, denied access, no credentials, a
	// refused connection, a store without conditional writes: the error
	// wraps lease.ErrMisconfigured and says what to fix); a truly
	// inconclusive probe (a lost answer, a timeout, a 5xx) is retried for up
	// to Provider.AcquireTimeout. The store's own check (lease.Check)
	// runs before the probe in any case, bounded by the store's request
	// timeout: an endpoint that never answers ends Start then, not after
	// AcquireTimeout. In read mode (Provider.KeepAlive) the probe also runs
	// lease.ProbeReads: a store whose reads may miss a completed write fails
	// Start (the error matches lease.ErrStaleReads); one whose 304 answers do
	// not show the ETag passes if its plain GETs do, and its holders read
	// with plain GETs.
	// Default false: the probe runs.
	SkipProbe bool
	// ReadProbeStore, when set, is a second client of the node's store, on
	// connections of its own: in read mode the probe's other task
	// (lease.ProbeReads's b) replaces the probe object and reads it through
	// it, so that a replica only another connection reaches is found too.
	// Nil: the node's own store plays both parts (a cache on its path is
	// still found).
	ReadProbeStore lease.Store

	// Metrics, when set, receives the node's Prometheus metrics (nodeid_*).
	// If it is also a prometheus.Gatherer (a *prometheus.Registry is), the
	// node's /metrics serves it. Nil: a registry of the node's own, with
	// the Go runtime and process collectors, served on /metrics. The node
	// never registers on the global registry.
	Metrics prometheus.Registerer

	// HostClock is the clock an application outside the node stamps its
	// Snowflake IDs with: an id-file reader (IDFile) or the child of
	// Supervise. It is the host's real-time clock, which may step (NTP, a
	// manual date, a VM resumed after a suspension), where the provider's
	// wall clock (nodeid.SystemClock) does not; the id file's validUntilMs,
	// the wait for the ID's floor, the reservations and the release are
	// decided on it for those applications (docs/evidence/design.md section 8).
	// Tests substitute their own. Default time.Now.
	HostClock func() time.Time

	// Logger receives the node's state changes (acquiring, serving, lost,
	// released), with those of the provider and gossip. Nil discards.
	Logger *slog.Logger
}

// MinIDFileHorizon is the least Config.IDFileHorizon: the node rewrites the
// id file every quarter of it, and the rest must exceed the application's
// re-read period of the file (1 s) with slack.
const MinIDFileHorizon = 2 * time.Second

// DefaultConfig returns the defaults documented on each field, with
// nodeid.DefaultConfig as the provider's configuration and no gossip, id
// file or metrics registry.
func DefaultConfig() Config {
	return Config{
		Provider:        nodeid.DefaultConfig(),
		IDFileHorizon:   3 * time.Second,
		IDFileGrace:     3 * time.Second,
		ShutdownTimeout: 10 * time.Second,
		ReadyTimeout:    10 * time.Second,
	}
}

// DefaultLocalConfig returns DefaultConfig with nodeid.DefaultLocalConfig's
// short timings, for tests and demos on one machine.
func DefaultLocalConfig() Config {
	c := DefaultConfig()
	c.Provider = nodeid.DefaultLocalConfig()
	return c
}

// Validate checks c the way New does, after filling in the defaults of its
// zero fields (of Provider, only Logger, Clock and Observer: its timings
// stay as set, nodeid.Config.Timings derives them). Errors of the
// provider's configuration are the nodeid.FieldErrors of
// nodeid.Config.Validate; the node's own name their field as
// "Node.<Field>", those of gossip "Gossip.<Field>".
func (c *Config) Validate() error {
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	if c.Provider.Logger == nil {
		c.Provider.Logger = c.Logger.With("component", "nodeid") // the provider adds the task itself
	}
	if c.Provider.Clock == nil { // the node's clock too
		c.Provider.Clock = nodeid.SystemClock(0)
	}
	if c.Provider.Observer == nil { // the node adds its own to it
		c.Provider.Observer = nodeid.NopObserver{}
	}
	var errs []error
	if err := c.Provider.Validate(); err != nil {
		errs = append(errs, err)
	}
	check := func(ok bool, field, format string, args ...any) {
		if !ok {
			errs = append(errs, &nodeid.FieldError{Field: "Node." + field, Reason: fmt.Sprintf(format, args...)})
		}
	}
	check(c.IDFileGrace >= 0, "IDFileGrace", "%v is negative", c.IDFileGrace)
	if c.IDFileHorizon == 0 {
		c.IDFileHorizon = DefaultConfig().IDFileHorizon
	}
	check(c.IDFile == "" || c.IDFileHorizon >= MinIDFileHorizon, "IDFileHorizon", "%v is below %v: the application re-reads the file every second", c.IDFileHorizon, MinIDFileHorizon)
	check(c.ShutdownTimeout >= 0, "ShutdownTimeout", "%v is negative", c.ShutdownTimeout)
	check(c.ReadyTimeout >= 0, "ReadyTimeout", "%v is negative", c.ReadyTimeout)
	check(c.MaxReservationWait >= 0, "MaxReservationWait", "%v is negative", c.MaxReservationWait)
	check(c.MaxIssueStall >= 0, "MaxIssueStall", "%v is negative", c.MaxIssueStall)
	check(len(c.ElectValue) <= lease.MaxValueLen, "ElectValue", "%d bytes, more than %d", len(c.ElectValue), lease.MaxValueLen)
	check(c.ElectValue == "" || c.Elect != "", "ElectValue", "set without Elect")
	if c.HostClock == nil {
		c.HostClock = time.Now
	}
	if c.ShutdownTimeout == 0 {
		c.ShutdownTimeout = DefaultConfig().ShutdownTimeout
	}
	if c.MaxReservationWait == 0 {
		c.MaxReservationWait = min(5*time.Second, c.Provider.Timings().RenewDeadline)
	}
	if c.MaxIssueStall == 0 {
		c.MaxIssueStall = min(30*time.Second, 2*c.Provider.Timings().Lease)
	}
	if c.Gossip != nil {
		g := *c.Gossip // the caller's stays as it was
		c.Gossip = &g
		if g.Name == "" {
			g.Name = c.Provider.TaskID
		}
		if g.Logger == nil {
			g.Logger = c.Logger.With("task", c.Provider.TaskID, "component", "gossip")
		}
		if err := g.Validate(); err != nil {
			errs = append(errs, err)
		}
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("node: invalid config: %w", err)
	}
	return nil
}
