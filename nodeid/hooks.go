package nodeid

import (
	"context"
	"time"
)

// Peers is what a Provider learns from gossip. It is advisory: the store is the
// only authority. The gossip package satisfies it.
type Peers interface {
	// KnownNodes returns the highest version seen per live node ID: their
	// leases are read last or not at all (docs/evidence/design.md section
	// 7.4), and the map is written into the record at each renewal.
	KnownNodes() map[int]int64
}

// Tasks tells which tasks are alive by a signal other than the store (the
// gossip package's membership, for members named by task identity). In read
// mode a lease held by a task it does not show live is challenged
// (docs/evidence/design.md section 11); a live holder answers with one
// write, so a wrong answer costs a write, never safety.
type Tasks interface {
	// TaskLive reports whether the task called taskID is alive.
	TaskLive(taskID string) bool
}

// TasksHints is a Tasks that also tells a waiting Acquire when a task may
// have died (the gossip package's Freed), so that an election's candidate,
// which has no Peers, challenges a dead leader without waiting out its backoff.
type TasksHints interface {
	Tasks
	// Freed returns a channel closed at the next such event.
	Freed() <-chan struct{}
}

// PeerHints is a Peers that also tells a waiting Acquire when to look and,
// by rank, where (the gossip package satisfies it): it only schedules the
// store requests (docs/evidence/design.md section 7.4).
type PeerHints interface {
	Peers
	// Freed returns a channel closed when a node ID leaves KnownNodes after
	// the call (its holder released it, left, or was found dead).
	Freed() <-chan struct{}
	// Rank returns this task's place among the live members that hold no
	// node ID (0 for the first, in an order all members share) and their
	// number; (0, 0) when unknown.
	Rank() (rank, of int)
}

// GossipJoiner is a Peers (or Tasks) that can join the gossip member at an
// address (the gossip package's Node): in read mode, before it challenges a
// holder gossip does not show live, Acquire joins the address its record
// publishes and judges again.
type GossipJoiner interface {
	// JoinGossip joins the member at addr ("host:port"); it returns within
	// about the gossip's TCP timeout.
	JoinGossip(ctx context.Context, addr string) error
}

// Observer receives a Provider's events, for metrics. Methods must be fast, safe
// for concurrent use and must not block; embed NopObserver to implement a
// subset. A Config.Observer may also implement WaitObserver, ReadObserver and
// ChallengeObserver.
type Observer interface {
	// Acquired reports node id taken at version, took after Acquire began.
	Acquired(id int, version int64, took time.Duration)
	// Renewed reports a successful renewal and its latency.
	Renewed(id int, latency time.Duration)
	// RenewFailed reports one failed renewal attempt.
	RenewFailed(id int, err error)
	// Jeopardy reports a claim in jeopardy (see ErrJeopardy); err says why.
	Jeopardy(id int, err error)
	// Recovered reports a claim in jeopardy that a landed write recovered,
	// after it was fenced for fenced.
	Recovered(id int, fenced time.Duration)
	// Lost reports a claim that ended without a release.
	Lost(id int, err error)
	// Released reports a claim released by Close.
	Released(id int)
	// Anomaly reports an object that is corrupt or otherwise not to be taken.
	Anomaly(key string, err error)
}

// NopObserver ignores every event.
type NopObserver struct{}

// Acquired implements Observer.
func (NopObserver) Acquired(int, int64, time.Duration) {}

// Renewed implements Observer.
func (NopObserver) Renewed(int, time.Duration) {}

// RenewFailed implements Observer.
func (NopObserver) RenewFailed(int, error) {}

// Jeopardy implements Observer.
func (NopObserver) Jeopardy(int, error) {}

// Recovered implements Observer.
func (NopObserver) Recovered(int, time.Duration) {}

// Lost implements Observer.
func (NopObserver) Lost(int, error) {}

// Released implements Observer.
func (NopObserver) Released(int) {}

// Anomaly implements Observer.
func (NopObserver) Anomaly(string, error) {}

// WaitObserver is an Observer that also hears of each round of Acquire that
// took no node ID, so that a waiting task can say why it waits (in /health).
type WaitObserver interface {
	Observer
	// AcquireWaiting reports that round (from 1) of Acquire took no node
	// ID: err says why (it wraps ErrClusterFull when every ID was held),
	// and the next round begins within next.
	AcquireWaiting(round int, err error, next time.Duration)
}

// ReadObserver is an Observer that also hears of each read that proved the
// claim's ETag in read mode and re-armed its fence without a write (package
// node rewrites its id file, whose validUntilMs follows the fence).
type ReadObserver interface {
	Observer
	// ReadProved reports a read of node id's lease object, answered after
	// latency, that showed the claim's ETag.
	ReadProved(id int, latency time.Duration)
}

// ChallengeObserver is an Observer that also hears of the challenges of read
// mode (docs/evidence/design.md section 11): those this task makes of a held
// lease, and those it answers on its own claim.
type ChallengeObserver interface {
	Observer
	// Challenged reports a challenge this task wrote on node id's lease,
	// held by holder; confirmed reports whether its confirm landed too (the
	// ID may then be taken a Window later, unless the holder answers).
	Challenged(id int, holder string, confirmed bool)
	// Answered reports a challenge (or a confirm) of this task's claim on
	// node id that it answered with a write of its own: the claim holds.
	Answered(id int)
}
