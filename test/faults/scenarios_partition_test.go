//go:build faults

package faults

import (
	"syscall"
	"testing"
	"time"
)

// storeRestarter is a storeBackend the runner can restart
// (kube-apiserver): testPartitionStore then adds a phase that kills it and
// starts it again.
type storeRestarter interface {
	// Restart stops the store with sig and starts it again after down; it
	// returns once the store answers.
	Restart(sig syscall.Signal, down time.Duration) error
}

// storePartition is how long the partitioned holder of a store's partition
// scenario is cut off: past the renew deadline and the grace after its last
// write (2 s + outageGrace), so that it must declare its loss while cut off,
// and past the lease's expiry on the store's clock (lease + 1 s + the clock
// margin, and Last-Modified's whole second), so that the spare may take its
// ID over meanwhile.
const storePartition = outageGrace + 4*time.Second

// testPartitionStore runs scenario name (TestPartitionAzblob's,
// TestPartitionGCS's, TestPartitionK8s's): four real brokers on backend's store, on three node
// IDs, one of them a spare waiting for an ID, at 3 s leases (renewed every
// second, Cloud Storage's shortest) and a loss grace of 5 s, each reaching
// the store through a TCPProxy of its own, through three phases:
//
//  1. one holder (the seed picks it) partitioned for storePartition: its
//     fence falls, it must declare its loss while cut off and exit 3, and
//     the spare takes its ID over, expired, with a higher version;
//  2. one holder partitioned for shortOutage: it must enter jeopardy
//     (/health 503), recover with the same version and serve again;
//  3. every broker's store black-holed at once for shortOutage (the
//     emulators keep their objects in memory, so the outage is the
//     proxies', not a restart): each must enter jeopardy, recover and
//     serve again;
//  4. on a store the runner can restart (storeRestarter: kube-apiserver),
//     the store killed and started again after 0.3 s: each must recover
//     and serve again, when the store was back within shortBound (else the
//     phase is held to the checks only, as in the outage scenarios).
//
// Then every check of Check (0 duplicate IDs, the floors and fences, the
// exit codes, and the store history the brokers recorded, linearizable), and
// checkOutagePhases for the short phases: no exit, no acquisition, no version
// change.
//
// With a mutation (the mutant binary) only the checks' verdict is asserted:
// nofence must give superseded-holder-served.
func testPartitionStore(t *testing.T, s *suite, backend storeBackend, name string, seed uint64, mutation string) {
	var (
		phases []*outagePhase
		victim *proc
		vNode  int
		vVer   int64
	)
	sc := scenario{
		name: name, seed: seed, brokers: 4, clusterSize: 3, backend: backend, mutation: mutation,
		lease: outageLease, renew: time.Second, lossGrace: outageGrace,
		idsEvery: [2]time.Duration{5 * time.Millisecond, 20 * time.Millisecond}, idsN: 100,
	}
	sc.script = func(r *run) {
		// As many brokers as node IDs answer /health 200 and have answered
		// /ids, which tells the test their node IDs.
		if _, ok := r.waitServing(30 * time.Second); !ok {
			r.t.Errorf("%d brokers did not serve within 30s of the start", sc.clusterSize)
			return
		}
		r.note("on %s", backend.Name())

		held := r.eligible(true)
		victim = held[int(seed%uint64(len(held)))]
		vNode, vVer = int(victim.node.Load()), victim.version.Load()
		r.apply(Event{At: r.since(), Kind: KindPartition, Pick: int(seed % uint64(len(held))), For: storePartition, Fault: Fault{Action: BlackHole}})
		if !waitFor(30*time.Second, func() bool { return r.holders() == sc.clusterSize }) {
			r.t.Errorf("node %d was not taken over within 30s of the partition's end", vNode)
			return
		}

		ph := r.beginPhase("partition-short", "one holder partitioned from the store for less than the grace", true, true)
		p := ph.holders[int(seed/7%uint64(len(ph.holders)))]
		ph.holders = []*proc{p}
		r.note("partition %s for %v", p.name, shortOutage)
		_ = p.proxy.Inject(Fault{Action: BlackHole})
		time.Sleep(shortOutage)
		_ = p.proxy.Heal()
		r.endPhase(ph)
		phases = append(phases, ph)

		ph = r.beginPhase("outage-blackhole", "every broker's store black-holed", true, true)
		r.blackHoleAll(shortOutage)
		r.endPhase(ph)
		phases = append(phases, ph)

		rs, ok := backend.(storeRestarter)
		if !ok {
			return
		}
		ph = r.beginPhase("outage-restart", "the store killed and restarted after 0.3s", true, false)
		if err := rs.Restart(syscall.SIGKILL, 300*time.Millisecond); err != nil {
			r.t.Errorf("restart the store: %v", err)
		}
		r.endPhase(ph)
		if ph.back-ph.began > shortBound {
			r.note("the store took %v to come back, longer than %v: phase %q is not held to the short-outage rules",
				ph.back-ph.began, shortBound, ph.what)
			ph.short = false
		}
		phases = append(phases, ph)
	}
	r := newRun(t, s, sc)
	rep := r.execute()
	if mutation != "" {
		if rep.Count(CheckSuperseded) == 0 {
			t.Errorf("the checks did not find the partitioned holder serving with the fence broken (%s): %s", mutation, rep.Summary())
		}
		return
	}
	if rep.Failed() {
		t.Errorf("the checks failed on %s (reproduce with -seed %d): %s", backend.Name(), seed, rep.Summary())
	}
	if victim == nil {
		return // the script failed before the partition
	}
	checkOutagePhases(t, r, phases)
	b := r.h.Broker(victim.idx)
	switch {
	case !b.Exited || b.ExitCode != 3:
		t.Errorf("%s, partitioned for %v while holding node %d, exited %v with %d, want exit 3 (lease lost): %s", b.Name, storePartition, vNode, b.Exited, b.ExitCode, b.ExitErr)
	case b.LossLoggedAt == 0:
		t.Errorf("%s never logged its loss", b.Name)
	}
	taken := false
	if vNode < 0 {
		t.Fatalf("the partitioned %s's node ID was never seen", b.Name)
	}
	for _, o := range r.h.Takeovers {
		taken = taken || o.Node == vNode && o.Version > vVer && o.Expired && o.Broker != victim.idx
	}
	if !taken {
		t.Errorf("node %d (v%d, held by the partitioned %s) was never taken over expired by another broker", vNode, vVer, b.Name)
	}
}

// holders returns how many slots' brokers answer /health 200.
func (r *run) holders() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	n := 0
	for _, p := range r.slots {
		if p != nil && !p.hasExited() && p.healthy.Load() {
			n++
		}
	}
	return n
}
