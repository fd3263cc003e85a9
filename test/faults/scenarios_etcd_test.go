//go:build faults

package faults

import (
	"testing"
	"time"
)

// TestFaultsEtcd is the suite on a real etcd (a single member, the pinned
// server of test/etcd/install.sh): brokers under kill -9, SIGTERM, SIGSTOP
// past the lease, partitions from etcd past the lease (each broker reaches
// etcd through a TCPProxy), refused and reset connections, and etcd restarts
// (SIGTERM or SIGKILL, its data kept); then every check of TestFaults.
func TestFaultsEtcd(t *testing.T) {
	s := needEtcd(t)
	forEachSeed(t, ScenarioFaultsEtcd, func(t *testing.T, seed uint64) { testFaultsEtcd(t, s, seed) })
}

func testFaultsEtcd(t *testing.T, s *suite, seed uint64) {
	d := *flagDuration
	if d == 0 {
		d = FaultsEtcdDuration
	}
	sc := scenario{
		name: ScenarioFaultsEtcd, seed: seed, duration: d, etcd: true, fencedStop: true,
		brokers: 4, clusterSize: 3,
		lease: FaultsLease, renew: time.Second, gossip: true, lossGrace: FaultsLease,
		offsets:  []time.Duration{-2500 * time.Millisecond, -time.Second, 0, 0, time.Second, 2 * time.Second},
		idsEvery: [2]time.Duration{5 * time.Millisecond, 20 * time.Millisecond}, idsN: 100,
		// Every broker's clock is also wrong within the rate bound, with
		// bumps and strobes (TestClockFaults runs them on MinIO): etcd
		// judges expiry on its own clock, against the brokers' fences.
		clockRates: ClockRatesWithin,
	}
	sc.schedule = FaultsSchedule(seed, true, d, nil)
	rep := newRun(t, s, sc).execute()
	if rep.Failed() {
		t.Fatalf("the checks failed on etcd (reproduce with -seed %d): %s", sc.seed, rep.Summary())
	}
	if rep.IDs < 10000 {
		t.Fatalf("only %d IDs checked: the run did not exercise the brokers", rep.IDs)
	}
}

// TestMutationNoFloorEtcd is TestMutationNoFloor on etcd: the mutation
// switch must be caught there too, and the real broker must pass.
func TestMutationNoFloorEtcd(t *testing.T) {
	s := needEtcd(t)
	forEachSeed(t, ScenarioNoFloorEtcd, func(t *testing.T, seed uint64) { testMutationNoFloorEtcd(t, s, seed) })
}

func testMutationNoFloorEtcd(t *testing.T, s *suite, seed uint64) {
	for _, mutation := range []string{"", "nofloor"} {
		name := "nofloor-etcd"
		if mutation == "" {
			name = "nofloor-etcd-control"
		}
		t.Run(name, func(t *testing.T) {
			sc := handovers(name, seed, mutation, KindTerm, 4*time.Second, 0, 22*time.Second)
			sc.etcd = true
			sc.offsetFor = func(n int) time.Duration { return -time.Duration(n) * 1500 * time.Millisecond }
			rep := newRun(t, s, sc).execute()
			if mutation == "" {
				if rep.Failed() {
					t.Fatalf("the real broker failed the checks on etcd: %s", rep.Summary())
				}
				return
			}
			if rep.Count(CheckDuplicate) == 0 {
				t.Fatalf("the checks found no duplicate on etcd with the floor broken: %s", rep.Summary())
			}
		})
	}
}
