package nodeid_test

import (
	"flag"
	"fmt"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nodeid/nodeid/lease"
	"github.com/nodeid/nodeid/nodeid"
)

var (
	simSeeds          = flag.Int("sim.seeds", 200, "seeds of the deterministic simulation")
	simSeed           = flag.Uint64("sim.seed", 0, "run only this simulation seed (to reproduce a failure)")
	simElectionSeeds  = flag.Int("sim.electionseeds", 100, "seeds of the election simulation")
	simMutationSeeds  = flag.Int("sim.mutationseeds", 40, "seeds per mutation in the catch-rate tests")
	simShowMaxWaiting = flag.Bool("sim.waits", false, "log each seed's longest wait (to size the progress bound)")
	simTrace          = flag.Bool("sim.trace", false, "print every write, take, loss and fault of the runs (with -sim.seed)")
)

func runSim(seed uint64, params simParams) *simChecker {
	s := newSim(seed, params)
	s.run()
	return s.check
}

// runSims runs params(seed) for each of seeds, on as many goroutines as
// GOMAXPROCS (each run is deterministic and shares nothing), and returns the
// checkers in the order of seeds. Under the race detector it runs every
// raceDivisor-th seed only: the full sets run without it (test/all.sh), and
// the race detector needs only the code paths.
func runSims(seeds []uint64, params func(uint64) simParams) ([]uint64, []*simChecker) {
	if raceEnabled && len(seeds) > raceDivisor {
		var fewer []uint64
		for i, seed := range seeds {
			if i%raceDivisor == 0 {
				fewer = append(fewer, seed)
			}
		}
		seeds = fewer
	}
	out := make([]*simChecker, len(seeds))
	next := make(chan int)
	var wg sync.WaitGroup
	for range runtime.GOMAXPROCS(0) {
		wg.Go(func() {
			for i := range next {
				out[i] = runSim(seeds[i], params(seeds[i]))
			}
		})
	}
	for i := range seeds {
		next <- i
	}
	close(next)
	wg.Wait()
	return seeds, out
}

func simSeedList(n int) []uint64 {
	if *simSeed != 0 {
		return []uint64{*simSeed}
	}
	seeds := make([]uint64, n)
	for i := range seeds {
		seeds[i] = uint64(i + 1)
	}
	return seeds
}

// TestSimulation runs the node-ID simulation over its seeds: every fifth on
// the production timings, every other one with gossip hints.
func TestSimulation(t *testing.T) { testSimulation(t, simParamsFor, *simSeeds) }

// TestSimulationJudgedExpiry runs the simulation on a store that judges
// expiry itself (etcd's kind): the same seeds, tasks and faults.
func TestSimulationJudgedExpiry(t *testing.T) {
	testSimulation(t, func(seed uint64) simParams {
		p := simParamsFor(seed)
		p.judged = true
		return p
	}, *simSeeds)
}

// TestSimulationTornReads runs the simulation's seeds, and read mode's
// liveness world, on a store whose GETs tear as versitygw 1.8.0's may (a
// newer body with an older ETag): no rule, of safety or of liveness, fails.
func TestSimulationTornReads(t *testing.T) {
	for _, run := range []struct {
		name   string
		params func(uint64) simParams
		n      int
	}{{"all", simParamsFor, *simSeeds / 4}, {"liveness", livenessSimParamsFor, *simSeeds / 8}} {
		t.Run(run.name, func(t *testing.T) {
			counts := testSimulation(t, func(seed uint64) simParams {
				p := run.params(seed)
				p.tornReads = true
				return p
			}, run.n)
			if counts["torn read"] == 0 {
				t.Fatal("no read was torn: the run shows nothing")
			}
			t.Logf("%d torn reads", counts["torn read"])
		})
	}
}

// TestSimulationCatchesOlderBodyTears: on a store whose GETs tear the other
// way, an older body with a newer ETag, a holder can take another's ETag for
// its own, and the checker sees two holders.
func TestSimulationCatchesOlderBodyTears(t *testing.T) {
	testSimulationCatches(t, []simMutation{{name: "torn reads: an older body with a newer ETag", olderBodyTears: true}}, func(seed uint64) simParams {
		p := simParamsFor(seed)
		p.tornReads = true
		return p
	}, 0.4, true)
}

// TestSimulationElection runs an election through package election: five
// candidates, one name.
func TestSimulationElection(t *testing.T) {
	elected := testSimulation(t, electionSimParams, *simElectionSeeds)["acquired"]
	if elected < 2**simElectionSeeds {
		t.Fatalf("only %d elections over %d seeds: the simulation hands over too rarely to check anything", elected, *simElectionSeeds)
	}
}

// testSimulation runs every seed of n under params and fails at the first
// violation. It returns the sum of the runs' counts (claims acquired,
// faults met).
func testSimulation(t *testing.T, params func(uint64) simParams, n int) (counts map[string]int) {
	var steps, ids, outside int
	counts = map[string]int{}
	var longest time.Duration
	seeds, checkers := runSims(simSeedList(n), params)
	for i, seed := range seeds {
		k := checkers[i]
		if len(k.violations) > 0 {
			t.Fatalf("seed %d (reproduce: go test ./nodeid -run '%s$' -sim.seed %d -v):\n%s\n%s",
				seed, t.Name(), seed, strings.Join(k.violations, "\n"), k.summary())
		}
		steps, ids, outside = steps+k.steps, ids+k.issuedIDs, outside+k.outsideIDs
		for name, n := range k.s.counts {
			counts[name] += n
		}
		longest = max(longest, k.maxStuck)
		if seed == 1 || seed == 5 || *simShowMaxWaiting {
			t.Logf("seed %d: %s", seed, k.summary())
		}
	}
	t.Logf("%d seeds, %d checks, %d claims, %d IDs issued, %d by applications on the host's clock, longest wait for a takeable ID %v, no violation",
		len(seeds), steps, counts["acquired"], ids, outside, longest)
	return counts
}

func TestSimulationIsDeterministic(t *testing.T) {
	for _, run := range []struct {
		seed   uint64
		params func(uint64) simParams
	}{{7, simParamsFor}, {10, simParamsFor}, {3, electionSimParams}} { // gossip, production timings, an election
		a, b := runSim(run.seed, run.params(run.seed)), runSim(run.seed, run.params(run.seed))
		if a.summary() != b.summary() {
			t.Fatalf("seed %d, different runs:\n%s\n%s", run.seed, a.summary(), b.summary())
		}
	}
}

// simMutation breaks one rule on purpose, in every task of a run.
type simMutation struct {
	name   string
	rules  func(r *nodeid.SimRules, t *simTask, cfg nodeid.Config) // breaks rules of t's Provider, whose configuration is cfg
	config func(c *nodeid.Config)                                  // changes t's configuration
	// hostOnWall: the host's clock, which an application stamps IDs with,
	// is taken to be the node's wall clock (package node before issue 28).
	hostOnWall bool
	// oldIDFileRules: the id file's rules before the third review: no
	// horizon (validUntilMs is the fence alone), and after the
	// application's grace the release lowers the reservation to the host's
	// clock, below the file's highest validUntilMs.
	oldIDFileRules bool
	// olderBodyTears: the store's torn reads (simParams.tornReads) pair the
	// older body with the newer ETag, the direction no holder is safe on.
	olderBodyTears bool
	s3Only         bool // breaks a rule that a store judging expiry itself does not use
}

// The safety rules. The real rule judges a lease expired when Date -
// Last-Modified > lease + 1 s (resolution) + ClockMargin (1 s), and fences at
// t0 + lease - SafetyMargin on the holder's monotonic clock, t0 the send
// time of its last landed write.
var (
	mutWallClockExpiry = simMutation{name: "expiry judged on the taker's wall clock against expiresAt", rules: func(h *nodeid.SimRules, t *simTask, _ nodeid.Config) {
		h.StateOf = func(r *lease.Record, m lease.Meta) lease.State {
			switch {
			case r.Free():
				return lease.StateFree
			case t.Wall().After(r.ExpiresAt):
				return lease.StateExpired
			}
			return lease.StateHeld
		}
	}}
	// Everywhere the rule is used (the take, Acquire's wait for the first
	// expiry, the candidates' order). With ClockMargin = 1 s this is also
	// the rule without its clock margin: age > lease + 1 s.
	mutNoResolution = simMutation{name: "no resolution term: age > lease + ClockMargin", config: func(c *nodeid.Config) {
		c.ClockMargin -= lease.StoreClockResolution
	}, s3Only: true}
	mutNoSafetyMargin = simMutation{name: "no safety margin: fence at t0 + lease", rules: func(h *nodeid.SimRules, _ *simTask, cfg nodeid.Config) {
		h.FenceExtra = cfg.SafetyMargin
	}}
	mutNoFloor     = simMutation{name: "successor ignores the floor", rules: func(h *nodeid.SimRules, _ *simTask, _ nodeid.Config) { h.IgnoreFloor = true }}
	mutAdoptLate   = simMutation{name: "late write adopted with its read-back time as t0", rules: func(h *nodeid.SimRules, _ *simTask, _ nodeid.Config) { h.AdoptAtReadBack = true }}
	safetyMutation = []simMutation{mutWallClockExpiry, mutNoResolution, mutNoSafetyMargin, mutNoFloor, mutAdoptLate}
)

// The rules again, broken coarsely enough that the harm itself shows (two
// valid holders at once, an ID issued twice), not only the checker's rule:
// each rule the checker asserts directly is shown to matter.
var observedMutations = []simMutation{
	{name: "fence outlives the lease by 3 s", rules: func(h *nodeid.SimRules, _ *simTask, _ nodeid.Config) { h.FenceExtra = 3 * time.Second }},
	{name: "expiry judged 2 s early: age > lease - 2 s", rules: func(h *nodeid.SimRules, _ *simTask, _ nodeid.Config) {
		h.StateOf = func(r *lease.Record, m lease.Meta) lease.State {
			switch {
			case r.Free():
				return lease.StateFree
			case m.Liveness.Judged() && m.Liveness == lease.LivenessExpired,
				!m.Liveness.Judged() && lease.Expired(m.LastModified, m.Date, r.Lease()-3*time.Second, 0):
				return lease.StateExpired
			}
			return lease.StateHeld
		}
	}},
	mutNoFloor,
}

// The recovery rule broken (issue 24): a claim in jeopardy recovers on a
// read-back that shows another writer's record, or stays valid past its
// fence while in jeopardy.
var recoveryMutations = []simMutation{
	{name: "recover although the object changed", rules: func(h *nodeid.SimRules, _ *simTask, _ nodeid.Config) { h.RecoverChanged = true }},
	{name: "issue during jeopardy", rules: func(h *nodeid.SimRules, _ *simTask, _ nodeid.Config) { h.IssueInJeopardy = true }},
}

// The read-mode rules broken (docs/evidence/design.md section 11): a read that shows
// the claim's ETag re-arms the fence from its answer's arrival instead of its
// send, or for the backstop, uncapped, instead of the window. The challenge
// rules broken are shown by challenge_test.go: the runs here rarely make the
// schedules that need (a stale holder meeting a challenge of its successor, a
// holder whose answers fail while its reads work).
var readMutations = []simMutation{
	{name: "read re-arms from its answer, not its send", rules: func(h *nodeid.SimRules, _ *simTask, _ nodeid.Config) { h.ReadArmAtAnswer = true }},
	{name: "read re-arms for the backstop, no cap", rules: func(h *nodeid.SimRules, _ *simTask, _ nodeid.Config) { h.ReadArmBackstop = true }},
}

// The liveness bugs the progress rule catches.
var progressMutations = []simMutation{
	{name: "Acquire never takes an ID", rules: func(h *nodeid.SimRules, _ *simTask, _ nodeid.Config) { h.NeverTake = true }},
	{name: "a lease once read held is never read again", rules: func(h *nodeid.SimRules, _ *simTask, _ nodeid.Config) { h.NoRevisit = true }},
}

// TestSimulationCatchesBrokenRules: the checker must catch every broken rule by
// a wide margin: each mutation runs over the same seeds, and at least 90 % of
// them must report a violation. The table of catch rates is logged (-v), and
// recorded in docs/evidence/simulation.md.
func TestSimulationCatchesBrokenRules(t *testing.T) {
	testSimulationCatches(t, safetyMutation, defaultSimParamsFor, 0.9, false)
}

// TestSimulationJudgedCatchesBrokenRules is TestSimulationCatchesBrokenRules
// on a store that judges expiry itself, for the rules such a store uses.
func TestSimulationJudgedCatchesBrokenRules(t *testing.T) {
	testSimulationCatches(t, safetyMutation, func(seed uint64) simParams {
		p := defaultSimParamsFor(seed)
		p.judged = true
		return p
	}, 0.9, false)
}

// TestSimulationCatchesBrokenRecovery: the jeopardy and recovery rule broken
// (docs/evidence/design.md section 6) is caught in at least 90 % of the seeds, on both
// kinds of store.
func TestSimulationCatchesBrokenRecovery(t *testing.T) {
	for _, judged := range []bool{false, true} {
		testSimulationCatches(t, recoveryMutations, func(seed uint64) simParams {
			p := defaultSimParamsFor(seed)
			// A recovery on a changed object needs a holder in jeopardy
			// that a successor takes over before it gives up: longer runs
			// see more of them (3 minutes: 36 and 38 of 40 seeds caught).
			// Since the simulation runs the real renewal loop, a graceful
			// stop may end a jeopardy (it waited for the round before): 5
			// minutes catch 35 and 39, 8 minutes 36 and 39, 12 minutes 40
			// and 40.
			p.judged, p.duration = judged, 12*time.Minute
			return p
		}, 0.9, false)
	}
}

// TestSimulationCatchesBrokenReads: the read-mode rules broken are caught in
// at least 90 % of the seeds of a read-mode run.
func TestSimulationCatchesBrokenReads(t *testing.T) {
	testSimulationCatches(t, readMutations, readSimParamsFor, 0.9, false)
}

// readSimParamsFor is defaultSimParamsFor in read mode.
func readSimParamsFor(seed uint64) simParams {
	p := defaultSimParamsFor(seed)
	p.readMode, p.backstop = true, readBackstop(seed, p)
	return p
}

// The liveness rules broken: review 5's fixes reverted, each a rule value
// (simrules_test.go), in the world where the check that catches it
// (sim_live_test.go) applies: a retry pause that no wake ends lets a
// healthy holder lose its ID to a challenge (without gossip, where a waiter
// reads a live holder's lease and finds its backstop late); an owner that
// leaves a final fall to the backstop keeps a fenced claim open
// (NoLossGrace); a stale challenge left standing keeps a crashed holder's ID
// untaken (gossip finds the crash).
var livenessMutations = []struct {
	m      simMutation
	params func(uint64) simParams
	bar    float64
}{
	{simMutation{name: "retry pause that no wake ends (healthy holder kept)", rules: func(r *nodeid.SimRules, _ *simTask, _ nodeid.Config) { r.UnwokenRetries = true }},
		func(seed uint64) simParams {
			p := livenessSimParamsFor(seed)
			p.gossip, p.lossGrace = false, 0
			return p
		}, 0.9},
	{simMutation{name: "the owner leaves a final fall to the backstop (fall ends)", rules: func(r *nodeid.SimRules, _ *simTask, _ nodeid.Config) { r.UnendedFall = true }},
		func(seed uint64) simParams {
			p := livenessSimParamsFor(seed)
			p.lossGrace = nodeid.NoLossGrace
			return p
		}, 0.9},
	{simMutation{name: "stale challenge never challenged again (crash taken)", rules: func(r *nodeid.SimRules, _ *simTask, _ nodeid.Config) { r.StaleChallengeLeft = true }},
		// A stranding needs a crashed holder's challenger whose confirm
		// failed (about one write in ten faults): twice the time sees more
		// of them; 30 of 40 seeds have one (75 %).
		func(seed uint64) simParams {
			p := livenessSimParamsFor(seed)
			p.gossip, p.duration = true, 2*p.duration
			return p
		}, 0.6},
}

// livenessSimParamsFor: read mode on the stretched timings (liveTimings),
// with gossip in every other seed and NoLossGrace in every other pair.
func livenessSimParamsFor(seed uint64) simParams {
	p := readSimParamsFor(seed)
	// Pauses and partitions of 5 to 30 s (maxLease sets them; the leases
	// are the backstop's), six minutes.
	p.liveTimings, p.maxLease, p.duration = true, 10*time.Second, 6*time.Minute
	p.gossip, p.badPeer = seed%2 == 1, false
	if seed%4 >= 2 {
		p.lossGrace = nodeid.NoLossGrace
	}
	return p
}

// TestSimulationLiveness runs the liveness mutants' world unmutated: no
// check fails.
func TestSimulationLiveness(t *testing.T) { testSimulation(t, livenessSimParamsFor, *simSeeds/2) }

// TestSimulationCatchesBrokenLiveness: each liveness rule broken is caught
// in at least its bar of the seeds of its world.
func TestSimulationCatchesBrokenLiveness(t *testing.T) {
	for _, l := range livenessMutations {
		testSimulationCatches(t, []simMutation{l.m}, l.params, l.bar, false)
	}
}

// TestSimulationObservesBrokenRules: coarse breaks of the rules show as the
// harm itself (two holders, an ID twice), in at least one seed each, and are
// caught by the checker in at least 90 %.
func TestSimulationObservesBrokenRules(t *testing.T) {
	testSimulationCatches(t, observedMutations, defaultSimParamsFor, 0.9, true)
}

// TestSimulationCatchesNoProgress: Acquire that never takes, and a lease never
// read again, are caught by the progress rule in at least 90 % of seeds (they
// cost no safety: before the rule, the simulation passed them).
func TestSimulationCatchesNoProgress(t *testing.T) {
	testSimulationCatches(t, progressMutations, func(seed uint64) simParams {
		p := defaultSimParamsFor(seed)
		// The tasks that wait must take what others left: a newcomer, which
		// has read nothing yet, would hide a waiter that never reads again;
		// and so would a holder cut off for a while that recovers its lease
		// from jeopardy (a final loss leaves the ID to the waiters).
		// Without gossip: its hints keep a waiter from reading live IDs at
		// all, so a waiter that never reads again is hidden there too.
		p.replaceDelay = [2]time.Duration{25 * time.Second, 35 * time.Second}
		p.lossGrace, p.gossip, p.badPeer = nodeid.NoLossGrace, false, false
		return p
	}, 0.9, false)
}

// defaultSimParamsFor is simParamsFor on the local timings: the catch-rate
// tests run them only (docs/evidence/simulation.md has the production figures).
func defaultSimParamsFor(seed uint64) simParams {
	p := defaultSimParams()
	p.gossip, p.badPeer = seed%2 == 1, seed%4 == 1
	return p
}

// testSimulationCatches runs each mutation over seeds 1..N of params and fails
// when fewer than bar of them report a violation, or (for observed
// mutations) none observed the harm itself.
func testSimulationCatches(t *testing.T, mutations []simMutation, params func(uint64) simParams, bar float64, mustObserve bool) {
	if raceEnabled {
		t.Skip("the catch rates need every seed: test/all.sh runs them without the race detector")
	}
	var table strings.Builder
	fmt.Fprintf(&table, "catch rates over seeds 1..%d (caught / harm observed):\n", *simMutationSeeds)
	for _, m := range mutations {
		if params(1).judged && m.s3Only {
			continue
		}
		seeds, checkers := runSims(simSeedList(*simMutationSeeds), func(seed uint64) simParams {
			p := params(seed)
			p.mutation = &m
			return p
		})
		caught, observed, first := 0, 0, ""
		for i, k := range checkers {
			if len(k.violations) > 0 {
				caught++
				if first == "" {
					first = fmt.Sprintf("seed %d: %s", seeds[i], k.violations[0])
				}
			}
			if k.observed() {
				observed++
			}
		}
		n := len(seeds)
		rate := float64(caught) / float64(n)
		fmt.Fprintf(&table, "  %-62s %3d/%d %5.1f %%  observed %3d   first: %s\n", m.name, caught, n, 100*rate, observed, first)
		if rate < bar {
			t.Errorf("the checker caught %q in only %d of %d seeds (%.0f %%), want at least %.0f %%", m.name, caught, n, 100*rate, 100*bar)
		}
		if mustObserve && observed == 0 {
			t.Errorf("%q: no seed shows the harm itself (two holders at once, an ID twice), only the checker's rules", m.name)
		}
	}
	t.Log(table.String())
}

// The findings of issue 28's review, each the behaviour before its fix, in a
// world that exercises it: they became simulation failures before the fixes.
var findingMutations = []struct {
	m      simMutation
	params func(uint64) simParams
	bar    float64
}{
	// Finding 1: an application stamping IDs with the host's clock, whose
	// steps the node's wall clock does not see: its rules decided on the
	// node's clock, the release's floor falls below its IDs. Since the
	// third review the release keeps the reservation at the file's highest
	// validUntilMs, which bounds the application's IDs whatever its clock
	// did, and the horizon puts that bound in the past by the end of the
	// grace: each alone makes the finding harmless, so it does harm only
	// with both undone.
	{simMutation{name: "finding 1: the host's clock taken to be the node's wall clock (id-file rules before review 3)", hostOnWall: true, oldIDFileRules: true}, func(seed uint64) simParams {
		p := defaultSimParamsFor(seed)
		p.external = 1
		return p
	}, 0.25},
	// Findings 5 and 6: an election reserving timestamps and waiting for
	// floors nothing uses.
	{simMutation{name: "findings 5, 6: an election waits for floors", rules: func(h *nodeid.SimRules, _ *simTask, _ nodeid.Config) {
		h.ElectionFloors = true
	}}, electionSimParams, 0.9},
	// Finding 7: a floor a release explains counted recent only without
	// the headers' slack, and never beside an anomaly or a store error.
	{simMutation{name: "finding 7: the recent-floor rule before the fix", rules: func(h *nodeid.SimRules, _ *simTask, _ nodeid.Config) {
		h.OldRecentFloor = true
	}}, func(seed uint64) simParams {
		p := defaultSimParamsFor(seed)
		p.bare, p.shortWait = 1, 1 // every release keeps its reservation; every task waits 500 ms at most for a floor
		// Since a recent floor is taken by the first task that finds
		// nothing else (and held until it nears), each release is judged
		// about once, not in every waiting round: twice the releases keep
		// the catch rate (45 % at 3 minutes, 67.5 % before that change).
		p.duration *= 2
		return p
	}, 0.5},
	// Finding 8: gossip's entries written into records unchecked, with a
	// member advertising an impossible node ID.
	{simMutation{name: "finding 8: gossip entries written unchecked", rules: func(h *nodeid.SimRules, _ *simTask, _ nodeid.Config) {
		h.RawGossip = true
	}}, func(seed uint64) simParams {
		p := defaultSimParamsFor(seed)
		p.gossip, p.badPeer = true, true
		return p
	}, 0.9},
}

// TestSimulationCatchesIssue28Findings: each finding of issue 28's review,
// reintroduced, fails the simulation in at least its bar of the seeds.
func TestSimulationCatchesIssue28Findings(t *testing.T) {
	for _, f := range findingMutations {
		testSimulationCatches(t, []simMutation{f.m}, f.params, f.bar, false)
	}
}

// raceDivisor: under the race detector the simulations run every tenth seed,
// and the catch-rate tests none (test/all.sh runs them all without it).
const raceDivisor = 10
