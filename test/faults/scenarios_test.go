//go:build faults

package faults

import (
	"fmt"
	"testing"
	"time"
)

// forEachSeed runs f, as a subtest "seed=N", for each seed of scenario: the
// -seed flag's, or else every entry of the corpus (CorpusFile) for it. A
// known-failing entry is left out, and the log says so.
func forEachSeed(t *testing.T, scenario string, f func(t *testing.T, seed uint64)) {
	t.Helper()
	if *flagSeed != 0 {
		t.Run(fmt.Sprintf("seed=%d", *flagSeed), func(t *testing.T) { f(t, *flagSeed) })
		return
	}
	entries, err := LoadCorpus(CorpusFile)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, e := range entries {
		if e.Scenario != scenario {
			continue
		}
		n++
		if e.KnownFailing {
			t.Logf("%s line %d: seed %d left out, known failing: %s", CorpusFile, e.Line, e.Seed, e.Why)
			continue
		}
		t.Run(fmt.Sprintf("seed=%d", e.Seed), func(t *testing.T) {
			t.Logf("%s line %d: seed %d: %s", CorpusFile, e.Line, e.Seed, e.Why)
			f(t, e.Seed)
		})
	}
	if n == 0 {
		t.Fatalf("%s has no seed for scenario %s", CorpusFile, scenario)
	}
}

// TestFaults is the suite: brokers on a real MinIO under every kind of
// fault, and then every check.
func TestFaults(t *testing.T) {
	s := needSuite(t)
	forEachSeed(t, ScenarioFaults, func(t *testing.T, seed uint64) { testFaults(t, s, seed, false) })
}

// testFaults runs TestFaults's scenario for seed, in read mode (TestFaultsRead)
// when read is set.
func testFaults(t *testing.T, s *suite, seed uint64, read bool) *run {
	d := *flagDuration
	if d == 0 {
		d = FaultsDuration
	}
	sc := scenario{
		name: ScenarioFaults, seed: seed, duration: d, fencedStop: true,
		brokers: *flagBrokers, clusterSize: max(*flagBrokers-1, 1),
		lease: FaultsLease, renew: time.Second, gossip: true, lossGrace: FaultsLease,
		offsets:     []time.Duration{-2500 * time.Millisecond, -time.Second, 0, 0, time.Second, 2 * time.Second},
		startFaults: true,
		idsEvery:    [2]time.Duration{5 * time.Millisecond, 20 * time.Millisecond}, idsN: 100,
	}
	kinds, err := ParseKinds(*flagKinds)
	if err != nil {
		t.Fatal(err)
	}
	sc.schedule = FaultsSchedule(seed, false, d, kinds)
	if read {
		sc = inReadMode(sc, ScenarioFaultsRead)
	}
	r := newRun(t, s, sc)
	rep := r.execute()
	if rep.Failed() {
		t.Fatalf("the checks failed (reproduce with -seed %d): %s", sc.seed, rep.Summary())
	}
	if rep.IDs < 10000 {
		t.Fatalf("only %d IDs checked: the run did not exercise the brokers", rep.IDs)
	}
	terms := map[int64]bool{}
	for _, o := range r.h.Leaders {
		if o.Self {
			terms[o.Term] = true
		}
	}
	if len(terms) == 0 { // how many terms depends on whether the faults hit the leader
		t.Fatalf("/leader answered self for %d term(s) in %d answers: the election checks were not exercised", len(terms), len(r.h.Leaders))
	}
	t.Logf("election %q: %d /leader answers, self seen for %d terms", electionName, len(r.h.Leaders), len(terms))
	return r
}

// handovers is a scenario of one node ID and two brokers, a holder and a
// spare: at each event the holder is stopped (SIGTERM) or paused, and the
// spare takes the ID over; a fresh spare starts.
func handovers(name string, seed uint64, mutation string, kind Kind, every, pause, d time.Duration) scenario {
	sc := scenario{
		name: name, seed: seed, duration: d, brokers: 2, clusterSize: 1,
		lease: 3 * time.Second, renew: time.Second, mutation: mutation,
		idsEvery: [2]time.Duration{2 * time.Millisecond, 8 * time.Millisecond}, idsN: 100,
	}
	for at := 5 * time.Second; at+pause < d-time.Second; at += every {
		sc.schedule = append(sc.schedule, Event{At: at, Kind: kind, For: pause})
	}
	return sc
}

// TestMutationNoFloor: with the floor broken (NODEID_MUTATION=nofloor), a
// successor whose clock is behind its predecessor's takes the released node
// ID over and issues IDs its predecessor issued: the checks must find
// duplicates. The same scenario with the real broker must pass.
func TestMutationNoFloor(t *testing.T) {
	s := needSuite(t)
	forEachSeed(t, ScenarioNoFloor, func(t *testing.T, seed uint64) { testMutationNoFloor(t, s, seed) })
}

func testMutationNoFloor(t *testing.T, s *suite, seed uint64) {
	for _, mutation := range []string{"", "nofloor"} {
		name := "nofloor"
		if mutation == "" {
			name = "nofloor-control"
		}
		t.Run(name, func(t *testing.T) {
			sc := handovers(name, seed, mutation, KindTerm, 4*time.Second, 0, 22*time.Second)
			// Every broker's clock is 1.5 s behind the one started before it.
			sc.offsetFor = func(n int) time.Duration { return -time.Duration(n) * 1500 * time.Millisecond }
			rep := newRun(t, s, sc).execute()
			if mutation == "" {
				if rep.Failed() {
					t.Fatalf("the real broker failed the checks: %s", rep.Summary())
				}
				return
			}
			if rep.Count(CheckDuplicate) == 0 {
				t.Fatalf("the checks found no duplicate with the floor broken: %s", rep.Summary())
			}
		})
	}
}

// TestMutationNoFence: the fence, of node IDs and of elections. At 5 s and
// 18 s the leader (the node ID's holder too: a broker campaigns once it holds
// a node ID) is stalled (KindStallLeader): its S3 is black-holed until its
// renewals of both hang, then it is paused (SIGSTOP) for 8 s (lease 3 s) and
// woken with its S3 still black-holed for its renew deadline (2 s), while the
// spare takes the node ID and the leadership over. /leader is polled on every
// 50 ms /health tick.
//
// The timing (times from the SIGSTOP): both last successful writes were sent
// 1-2 s before it (renewals every second). The store judges a lease expired
// once its age on the store's clock exceeds lease + clock resolution + clock
// margin = 5 s in whole seconds: 5-6 s after the write, 3-5 s into the stall.
// The spare takes the node ID then, campaigns, and is elected (its first
// /leader self answer, at a higher term) at 3-5.6 s, well before the stalled
// leader wakes at 8 s. The real leader's fence fell at t0 + lease - safety
// margin (2.5 s), at most 1.5 s into the stall: it never answers self nor
// /health 200 again. With the fence broken (NODEID_MUTATION=nofence) each
// claim stays valid until its renewal is found lost: when it wakes, the hung
// renewal times out and the read-back hangs for StoreTimeout (1 s) before the
// renew deadline, long past, ends it. So it answers self for its old term to
// every /leader request sent after the successor's election: those queued
// while it was paused and those of the 1 s after it wakes, 20 a second, 3.4-6
// s: 68-120 term-regressed violations per stall. Its /health answers 200 to
// the requests sent after the takeover (superseded-holder-served) the same
// way. (It issues no ID: its reservation ran out, and the successor's floor
// is above it, so there are no duplicates.)
func TestMutationNoFence(t *testing.T) {
	s := needSuite(t)
	forEachSeed(t, ScenarioNoFence, func(t *testing.T, seed uint64) {
		testMutationNoFence(t, s, "nofence", func(name, mutation string) scenario {
			return handovers(name, seed, mutation, KindStallLeader, 13*time.Second, 8*time.Second, 31*time.Second)
		})
	})
}

// testMutationNoFence runs the scenario that mk makes (named base, or
// base+"-control" for the real broker) with the real broker and with the
// nofence mutant.
func testMutationNoFence(t *testing.T, s *suite, base string, mk func(name, mutation string) scenario) {
	for _, mutation := range []string{"", "nofence"} {
		name := base
		if mutation == "" {
			name = base + "-control"
		}
		t.Run(name, func(t *testing.T) {
			sc := mk(name, mutation)
			sc.leaderEvery = 1
			r := newRun(t, s, sc)
			rep := r.execute()
			stalls := StallTimelines(r.h)
			deposed := 0
			for _, l := range stalls {
				t.Log(l.String(r.h))
				if l.Successor < 0 || l.Elected >= l.Woken {
					t.Errorf("no successor answered /leader self before the stalled leader was woken: the stall is too short for the lease")
				}
				deposed += l.Deposed
			}
			if len(stalls) == 0 {
				t.Fatalf("no leader was stalled: %s", rep.Summary())
			}
			if mutation == "" {
				if rep.Failed() {
					t.Fatalf("the real broker failed the checks: %s", rep.Summary())
				}
				return
			}
			t.Logf("%d stalls: %s %d, %s %d (deposed self answers %d)", len(stalls),
				CheckTermOrder, rep.Count(CheckTermOrder), CheckSuperseded, rep.Count(CheckSuperseded), deposed)
			if rep.Count(CheckTermOrder) == 0 || deposed == 0 {
				t.Errorf("the checks did not find the deposed leader answering /leader self with the fence broken: %s", rep.Summary())
			}
			if rep.Count(CheckSuperseded) == 0 {
				t.Errorf("the checks did not find the superseded holder serving with the fence broken: %s", rep.Summary())
			}
		})
	}
}
