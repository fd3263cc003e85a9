package nodeid

import (
	"context"
	"time"

	"github.com/nodeid/nodeid/lease"
)

// rules are the protocol's decisions that a mutation test breaks on
// purpose, one field each (a function or a value), so that the simulation
// and the fault suite can show that their checks catch a broken rule. A
// Provider takes its rules once, at construction (New): productionRules,
// unless a test hands in others through Config's unexported rules field
// (export_test.go) or the nodeid_mutation build chose a mutant at init
// (mutation_tagged.go). No predicate asks whether it is mutated: it calls
// its rule. Each field's default, in productionRules, is the rule as
// designed; the bools' is false.
type rules struct {
	// stateOf judges a record read with its response's meta, given
	// Config.ClockMargin: lease.StateOf, on the store's clock.
	stateOf func(r *lease.Record, m lease.Meta, clockMargin time.Duration) lease.State
	// fenceSpan is how long after its send a landed write (or a read)
	// that proves the lease for span keeps the fence up: span -
	// SafetyMargin.
	fenceSpan func(span, safetyMargin time.Duration) time.Duration
	// renewDeadline is how long after the last landed write's send a
	// renewal round gives up: Config.RenewDeadline.
	renewDeadline func(t Timings) time.Duration
	// floor is the floor a successor of prev reports: prev's reservation.
	floor func(prev lease.Record) int64
	// adoptedAt is the send time that a pending write sent at sent, found
	// landed by a read-back answered at seen, is adopted (fenced) from:
	// sent.
	adoptedAt func(sent, seen time.Time) time.Time
	// readArmedAt is the instant a read sent at sent and answered at
	// answered, which showed the claim's ETag, re-arms the fence from:
	// sent.
	readArmedAt func(sent, answered time.Time) time.Time
	// readProves is how far such a read proves the lease, on both
	// readings: (*Claim).readProves, its Window capped by the last landed
	// write's deadline.
	readProves func(c *Claim, sent time.Time) (until, suspendUntil int64)
	// readsProveChallenge: a read that shows the challenge the claim is
	// answering proves the claim (false: it proves nothing).
	readsProveChallenge bool
	// answers reports whether a challenge naming the write named is one
	// the claim, whose last landed write is ours, answers: named == ours.
	answers func(named, ours string) bool
	// conflictFinal reports whether a write answered 412 with none of the
	// claim's writes pending loses the claim without a read-back: in write
	// mode (in read mode it may be a challenge to answer).
	conflictFinal func(c *Claim) bool
	// takenBy is what a read-back that shows rec, another writer's plain
	// record (with etag, answered at seen), does to the claim:
	// (*Claim).takenBy, the claim is lost, in jeopardy or not.
	takenBy func(c *Claim, rec lease.Record, etag string, seen time.Time) (adopted string, err error)
	// validInJeopardy: a claim in jeopardy stays valid until its fence
	// (false: it is not valid).
	validInJeopardy bool
	// knownNodeValid reports whether gossip's entry for node id at version
	// goes into records: lease.KnownNodeValid.
	knownNodeValid func(id int, version int64) bool
	// recentFloor and nearestRecent are the far-floor rule: whether a
	// floor ahead is explained by a release ((*Provider).recentFloor), and
	// the recent floor to take when nothing else is takeable
	// ((*Provider).nearestRecent).
	recentFloor   func(p *Provider, prev lease.Record, m lease.Meta, ahead time.Duration) bool
	nearestRecent func(p *Provider, far []farFloor, storeErrs bool) (farFloor, bool)
	// electionFloors: a task that issues no IDs (Config.IssuesNoIDs, an
	// election's) reserves timestamps and waits for floors all the same
	// (false: it does neither).
	electionFloors bool
	// create, take and suspected are how Acquire comes by an ID: it
	// creates a never-created one ((*Provider).tryCreate), takes a free or
	// expired one ((*Provider).take), and challenges the held ones it
	// suspects ((*Provider).suspected).
	create    func(p *Provider, ctx context.Context, id int, o claimOptions) (*Claim, error)
	take      func(p *Provider, ctx context.Context, r readResult, prev lease.Record, state lease.State, o claimOptions) (*Claim, error)
	suspected func(p *Provider, r readResult, prev lease.Record, known map[int]int64, w *watched) bool
	// dropped reports whether an Acquire's candidates leave id out:
	// (*Provider).dropped, a lease still held by the listing's lights or
	// live by gossip.
	dropped func(p *Provider, id int, v *clusterView, w *watched, known map[int]int64, longest int64) bool
	// retryPause is a renewal round's (and jeopardy's) wait between
	// attempts: pause, which a read that saw the ETag change ends, so
	// that a challenge seen meanwhile is answered at once.
	retryPause func(c *Claim, ctx context.Context, d time.Duration) error
	// fellForGood and finalFall are how the owner sees the fence fall for
	// good (NoLossGrace) and when it wakes for that fall, so that it ends
	// such a claim at the fall.
	fellForGood func(c *Claim) bool
	finalFall   func(c *Claim) (time.Time, bool)
	// staleChallenge is whether a standing challenge is challenged again
	// (read mode), so that an unconfirmed one does not strand an ID.
	staleChallenge func(p *Provider, ch *lease.Challenge, age time.Duration) bool
}

// productionRules returns the rules as designed.
func productionRules() rules {
	return rules{
		stateOf:        lease.StateOf,
		fenceSpan:      func(span, margin time.Duration) time.Duration { return span - margin },
		renewDeadline:  func(t Timings) time.Duration { return t.RenewDeadline },
		floor:          func(prev lease.Record) int64 { return prev.ReservedUntilMs },
		adoptedAt:      atSend,
		readArmedAt:    atSend,
		readProves:     (*Claim).readProves,
		answers:        func(named, ours string) bool { return named == ours },
		conflictFinal:  func(c *Claim) bool { return !c.p.cfg.readMode() },
		takenBy:        (*Claim).takenBy,
		knownNodeValid: lease.KnownNodeValid,
		recentFloor:    (*Provider).recentFloor,
		nearestRecent:  (*Provider).nearestRecent,
		create:         (*Provider).tryCreate,
		take:           (*Provider).take,
		suspected:      (*Provider).suspected,
		dropped:        (*Provider).dropped,
		retryPause:     (*Claim).pause,
		fellForGood:    (*Claim).fellForGood,
		finalFall:      (*Claim).finalFall,
		staleChallenge: (*Provider).staleChallenge,
	}
}

// atSend returns sent: an instant a proof runs from is its send.
func atSend(sent, _ time.Time) time.Time { return sent }
