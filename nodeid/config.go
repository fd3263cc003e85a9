package nodeid

import (
	"cmp"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"time"

	"github.com/nodeid/nodeid/lease"
	"github.com/nodeid/nodeid/snowflake"
)

// Order is the order in which Acquire visits node IDs.
type Order string

const (
	// OrderSpread starts at an offset derived from the task identity and goes
	// round: concurrent starters spread over the IDs instead of all racing for
	// ID 0 (no thundering herd).
	OrderSpread Order = "spread"
	// OrderLowestFirst visits 0, 1, 2, ...: dense IDs, as Zeebe's provider does,
	// at the price of contention when many tasks start at once.
	OrderLowestFirst Order = "lowest-first"
)

// Layout is the Snowflake bit layout and epoch this task issues IDs with, as
// the cluster manifest pins it: two layouts in one ID space collide.
type Layout = snowflake.Layout

// DefaultLayout is 41 timestamp bits (ms, ~69 years), 10 node bits, 12 sequence
// bits, epoch 2025-01-01T00:00:00Z: snowflake.DefaultLayout().
var DefaultLayout = snowflake.DefaultLayout()

// KeepAlive is how a claim keeps its lease alive: the cluster manifest's
// mode, lease.KeepAlive.
type KeepAlive = lease.KeepAlive

const (
	// KeepAliveWrite renews the lease with a conditional write every
	// RenewInterval (the default; the empty KeepAlive means it too).
	KeepAliveWrite = lease.KeepAliveWrite
	// KeepAliveRead keeps the lease alive mostly with conditional reads of
	// the claim's own lease object, every PollInterval, and a backstop write
	// every RenewInterval (docs/evidence/design.md section 11).
	KeepAliveRead = lease.KeepAliveRead
)

// Config configures a Provider. Start from DefaultConfig; New validates it once.
// The fields the manifest pins are those of Pinned: a task configured
// otherwise is refused (ErrManifestMismatch). The rules Validate checks
// are in docs/evidence/design.md section 9 (read mode's: section 11).
type Config struct {
	// TaskID identifies this task in the lease it holds: the ECS task ARN, or
	// any string unique among live tasks. Default: host name + pid + random.
	TaskID string

	// Value is an opaque string published in the lease beside TaskID (an
	// election's campaign value, say), at most lease.MaxValueLen bytes.
	// Default empty.
	Value string

	// GossipAddr ("host:port", at most lease.MaxGossipLen bytes) is published
	// in the lease (lease.Record.Gossip), so that other tasks find the gossip
	// cluster from the bucket; advisory, never trusted for safety. Default
	// empty. Releases before it read such a record as corrupt.
	GossipAddr string

	// IssuesNoIDs says no Snowflake IDs are issued under this task's claims
	// (an election or a lock; package election sets it): its writes reserve
	// no timestamps, and it takes a lease whatever its floor, so that a
	// resigned or dead leader's successor is elected at once. Default false.
	IssuesNoIDs bool

	// ClusterSize is the number of node IDs, 1..2^NodeBits, written into the
	// manifest by the first task; afterwards the manifest's wins (a
	// difference is logged). Default 1024.
	ClusterSize int

	// FirstNodeID is the cluster's lowest node ID, 0..2^NodeBits-ClusterSize:
	// clusters whose Snowflake IDs must never collide (one per region, say)
	// each own a range no other overlaps. Pinned by the manifest. Default 0.
	FirstNodeID int

	// Layout is the Snowflake layout and epoch (positive widths, at most 22
	// node bits); pinned by the manifest. Default DefaultLayout.
	Layout Layout

	// LeaseDuration is how long a lease lasts after each write, judged on the
	// store's clock by other tasks: longer means fewer writes and slower
	// failover. Default 15 s. In read mode Backstop is the lease instead.
	LeaseDuration time.Duration

	// KeepAlive is how the claim keeps its lease alive: KeepAliveWrite (the
	// default, also "") or KeepAliveRead, far cheaper on S3, which needs a
	// lease.ConditionalReader. Pinned by the manifest, with Window and Backstop.
	KeepAlive KeepAlive

	// Window is W in read mode: a read showing the claim's lease unchanged,
	// or a landed write, keeps the claim valid for Window - SafetyMargin
	// after its send, never past Backstop - SafetyMargin after the last
	// landed write. Zero: DefaultWindow in read mode.
	Window time.Duration

	// Backstop is B in read mode: the lease every record states, renewed by
	// a write every RenewInterval. Zero: DefaultBackstop in read mode.
	Backstop time.Duration

	// PollInterval is P in read mode: the time between two conditional reads
	// of the claim's lease object, a failed one tried again after a quarter
	// of it. Zero: the lesser of Window / 2 and 3/4 of Window - SafetyMargin
	// - StoreTimeout.
	PollInterval time.Duration

	// RenewInterval is the time from one successful write to the next
	// renewal; at least the store's shortest interval between two writes of
	// one object (lease.MinWriteInterval). Zero: LeaseDuration / 3.
	RenewInterval time.Duration

	// RenewDeadline is how long after its last successful write a holder keeps
	// retrying a failing renewal before it fences itself and the claim ends.
	// Zero: the lesser of LeaseDuration * 2 / 3 and LeaseDuration - SafetyMargin.
	RenewDeadline time.Duration

	// SafetyMargin is subtracted from the lease on this task's own monotonic
	// clock: the claim is valid only until t0 + LeaseDuration - SafetyMargin,
	// t0 being when its last successful write was sent. It must cover the
	// clock's rate error over one lease. Zero: the lesser of 1 s and
	// LeaseDuration / 4.
	SafetyMargin time.Duration

	// ClockMargin is added to the lease when judging another holder's lease
	// expired on the store's clock (see lease.Expired). Default 1 s.
	ClockMargin time.Duration

	// MaxLeaseDuration is the longest lease another holder may state; an object
	// stating more is an anomaly and never taken automatically. Default 60 s.
	MaxLeaseDuration time.Duration

	// Order is the acquire visit order. Default OrderSpread.
	Order Order

	// MaxReadsInFlight bounds the concurrent GETs while looking for a free ID.
	// Default 8.
	MaxReadsInFlight int

	// AcquireTimeout is how long Acquire keeps retrying when no ID is free
	// before it returns ErrClusterFull; 0 tries once. Default 30 s.
	AcquireTimeout time.Duration

	// AcquireBackoff is the base of the jittered, doubling pause between
	// acquire rounds, capped at 8 times itself. Default 500 ms.
	AcquireBackoff time.Duration

	// MaxClockWait is how far this task's wall clock may be behind the floor
	// (the predecessor's reservation) of a lease it takes: the generator
	// waits that long at most. A lease whose floor is further ahead is skipped
	// (ErrClockBehind) or held (ErrAwaitingFloor): docs/evidence/design.md
	// section 7.2. Default 5 s.
	MaxClockWait time.Duration

	// BootstrapWindow is how old (on the store's clock) the manifest must be
	// before a task fills the cluster (docs/evidence/design.md section 7.1).
	// Default 10 s.
	BootstrapWindow time.Duration

	// StoreTimeout bounds each renewal attempt (its CAS and any read-back that
	// resolves it) and each request of Close; three attempts and their pauses
	// must fit between RenewInterval and RenewDeadline. Zero: the lesser of
	// 2 s and 4/15 of RenewDeadline - RenewInterval.
	StoreTimeout time.Duration

	// LossGrace is how long a claim whose renewals gave up, with no evidence
	// of another writer, stays in jeopardy: fenced (Check fails with
	// ErrJeopardy) but renewing on its last write's ETag
	// (docs/evidence/design.md section 7.3). Safety does not depend on it.
	// Zero: the lease. NoLossGrace: none, the first fence is final.
	LossGrace time.Duration

	// Clock is the time source. Default SystemClock(0). A Clock that is
	// also a SuspendClock fences claims on its suspend-counting reading too,
	// as the system clock does.
	Clock Clock
	// Logger receives state changes (acquired, lost, released); nil discards.
	Logger *slog.Logger
	// Observer receives events for metrics; nil ignores them.
	Observer Observer
	// Peers, when set, supplies gossip hints (see Peers).
	Peers Peers
	// Tasks, when set, tells which tasks are alive (see Tasks). Elections keep
	// it (they drop Peers): it is how a dead leader is replaced within about
	// a Window.
	Tasks Tasks

	// rules, when set, replace the production rules (tests only: see rules).
	rules *rules
}

// DefaultConfig returns the defaults documented on each Config field, the
// timings derived from LeaseDuration left zero: setting it alone is enough.
func DefaultConfig() Config {
	return Config{
		TaskID:           DefaultTaskID(),
		ClusterSize:      1024,
		Layout:           DefaultLayout,
		LeaseDuration:    15 * time.Second,
		ClockMargin:      time.Second,
		MaxLeaseDuration: 60 * time.Second,
		Order:            OrderSpread,
		MaxReadsInFlight: 8,
		AcquireTimeout:   30 * time.Second,
		AcquireBackoff:   500 * time.Millisecond,
		MaxClockWait:     5 * time.Second,
		BootstrapWindow:  10 * time.Second,
	}
}

// DefaultLocalConfig returns DefaultConfig with short timings for tests and local
// demos: 3 s leases renewed every second.
func DefaultLocalConfig() Config {
	c := DefaultConfig()
	c.LeaseDuration, c.RenewInterval, c.RenewDeadline = 3*time.Second, time.Second, 2*time.Second
	c.SafetyMargin, c.MaxLeaseDuration, c.AcquireTimeout = 500*time.Millisecond, 10*time.Second, 10*time.Second
	c.AcquireBackoff = 100 * time.Millisecond
	return c
}

// NoLossGrace is the Config.LossGrace of a claim whose first fence is final:
// no jeopardy, no recovery.
const NoLossGrace time.Duration = -1

// DefaultTaskID returns the host name, the process ID and 4 random bytes.
func DefaultTaskID() string {
	host, err := os.Hostname()
	if err != nil {
		host = "unknown"
	}
	var b [4]byte
	_, _ = rand.Read(b[:])
	return fmt.Sprintf("%s-%d-%s", host, os.Getpid(), hex.EncodeToString(b[:]))
}

// FieldError is one reason a configuration is invalid: the field, and what is
// wrong with its value. Validate joins them, so that a caller (a command-line
// layer) can name its own flag for each field with errors.As.
type FieldError struct {
	// Field is the name of the Config field ("LeaseDuration"); a rule that
	// relates two fields names the one it is about.
	Field string
	// Reason says what is wrong, with the value.
	Reason string
}

func (e *FieldError) Error() string { return e.Field + ": " + e.Reason }

// FieldErrors returns the FieldErrors err joins or wraps, in order.
func FieldErrors(err error) []*FieldError {
	switch x := err.(type) {
	case nil:
		return nil
	case *FieldError:
		return []*FieldError{x}
	case interface{ Unwrap() []error }:
		var out []*FieldError
		for _, e := range x.Unwrap() {
			out = append(out, FieldErrors(e)...)
		}
		return out
	}
	return FieldErrors(errors.Unwrap(err))
}

// Validate checks the configuration as Timings resolves it, changing
// nothing; New calls it (through ValidateFor). The error joins one
// *FieldError per broken rule (see FieldErrors).
func (c Config) Validate() error {
	t := c.Timings()
	var errs []error
	check := func(ok bool, field, format string, args ...any) {
		if !ok {
			errs = append(errs, &FieldError{Field: field, Reason: fmt.Sprintf(format, args...)})
		}
	}
	l := c.Layout
	check(l.TimestampBits > 0 && l.NodeBits > 0 && l.SequenceBits > 0 && l.NodeBits <= 22 &&
		l.TimestampBits+l.NodeBits+l.SequenceBits == 63,
		"Layout", "%d/%d/%d: widths must be positive, node bits at most 22, and sum to 63", l.TimestampBits, l.NodeBits, l.SequenceBits)
	check(l.EpochMs >= 0, "Layout", "EpochMs %d is negative", l.EpochMs)
	if l.NodeBits > 0 && l.NodeBits <= 22 {
		check(c.ClusterSize >= 1 && c.ClusterSize <= 1<<l.NodeBits, "ClusterSize", "%d outside 1..%d (2^NodeBits)", c.ClusterSize, 1<<l.NodeBits)
		check(c.FirstNodeID >= 0 && c.FirstNodeID <= 1<<l.NodeBits-c.ClusterSize, "FirstNodeID",
			"%d with ClusterSize %d leaves 0..%d (2^NodeBits)", c.FirstNodeID, c.ClusterSize, 1<<l.NodeBits-1)
	}
	check(c.TaskID != "" && len(c.TaskID) <= 1024, "TaskID", "must be 1..1024 bytes")
	check(len(c.Value) <= lease.MaxValueLen, "Value", "%d bytes, more than %d", len(c.Value), lease.MaxValueLen)
	check(c.GossipAddr == "" || lease.ValidGossip(c.GossipAddr), "GossipAddr", "%q is not host:port of at most %d bytes", c.GossipAddr, lease.MaxGossipLen)
	leaseField := "LeaseDuration" // the field the lease comes from
	if c.readMode() {
		leaseField = "Backstop"
	}
	check(t.Lease >= time.Second, leaseField, "%v below 1s", t.Lease)
	check(t.Lease <= t.MaxLeaseDuration, leaseField, "%v above MaxLeaseDuration %v", t.Lease, t.MaxLeaseDuration)
	check(t.MaxLeaseDuration <= 24*time.Hour, "MaxLeaseDuration", "%v above 24h", t.MaxLeaseDuration)
	check(t.SafetyMargin > 0 && t.SafetyMargin < t.Lease, "SafetyMargin", "%v must be in (0, LeaseDuration %v)", t.SafetyMargin, t.Lease)
	check(c.ClockMargin >= 0, "ClockMargin", "%v is negative", c.ClockMargin)
	check(t.RenewInterval > 0 && t.RenewInterval < t.RenewDeadline,
		"RenewInterval", "%v must be positive and below RenewDeadline %v", t.RenewInterval, t.RenewDeadline)
	check(t.RenewDeadline <= t.Lease-t.SafetyMargin,
		"RenewDeadline", "%v above LeaseDuration - SafetyMargin (%v)", t.RenewDeadline, t.Lease-t.SafetyMargin)
	check(c.Order == OrderSpread || c.Order == OrderLowestFirst, "Order", "%q is not %q or %q", c.Order, OrderSpread, OrderLowestFirst)
	check(c.MaxReadsInFlight >= 1, "MaxReadsInFlight", "%d below 1", c.MaxReadsInFlight)
	check(c.AcquireTimeout >= 0, "AcquireTimeout", "%v is negative", c.AcquireTimeout)
	check(c.AcquireBackoff > 0, "AcquireBackoff", "%v must be positive", c.AcquireBackoff)
	check(c.MaxClockWait >= 0, "MaxClockWait", "%v is negative", c.MaxClockWait)
	check(c.BootstrapWindow >= 0, "BootstrapWindow", "%v is negative", c.BootstrapWindow)
	if w := t.RenewDeadline - t.RenewInterval; w > 0 {
		check(t.StoreTimeout > 0 && t.StoreTimeout <= maxStoreTimeout(w), "StoreTimeout",
			"%v leaves room for fewer than three renewal attempts between RenewInterval %v and RenewDeadline %v: at most %v",
			t.StoreTimeout, t.RenewInterval, t.RenewDeadline, maxStoreTimeout(w))
	}
	check(t.LossGrace >= 0 || t.LossGrace == NoLossGrace, "LossGrace", "%v is negative (NoLossGrace, -1ns, turns jeopardy off)", t.LossGrace)
	switch c.KeepAlive.Mode() { // read mode's rules: docs/evidence/design.md section 11
	case KeepAliveWrite:
		check(c.Window == 0 && c.Backstop == 0 && c.PollInterval == 0, "KeepAlive",
			"Window %v, Backstop %v and PollInterval %v are for KeepAliveRead only", c.Window, c.Backstop, c.PollInterval)
	case KeepAliveRead:
		check(t.Window >= time.Second && t.Window%time.Millisecond == 0 && t.Window > t.SafetyMargin, "Window",
			"%v must be a whole number of ms, at least 1s and above SafetyMargin %v", t.Window, t.SafetyMargin)
		check(t.Backstop%time.Millisecond == 0, "Backstop", "%v is not a whole number of ms", t.Backstop)
		check(t.Backstop >= t.RenewDeadline+t.Window, "Backstop",
			"%v below RenewDeadline %v + Window %v: a backstop renewal still retrying would stop the reads from keeping the claim valid", t.Backstop, t.RenewDeadline, t.Window)
		check(t.PollInterval > 0 && t.PollInterval+t.StoreTimeout < t.Window-t.SafetyMargin, "PollInterval",
			"%v must be positive, and with StoreTimeout %v below Window - SafetyMargin (%v)", t.PollInterval, t.StoreTimeout, t.Window-t.SafetyMargin)
	default:
		check(false, "KeepAlive", "%q is not %q or %q", c.KeepAlive, KeepAliveWrite, KeepAliveRead)
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("nodeid: invalid config: %w", err)
	}
	return nil
}

// ValidateFor is Validate, then the rules the store sets: a store that
// sustains one write per object only every so often (a [lease.WriteSpacer]:
// Google Cloud Storage, about one a second) needs RenewInterval at least that
// long, else its renewals are throttled. [New] calls it.
func (c Config) ValidateFor(store lease.Store) error {
	if err := c.Validate(); err != nil {
		return err
	}
	if least, t := lease.MinWriteInterval(store), c.Timings(); t.RenewInterval < least {
		return fmt.Errorf("nodeid: invalid config: %w", &FieldError{Field: "RenewInterval",
			Reason: fmt.Sprintf("%v is below %v, the shortest interval between two writes of one object that %s sustains: raise RenewInterval (or LeaseDuration, which derives it)",
				t.RenewInterval, least, lease.Describe(store))})
	}
	return nil
}

// Pinned is what the cluster manifest pins of a configuration, as the first
// task wrote it: a task configured otherwise is refused (ErrManifestMismatch).
type Pinned struct {
	Layout      Layout
	FirstNodeID int
	// KeepAlive is the mode (KeepAlive.Mode: never ""); Window and Backstop
	// are read mode's, their defaults filled in, and zero in write mode.
	KeepAlive        KeepAlive
	Window, Backstop time.Duration
}

// Timings are a Config resolved (Config.Timings): what the manifest pins and
// this task's timings. Validate checks them and a Provider runs by them.
type Timings struct {
	Pinned
	Lease time.Duration // the lease every record states: LeaseDuration, or Backstop in read mode
	// The Config fields of these names, or their derived values.
	RenewInterval, RenewDeadline, SafetyMargin, StoreTimeout, PollInterval, LossGrace time.Duration
	// MaxLeaseDuration is Config.MaxLeaseDuration, raised to Backstop in read mode.
	MaxLeaseDuration time.Duration
}

// Timings returns c resolved, with the timings left zero derived (see each
// Config field). It changes nothing in c.
func (c Config) Timings() Timings {
	t := Timings{Pinned: Pinned{Layout: c.Layout, FirstNodeID: c.FirstNodeID, KeepAlive: c.KeepAlive.Mode(), Window: c.Window, Backstop: c.Backstop},
		Lease: c.LeaseDuration, RenewInterval: c.RenewInterval, RenewDeadline: c.RenewDeadline, SafetyMargin: c.SafetyMargin,
		StoreTimeout: c.StoreTimeout, PollInterval: c.PollInterval, LossGrace: c.LossGrace, MaxLeaseDuration: c.MaxLeaseDuration}
	if c.readMode() {
		t.Window, t.Backstop = cmp.Or(t.Window, DefaultWindow), cmp.Or(t.Backstop, DefaultBackstop)
		t.Lease, t.MaxLeaseDuration = t.Backstop, max(t.MaxLeaseDuration, t.Backstop)
	}
	if t.Lease > 0 { // Validate reports it
		t.SafetyMargin = cmp.Or(t.SafetyMargin, min(time.Second, t.Lease/4))
		t.RenewInterval = cmp.Or(t.RenewInterval, t.Lease/3)
		t.RenewDeadline = cmp.Or(t.RenewDeadline, min(t.Lease*2/3, t.Lease-t.SafetyMargin))
		if t.StoreTimeout == 0 && t.RenewDeadline > t.RenewInterval {
			t.StoreTimeout = min(2*time.Second, maxStoreTimeout(t.RenewDeadline-t.RenewInterval))
		}
		t.LossGrace = cmp.Or(t.LossGrace, t.Lease)
	}
	if c.readMode() && t.PollInterval == 0 {
		t.PollInterval = min(t.Window/2, (t.Window-t.SafetyMargin-t.StoreTimeout)*3/4)
	}
	return t
}

// readMode reports whether the claim keeps its lease alive by reads.
func (c *Config) readMode() bool { return c.KeepAlive.Mode() == KeepAliveRead }

// readMode reports whether the claim keeps its lease alive by reads.
func (t *Timings) readMode() bool { return t.KeepAlive == KeepAliveRead }

// armSpan is how long, less SafetyMargin, a landed write keeps the claim
// valid after its send: Window in read mode, the lease otherwise.
func (t *Timings) armSpan() time.Duration {
	if t.readMode() {
		return t.Window
	}
	return t.Lease
}

// LossWindow is the time from a claim's giving up renewing (RenewDeadline
// after its last landed write) to the latest fence that write allows (Lease -
// SafetyMargin after it): at most what a process using the ID outside the
// claim (package node's child) has to stop after a loss. In read mode
// failing reads drop the fence sooner (Claim.ReadsFailingAt).
func (t Timings) LossWindow() time.Duration {
	return t.Lease - t.SafetyMargin - t.RenewDeadline
}

// LossWindow is c.Timings().LossWindow(): see Timings.LossWindow.
func (c Config) LossWindow() time.Duration { return c.Timings().LossWindow() }

// Read mode's defaults (docs/evidence/design.md section 11): at these, with
// PollInterval Window / 2 and RenewInterval Backstop / 3, a holder sends
// 345,600 GETs and 12,960 PUTs a month, about $0.20 on S3 Standard.
const (
	// DefaultWindow is Config.Window's default in read mode.
	DefaultWindow = 15 * time.Second
	// DefaultBackstop is Config.Backstop's default in read mode.
	DefaultBackstop = 10 * time.Minute
)

// maxStoreTimeout is the longest renewal attempt that lets three attempts
// and the two pauses between them (renewPause: at most a tenth of the window
// each) fit in a renewal window w: 4/15 of it.
func maxStoreTimeout(w time.Duration) time.Duration { return w * 4 / 15 }

// renewPause is the base of the jittered pause between renewal attempts in a
// renewal window w (each pause is drawn from [w/20, w/10)).
func renewPause(w time.Duration) time.Duration { return w / 10 }
