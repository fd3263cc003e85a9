package nodeid

import "time"

// Peers is what a Provider learns from gossip. It is advisory: the store is the
// only authority. The gossip package satisfies it.
type Peers interface {
	// KnownNodes returns the highest version seen per live node ID. The provider
	// tries these IDs last and writes the map into its record at each renewal.
	KnownNodes() map[int]int64
}

// Observer receives a Provider's events, for metrics. Methods must be fast, safe
// for concurrent use and must not block. Embed NopObserver to implement a subset.
type Observer interface {
	// Acquired reports a claim taken after took, with how many store requests
	// the acquisition made.
	Acquired(id int, version int64, took time.Duration)
	// Renewed reports a successful renewal and its latency.
	Renewed(id int, latency time.Duration)
	// RenewFailed reports one failed renewal attempt.
	RenewFailed(id int, err error)
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

// Lost implements Observer.
func (NopObserver) Lost(int, error) {}

// Released implements Observer.
func (NopObserver) Released(int) {}

// Anomaly implements Observer.
func (NopObserver) Anomaly(string, error) {}
