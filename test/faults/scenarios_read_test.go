//go:build faults

package faults

import (
	"fmt"
	"testing"
	"time"
)

// The fault scenarios in read mode (keep-alive by reads, docs/evidence/design.md
// section 11; issue 36, "Proof in tests", item 3): the brokers run with
// --keepalive read --window 3s --backstop 12s, so that a holder keeps its
// lease alive with a conditional GET every 700 ms and a backstop write every
// 4 s, and a broker that wants a held ID challenges a holder that gossip
// does not show live, or whose backstop is late. Every check of the write
// mode's runs holds unchanged: the checks read no lease duration (a fence is
// judged by its evidence, docs/evidence/faults.md "The checks"), and the store's
// history counts the 304s as reads of the value their ETag names.

// readMode is a scenario's keep-alive by reads: the brokers run with
// --keepalive read --window W --backstop B, the backstop interval and the
// poll interval left to their defaults (B/3, and the lesser of W/2 and 3/4
// of W - safety margin - store timeout).
type readMode struct {
	window, backstop time.Duration
}

// args are the broker's flags for the mode.
func (m *readMode) args() []string {
	return []string{"--keepalive", "read", "--window", m.window.String(), "--backstop", m.backstop.String()}
}

// inReadMode returns sc in read mode, named name: its lease (what the
// records state) is the backstop, its renew interval the backstop interval
// (what the runner waits on for a write to hang: two of them), and its loss
// grace, when set, the broker's default (the backstop). The schedule is
// left as it is: its pauses and partitions (lease 3 s + 1 to 3 s) outlast the
// window, so they fence the holder, which then recovers by a read or loses
// its ID to a challenge.
func inReadMode(sc scenario, name string) scenario {
	sc.name = name
	sc.read = &readMode{window: ReadWindow, backstop: ReadBackstop}
	sc.lease, sc.renew = ReadBackstop, ReadBackstop/3
	if sc.lossGrace > 0 {
		sc.lossGrace = ReadBackstop
	}
	return sc
}

// TestFaultsRead is TestFaults in read mode: 5 brokers (gossip on) on 4
// node IDs, every default kind of fault. A killed, paused or partitioned
// holder is challenged by the spare (gossip no longer shows it) and its ID
// taken once the confirm stood its window, or, alive again, it answers the
// challenge. The run must show challenges in the store's writes.
func TestFaultsRead(t *testing.T) {
	s := needSuite(t)
	forEachSeed(t, ScenarioFaultsRead, func(t *testing.T, seed uint64) {
		r := testFaults(t, s, seed, true)
		c := r.challenges()
		t.Logf("read mode: %v", c)
		if c.Challenges == 0 {
			t.Errorf("no challenge was written in read mode: %v", c)
		}
	})
}

// TestStormsRead is TestStorms in read mode: 503 on half of every broker's
// requests (its reads included) for 20 s, 409 on half of its writes for 8 s,
// then a release answered 409; no broker exits, and the stopped one exits 0
// with its lease released.
func TestStormsRead(t *testing.T) {
	s := needSuite(t)
	forEachSeed(t, ScenarioStormsRead, func(t *testing.T, seed uint64) {
		r := testStorms(t, s, seed, true)
		if n := s3Total(r.all, "GET 304"); n == 0 {
			t.Errorf("no conditional read was answered 304: the brokers did not keep their leases alive by reads")
		}
	})
}

// readStall is how long TestMutationNoFenceRead pauses the leader: long
// enough for the spare to take the node ID over (a challenge once the
// record is older than the backstop interval + window, 7 s, or the backstop
// itself, then the window, and the floor: up to a backstop after the
// holder's last write) and then the election (a challenge of the leader's
// record, its confirm and its window, 5 to 7 s on the store's clock): the
// successor answers /leader self 15 to 21 s into the stall.
const readStall = 25 * time.Second

// TestMutationNoFenceRead is TestMutationNoFence in read mode: the leader is
// stalled once its keep-alive reads of both its node ID and its election hang
// in the black hole (so it is paused with its fence up), for readStall,
// while the spare challenges and takes both. The real broker passes; the
// nofence mutant, whose fence stays up, answers /leader self for its old
// term and /health 200 after its successor took over.
func TestMutationNoFenceRead(t *testing.T) {
	s := needSuite(t)
	forEachSeed(t, ScenarioNoFenceRead, func(t *testing.T, seed uint64) {
		testMutationNoFence(t, s, "nofence-read", func(name, mutation string) scenario {
			// One stall at 5 s: it lasts readStall, then the store stays
			// black-holed for the renew deadline (8 s); the fault phase
			// covers it.
			d := 5*time.Second + readStall + renewDeadlineFor(ReadBackstop) + 3*time.Second
			sc := handovers(name, seed, mutation, KindStallLeader, d, readStall, d)
			sc = inReadMode(sc, name)
			if len(sc.schedule) != 1 {
				panic(fmt.Sprintf("nofence-read: %d stalls scheduled, want 1", len(sc.schedule)))
			}
			return sc
		})
	})
}

// ClockRatesWithinRead are the clock rates of TestClockFaultsRead's
// within-bound run. In read mode a holder is safe while its clock runs
// faster than 1 - SafetyMargin/Window (0.67 at a 3 s window and a 1 s
// margin) for the fence its reads arm, and than 1 - SafetyMargin/Backstop
// (0.92 at a 12 s backstop) for the backstop's cap (docs/evidence/design.md section
// 11: M_B must cover the clock's rate error over B): 7 % and 5 % slow, and
// 20 % and 25 % fast.
var ClockRatesWithinRead = []float64{0.93, 0.95, 1.2, 1.25}

// TestClockFaultsRead is TestClockFaults in read mode.
//
// "within": one node ID, a holder and a spare, gossip on, clock rates from
// ClockRatesWithinRead, bumps and strobes of every broker's real-time clock.
// The first broker's clock runs 7 % slow and its real-time clock steps 5 s
// forward 3.5 s into its life (its own clock), past the 2 s its fence has
// left: its fence falls, and its next read that shows its ETag (every 700
// ms) recovers it; it steps 5 s forward again at 4.6 s and back at 4.9 s: the
// fence stays down until a read recovers it, not lifted by the step back. It
// must answer /health 200 with a recovery count of 2. Then a partition of the
// holder past the window, a SIGTERM, and a 9 s pause (gossip soon stops
// showing the paused holder, the spare challenges it, and the holder answers
// when it wakes, or loses its ID to the confirm). Every check must pass.
//
// "beyond": the holder's clock runs at clockBeyondRate (0.2), far below read
// mode's bound for the backstop (0.92), and nothing else goes wrong. Its
// backstop writes are due every 4 s of its clock, 20 s of real time, while
// its reads keep proving its lease: so its record, unwritten since its take,
// expires by the backstop on the store's clock (12 s + clock resolution +
// clock margin) and the spare takes the ID over 14 to 15 s after the take,
// while the holder's fence, capped only 11 s of its clock (55 s) after its
// take, stands on its last read (2 s of its clock, 10 s of real time, from
// that read's send). Two brokers serve one node ID at once:
// superseded-holder-served must fire. No ID repeats even so: the successor
// issues above the holder's reservation, which the holder never passes
// (duplicate-id and timestamp-below-floor stay 0).
// clockBeyondReadRate is the rate of the holder of the read-mode beyond-bound
// run: its fence, W - M = 2 s on its clock, stands 20 s of real time after
// its take, while the spare, judging the window on the store's clock, takes
// the confirm about 15 s in: the slow holder still serves then by about 5 s.
const clockBeyondReadRate = 0.1

func TestClockFaultsRead(t *testing.T) {
	s := needSuite(t)
	forEachSeed(t, ScenarioClockRead, func(t *testing.T, seed uint64) {
		t.Run("within", func(t *testing.T) {
			sc := inReadMode(clockScenario("clock-read-within", seed, 30*time.Second), "clock-read-within")
			sc.gossip = true // the spare challenges the paused holder once gossip no longer shows it
			r := runClockWithin(t, s, sc, 0.93, 3500*time.Millisecond, ClockRatesWithinRead, "a read")
			t.Logf("read mode: %v", r.challenges())
		})
		t.Run("beyond", func(t *testing.T) {
			sc := inReadMode(clockScenario("clock-read-beyond", seed, 22*time.Second), "clock-read-beyond")
			sc.serialStart = true // the slow broker holds
			sc.clockFor = func(n int) ClockFault {
				if n == 0 {
					return ClockFault{Rate: clockBeyondReadRate}
				}
				return ClockFault{}
			}
			// The slow holder is cut off from S3 from 2 s on, before its
			// first read (7.5 s of real time after its take): it cannot
			// answer the spare's challenge (its backstop is late at 7 s),
			// nor see the take, and its fence, W - M = 2 s on its clock
			// from its take, stands until about 20 s: the spare takes the
			// confirm at about 15 s.
			sc.schedule = []Event{{At: 2 * time.Second, Kind: KindPartition, Pick: 0, For: 20 * time.Second,
				Fault: Fault{Action: BlackHole}}}
			r := newRun(t, s, sc)
			rep := r.execute()
			if rep.Count(CheckSuperseded) == 0 {
				t.Fatalf("a holder whose clock runs at %v was not seen serving after its successor took over: %s", clockBeyondReadRate, rep.Summary())
			}
			for _, c := range []string{CheckDuplicate, CheckTimestampOrder, CheckSharedVersion, CheckVersionOrder, CheckCorrupt, CheckLinearizable} {
				if n := rep.Count(c); n > 0 {
					t.Errorf("%s: %d violations beyond the rate bound, want none (the floor still separates the two holders' IDs): %s", c, n, rep.Summary())
				}
			}
		})
	})
}
