package faults

import (
	"sync"
	"time"
)

// History is what a run observed. Times are offsets from the start of the
// run on the test process's monotonic clock: every observation is made by that
// one process, so they compare across brokers.
type History struct {
	mu sync.Mutex

	Brokers []BrokerRecord
	// IDs is every successful /ids answer.
	IDs []IDBatch
	// Health is every /health answer (timeouts and errors are not answers).
	Health []HealthObs
	// Leases is every read of a lease object by the poller, which reads each
	// key from one goroutine, one read after the other: for a node ID, the
	// order of its reads is their real-time order.
	Leases []LeaseObs
	// Releases is a read of the lease object right after a broker stopped by
	// SIGTERM exited.
	Releases []ReleaseObs
	// Corrupt lists objects that did not decode, during the run or at the
	// end, and why.
	Corrupt []string
	// Leaders is every 200 answer of /leader (see checkLeaders).
	Leaders []LeaderObs
	// Stalls is every leader stalled by KindStallLeader (see LeaderStall).
	Stalls []StallObs
	// FinalObjects is how many lease objects decoded at the end.
	FinalObjects int
	// Takeovers is every broker's log line saying which claim it serves
	// (node: "serving IDs"), as the test read it.
	Takeovers []TakeoverObs
	// LossGrace is the brokers' grace for a fence that fell (jeopardy,
	// issue 24). Zero: a fence that falls never rises again (today's
	// broker), so a /health 503 for the fence is final. Above zero: a claim
	// whose write on its own last ETag lands within the grace recovers,
	// with the same version, and /health may answer 200 again.
	LossGrace time.Duration
	// RecoveriesReported: the brokers report their claim's count of
	// recoveries in each /ids and /health answer (IDBatch.Recoveries,
	// HealthObs.Recoveries), read in the same instant as the validity the
	// answer reflects: an answer that was fenced and a later one that was
	// not carry different counts. The checks then know which side of a
	// recovery every answer is on.
	RecoveriesReported bool
}

// Fate is what the scenario did to a broker.
type Fate int

// The fates of a broker.
const (
	FateNone       Fate = iota // left alone (it may still have lost its lease to a fault)
	FateKilled                 // kill -9
	FateTerminated             // SIGTERM: it must release its lease and exit 0
)

// BrokerRecord describes one broker process.
type BrokerRecord struct {
	Name        string
	Task        string // its --task-id, the holder in its lease
	ClockOffset time.Duration
	Started     time.Duration

	Fate   Fate
	FateAt time.Duration // when SIGKILL or SIGTERM was sent

	// MustLose is set when a fault was certain to cost the broker its lease
	// (a pause or a partition longer than the lease while it held one): it
	// must have exited with code 3.
	MustLose    bool
	MustLoseWhy string

	// MustLoseAt is when the fault of MustLose ended (SIGCONT sent, or
	// the proxy healed).
	MustLoseAt time.Duration

	// LossLoggedAt is when the test read the broker's log line saying its
	// lease was lost (node: "lease lost: stopped issuing IDs"): the loss was
	// declared before then. Zero: never.
	LossLoggedAt time.Duration
	// StopLoggedAt is when the test read its log line saying it had begun
	// to stop (node: "stopping: fencing and releasing the node ID"): it
	// was fenced for good before then. Zero: never.
	StopLoggedAt time.Duration

	Exited   bool
	ExitedAt time.Duration
	ExitCode int    // -1 when killed by a signal
	ExitErr  string // the last error line of its log, when it exited non-zero
}

// TakeoverObs is a broker's log line saying it serves a claim (node:
// "serving IDs"), read by the test at At.
type TakeoverObs struct {
	Broker  int
	At      time.Duration
	Node    int
	Version int64
	// Expired: it took the lease over expired, not free: the holder of
	// Version-1 had not released it, and never can (the take changed the
	// object its release would be conditional on).
	Expired bool
}

// Run is a range of consecutive IDs: First, First+1, ..., First+N-1.
type Run struct {
	First int64
	N     int32
}

// IDBatch is one successful /ids answer.
type IDBatch struct {
	Broker     int           // index in History.Brokers
	Start, End time.Duration // request sent, answer read
	Node       int
	Version    int64
	Runs       []Run
	Recoveries int64 // the claim's count of recoveries (History.RecoveriesReported)
}

// HealthObs is one /health answer.
type HealthObs struct {
	Broker     int
	Start, End time.Duration
	OK         bool   // 200; false: 503
	Reason     string // a 503's reason (the JSON body's "reason")
	Recoveries int64  // the claim's count of recoveries (History.RecoveriesReported)
}

// LeaseObs is one read of a lease object that decoded.
type LeaseObs struct {
	Node       int
	Start, End time.Duration
	Version    int64
	Holder     string
	Reserved   int64 // reservedUntilMs
}

// ReleaseObs is the lease object of a broker stopped by SIGTERM, read right
// after it exited.
type ReleaseObs struct {
	Broker  int
	At      time.Duration
	Node    int
	Found   bool
	Version int64
	Holder  string
}

// AddBroker records a broker and returns its index.
func (h *History) AddBroker(b BrokerRecord) int {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.Brokers = append(h.Brokers, b)
	return len(h.Brokers) - 1
}

// UpdateBroker changes broker i under the history's lock.
func (h *History) UpdateBroker(i int, f func(b *BrokerRecord)) {
	h.mu.Lock()
	defer h.mu.Unlock()
	f(&h.Brokers[i])
}

// Broker returns a copy of broker i.
func (h *History) Broker(i int) BrokerRecord {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.Brokers[i]
}

// AddIDs records an /ids answer.
func (h *History) AddIDs(b IDBatch) {
	h.mu.Lock()
	h.IDs = append(h.IDs, b)
	h.mu.Unlock()
}

// AddHealth records a /health answer.
func (h *History) AddHealth(o HealthObs) {
	h.mu.Lock()
	h.Health = append(h.Health, o)
	h.mu.Unlock()
}

// AddLease records a read of a lease object.
func (h *History) AddLease(o LeaseObs) {
	h.mu.Lock()
	h.Leases = append(h.Leases, o)
	h.mu.Unlock()
}

// AddRelease records the lease object of a broker after its SIGTERM.
func (h *History) AddRelease(o ReleaseObs) {
	h.mu.Lock()
	h.Releases = append(h.Releases, o)
	h.mu.Unlock()
}

// AddTakeover records a broker's "serving IDs" log line.
func (h *History) AddTakeover(o TakeoverObs) {
	h.mu.Lock()
	h.Takeovers = append(h.Takeovers, o)
	h.mu.Unlock()
}

// AddCorrupt records an object that did not decode.
func (h *History) AddCorrupt(what string) {
	h.mu.Lock()
	h.Corrupt = append(h.Corrupt, what)
	h.mu.Unlock()
}

// RunsOf turns IDs, in the order a broker returned them, into runs of
// consecutive values.
func RunsOf(ids []int64) []Run {
	var runs []Run
	for _, id := range ids {
		if n := len(runs); n > 0 && runs[n-1].N < 1<<30 && runs[n-1].First+int64(runs[n-1].N) == id {
			runs[n-1].N++
			continue
		}
		runs = append(runs, Run{First: id, N: 1})
	}
	return runs
}
