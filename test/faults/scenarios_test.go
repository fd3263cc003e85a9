//go:build faults

package faults

import (
	"sync"
	"testing"
	"time"
)

var (
	seedOnce sync.Once
	seed     uint64
)

// seedFor returns -seed, or one seed from the clock for the whole test
// binary, so that the seed any scenario prints reproduces them all.
func seedFor() uint64 {
	seedOnce.Do(func() {
		seed = *flagSeed
		if seed == 0 {
			seed = uint64(time.Now().UnixNano()%1_000_000 + 1)
		}
	})
	return seed
}

// TestFaults is the suite: brokers on a real MinIO under every kind of
// fault, and then every check.
func TestFaults(t *testing.T) {
	s := needSuite(t)
	d := *flagDuration
	if d == 0 {
		d = 60 * time.Second
	}
	sc := scenario{
		name: "faults", seed: seedFor(), duration: d,
		brokers: *flagBrokers, clusterSize: max(*flagBrokers-1, 1),
		lease: 3 * time.Second, renew: time.Second, gossip: true,
		offsets:     []time.Duration{-2500 * time.Millisecond, -time.Second, 0, 0, time.Second, 2 * time.Second},
		startFaults: true,
		idsEvery:    [2]time.Duration{5 * time.Millisecond, 20 * time.Millisecond}, idsN: 100,
	}
	kinds, err := ParseKinds(*flagKinds)
	if err != nil {
		t.Fatal(err)
	}
	sc.schedule = NewSchedule(ScheduleConfig{Seed: sc.seed, Duration: d, Lease: sc.lease, RenewDeadline: sc.renewDeadline(), Kinds: kinds})
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
	for _, mutation := range []string{"", "nofloor"} {
		name := "nofloor"
		if mutation == "" {
			name = "nofloor-control"
		}
		t.Run(name, func(t *testing.T) {
			sc := handovers(name, seedFor(), mutation, KindTerm, 4*time.Second, 0, 22*time.Second)
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

// TestMutationNoFence: with the fence broken (NODEID_MUTATION=nofence), a
// holder stalled for longer than its lease (paused while a renewal hangs on a
// partitioned S3) wakes up believing it holds its lease while its successor
// serves the node ID: it answers /health 200 to requests sent after the
// takeover. (It issues no ID: its reservation ran out, and the successor's
// floor is above it, so there are no duplicates.)
func TestMutationNoFence(t *testing.T) {
	s := needSuite(t)
	for _, mutation := range []string{"", "nofence"} {
		name := "nofence"
		if mutation == "" {
			name = "nofence-control"
		}
		t.Run(name, func(t *testing.T) {
			sc := handovers(name, seedFor(), mutation, KindStall, 13*time.Second, 8*time.Second, 31*time.Second)
			rep := newRun(t, s, sc).execute()
			if mutation == "" {
				if rep.Failed() {
					t.Fatalf("the real broker failed the checks: %s", rep.Summary())
				}
				return
			}
			if rep.Count(CheckSuperseded) == 0 {
				t.Fatalf("the checks did not find the superseded holder serving with the fence broken: %s", rep.Summary())
			}
		})
	}
}
