package faults

import (
	"fmt"
	"strings"
	"time"
)

// The fence and exit-code rules, each stated in terms of the evidence in the
// history that makes it certain (docs/evidence/faults.md, "The checks"): a rule that
// can fire on a correct run is a bug in the checker.

// healthKind is what a /health answer says about the broker's claim.
type healthKind int

const (
	healthOK healthKind = iota
	// healthStalled: 503 node.ErrStalled, the generator has failed to
	// issue for MaxIssueStall. Not a fence: 200 may follow.
	healthStalled
	// healthFenced: 503 node.ErrFenced (or a reason not known here): the
	// claim's fence fell. Final when the brokers have no loss grace; with
	// one (jeopardy), a write on the claim's own last ETag may recover it.
	healthFenced
	// healthFinal: 503 for good: the broker is stopping
	// (node.ErrShuttingDown) or its claim ended (lost, closed).
	healthFinal
)

func classify(o HealthObs) healthKind {
	switch r := o.Reason; {
	case o.OK:
		return healthOK
	case strings.Contains(r, "cannot issue IDs"):
		return healthStalled
	case strings.Contains(r, "shutting down"), strings.Contains(r, "lease lost"), strings.Contains(r, "claim closed"):
		return healthFinal
	}
	return healthFenced
}

// fenceEvidence is what a broker's history proves about its fence.
type fenceEvidence struct {
	// final: the broker was fenced for good before this instant (0: no
	// evidence), for the reason finalWhy.
	final    time.Duration
	finalWhy string
	// fenced: the end of its first 503 for the fence (healthFenced or
	// healthFinal) after a 200; 0 if none.
	fenced time.Duration
	// noRecovery: with a loss grace, the end of the first 503 for the
	// fence after which it answered no 200 to any request (it did not
	// recover); 0 if none.
	noRecovery time.Duration
}

// fenceEvidences gathers, per broker, when it was fenced: from its /health
// answers (after its first 200), its log, and the faults that outlasted its
// lease.
func fenceEvidences(h *History) map[int]fenceEvidence {
	firstOK, lastOKStart := map[int]time.Duration{}, map[int]time.Duration{}
	for _, o := range h.Health {
		if !o.OK {
			continue
		}
		if t, ok := firstOK[o.Broker]; !ok || o.End < t {
			firstOK[o.Broker] = o.End
		}
		lastOKStart[o.Broker] = max(lastOKStart[o.Broker], o.Start)
	}
	ev := map[int]fenceEvidence{}
	final := func(b int, at time.Duration, why string) {
		if e := ev[b]; e.final == 0 || at < e.final {
			e.final, e.finalWhy = at, why
			ev[b] = e
		}
	}
	for _, o := range h.Health {
		ok, seen := firstOK[o.Broker]
		k := classify(o)
		if k == healthOK || k == healthStalled || !seen || o.Start <= ok {
			continue
		}
		e := ev[o.Broker]
		if e.fenced == 0 || o.End < e.fenced {
			e.fenced = o.End
		}
		if h.LossGrace > 0 && k == healthFenced && o.End > lastOKStart[o.Broker] && (e.noRecovery == 0 || o.End < e.noRecovery) {
			e.noRecovery = o.End
		}
		ev[o.Broker] = e
		if k == healthFinal || h.LossGrace == 0 {
			final(o.Broker, o.End, fmt.Sprintf("its /health answered 503 at %s (%s)", fmtDur(o.End), o.Reason))
		}
	}
	for i, b := range h.Brokers {
		if b.LossLoggedAt > 0 {
			final(i, b.LossLoggedAt, fmt.Sprintf("its log said it lost its lease (read at %s)", fmtDur(b.LossLoggedAt)))
		}
		if b.StopLoggedAt > 0 {
			final(i, b.StopLoggedAt, fmt.Sprintf("its log said it began to stop (read at %s)", fmtDur(b.StopLoggedAt)))
		}
		if b.MustLose && h.LossGrace == 0 && b.MustLoseAt > 0 {
			final(i, b.MustLoseAt, fmt.Sprintf("its fence fell during %s", b.MustLoseWhy))
		}
	}
	return ev
}

// checkHealth finds /health 200 answers and IDs for requests sent after the
// broker was fenced for good, and, with a loss grace, IDs for requests sent
// after a 503 for the fence that no recovery followed. It returns the
// evidence for checkExits.
func checkHealth(h *History, r *Report) map[int]fenceEvidence {
	ev := fenceEvidences(h)
	after := map[int]bool{} // brokers whose clients asked after the evidence: the rules were put to the test
	for _, o := range h.Health {
		e, ok := ev[o.Broker]
		if !ok {
			continue
		}
		if e.final > 0 && o.Start > e.final {
			after[o.Broker] = true
			if o.OK {
				r.add(CheckHealthFlap, "%s: /health 200 for a request sent at %s, after %s",
					h.name(o.Broker), fmtDur(o.Start), e.finalWhy)
			}
		}
		if e.noRecovery > 0 && o.Start > e.noRecovery {
			after[o.Broker] = true
		}
	}
	for i := range h.IDs {
		b := &h.IDs[i]
		e, ok := ev[b.Broker]
		switch {
		case !ok:
		case e.final > 0 && b.Start > e.final:
			r.add(CheckAfterUnhealthy, "%s returned %d IDs (first %s), after %s",
				h.describeBatch(b), countIDs(b), describeID(b.Runs[0].First), e.finalWhy)
		case e.noRecovery > 0 && b.Start > e.noRecovery:
			r.add(CheckAfterUnhealthy, "%s returned %d IDs (first %s); its /health answered 503 at %s and never 200 again",
				h.describeBatch(b), countIDs(b), describeID(b.Runs[0].First), fmtDur(e.noRecovery))
		}
	}
	r.exercise(CheckHealthFlap, len(after))
	r.exercise(CheckAfterUnhealthy, len(after))
	if h.RecoveriesReported {
		checkRecoveryCounts(h, r)
	}
	return ev
}

// checkRecoveryCounts finds, when the brokers report their recovery count,
// IDs and /health 200 answers issued between a fence and a recovery: an
// answer with IDs (or a 200) to a request sent after a 503 for the fence with
// the same count was read. The count changes in the same instant as the
// fence is lifted, and never otherwise, so the broker was still fenced, with
// no recovery since, when it let them out. (Without the count, a 200 after a
// 503 may be a recovery, and IDs between them are allowed: the history alone
// cannot place the recovery's instant.)
func checkRecoveryCounts(h *History, r *Report) {
	type epoch struct {
		broker int
		count  int64
	}
	firstOK := map[int]time.Duration{}
	for _, o := range h.Health {
		if t, ok := firstOK[o.Broker]; o.OK && (!ok || o.End < t) {
			firstOK[o.Broker] = o.End
		}
	}
	fenced := map[epoch]HealthObs{} // the first 503 for the fence of each count
	for _, o := range h.Health {
		ok, seen := firstOK[o.Broker]
		if k := classify(o); k == healthOK || k == healthStalled || !seen || o.Start <= ok {
			continue
		}
		e := epoch{o.Broker, o.Recoveries}
		if f, ok := fenced[e]; !ok || o.End < f.End {
			fenced[e] = o
		}
	}
	recovered := map[int]bool{} // brokers asked after a fence that a recovery lifted
	for i := range h.IDs {
		b := &h.IDs[i]
		f, ok := fenced[epoch{b.Broker, b.Recoveries}]
		switch {
		case ok && b.Start > f.End:
			r.add(CheckAfterUnhealthy, "%s returned %d IDs (first %s) with recovery count %d, the count of its /health 503 read at %s (%s): issued between a fence and a recovery",
				h.describeBatch(b), countIDs(b), describeID(b.Runs[0].First), b.Recoveries, fmtDur(f.End), f.Reason)
		case b.Recoveries > 0:
			for e, f := range fenced {
				if e.broker == b.Broker && e.count < b.Recoveries && b.Start > f.End {
					recovered[b.Broker] = true
				}
			}
		}
	}
	for _, o := range h.Health {
		if f, ok := fenced[epoch{o.Broker, o.Recoveries}]; ok && o.OK && o.Start > f.End {
			r.add(CheckHealthFlap, "%s: /health 200 for a request sent at %s with recovery count %d, the count of its /health 503 read at %s (%s): no recovery in between",
				h.name(o.Broker), fmtDur(o.Start), o.Recoveries, fmtDur(f.End), f.Reason)
		}
	}
	r.exercise(CheckAfterUnhealthy+"/recovered", len(recovered))
}

// takenOver returns, per broker, the first evidence that another writer took
// its claim without its release: a successor's log saying it took the next
// version over expired (the take was conditional on the object the holder
// last wrote, so no release of it can land any more), or the node ID seen
// with a higher version (in the bucket or in another broker's answer) before
// the broker was sent SIGTERM (a broker releases only when stopped).
func takenOver(h *History, claims map[int]claim) map[int]string {
	out := map[int]string{}
	at := map[int]time.Duration{}
	note := func(i int, when time.Duration, why string) {
		if t, ok := at[i]; !ok || when < t {
			at[i], out[i] = when, why
		}
	}
	beforeStop := func(i int, when time.Duration) bool {
		b := h.Brokers[i]
		return b.Fate != FateTerminated || when < b.FateAt
	}
	for i, c := range claims {
		for _, o := range h.Takeovers {
			if o.Expired && o.Broker != i && o.Node == c.node && o.Version == c.version+1 {
				note(i, o.At, fmt.Sprintf("%s took node %d v%d over expired (its log, read at %s)", h.name(o.Broker), o.Node, o.Version, fmtDur(o.At)))
			}
		}
		for _, o := range h.Leases {
			if o.Node == c.node && o.Version > c.version && beforeStop(i, o.End) {
				note(i, o.End, fmt.Sprintf("the bucket showed node %d v%d (holder %q) at %s, before it was stopped", o.Node, o.Version, o.Holder, fmtDur(o.End)))
			}
		}
		for j := range h.IDs {
			b := &h.IDs[j]
			if b.Node == c.node && b.Version > c.version && beforeStop(i, b.End) {
				note(i, b.End, fmt.Sprintf("%s returned IDs at %s, before it was stopped", h.describeBatch(b), fmtDur(b.End)))
			}
		}
	}
	return out
}

// checkExits checks each broker's exit code against the evidence. Exit 3 is
// required only when the loss was certain: another writer took the claim
// (takenOver), or the broker's log declared the loss before it was sent
// SIGTERM; after SIGTERM, exit 1 with the release not confirmed is right too
// (the store did not answer within the shutdown timeout: the broker could not
// learn of the loss, and claims no release). After SIGTERM, exit 0 is right
// when its release landed (checked by checkReleases), even if its fence had
// fallen first: a write on its own last ETag that lands proves that nobody
// wrote the object in between; and exit 3 is right unless the release is seen
// to have landed. Nothing exits 0 on its own, or 1 after holding a lease
// (exit 1 before holding one is a start-up failure, noted; after SIGTERM with
// a release not confirmed, noted).
func checkExits(h *History, r *Report, claims map[int]claim, ev map[int]fenceEvidence) {
	taken := takenOver(h, claims)
	released := map[int]ReleaseObs{}
	for _, o := range h.Releases {
		released[o.Broker] = o
	}
	for i, b := range h.Brokers {
		c, held := claims[i]
		lossWhy, lost := taken[i]
		if b.LossLoggedAt > 0 && (b.Fate != FateTerminated || b.LossLoggedAt < b.FateAt) {
			lost, lossWhy = true, fmt.Sprintf("its log said it lost its lease (read at %s)", fmtDur(b.LossLoggedAt))
		}
		switch {
		case b.Fate == FateKilled:
			continue
		case !b.Exited && lost:
			r.add(CheckExitCode, "%s is still running after it lost its lease: %s", b.Name, lossWhy)
		case !b.Exited && b.Fate == FateTerminated:
			r.add(CheckExitCode, "%s did not exit after SIGTERM at %s", b.Name, fmtDur(b.FateAt))
		case !b.Exited:
		case lost && b.ExitCode == 1 && b.Fate == FateTerminated && strings.Contains(b.ExitErr, "not confirmed"):
			// The store did not answer its release (or its renewal in
			// flight) within its shutdown timeout: it could not learn of
			// the loss, and does not claim a release.
			r.exercise(CheckExitCode+"/lost", 1)
			r.Notes = append(r.Notes, fmt.Sprintf("%s exited with 1 after SIGTERM at %s, its release not confirmed, and its lease was lost (%s): %s",
				b.Name, fmtDur(b.FateAt), lossWhy, b.ExitErr))
		case lost:
			r.exercise(CheckExitCode+"/lost", 1)
			if b.ExitCode != 3 {
				r.add(CheckExitCode, "%s exited with %d, want 3 (lease lost): %s", b.Name, b.ExitCode, lossWhy)
			}
		case b.ExitCode == 3:
			o, ok := released[i]
			switch {
			case b.Fate != FateTerminated:
				r.exercise(CheckExitCode+"/lost", 1)
				if !held {
					r.Notes = append(r.Notes, fmt.Sprintf("%s exited with 3 without a claim seen", b.Name))
				}
			case held && ok && o.Found && o.Node == c.node && o.Version == c.version && o.Holder == "":
				r.add(CheckExitCode, "%s exited with 3 after SIGTERM at %s, but its release landed: node %d v%d read free after it exited",
					b.Name, fmtDur(b.FateAt), c.node, c.version)
			default:
				r.exercise(CheckExitCode+"/terminated", 1)
			}
		case b.ExitCode == 0 && b.Fate == FateTerminated:
			r.exercise(CheckExitCode+"/terminated", 1)
			if e := ev[i]; held && e.fenced > 0 && e.fenced < b.FateAt {
				r.exercise(CheckExitCode+"/fenced-then-terminated", 1)
			}
		case b.ExitCode == 1 && !held:
			r.Notes = append(r.Notes, fmt.Sprintf("%s failed to start (exit 1)", b.Name))
		case b.ExitCode == 1 && b.Fate == FateTerminated && strings.Contains(b.ExitErr, "not confirmed"):
			r.Notes = append(r.Notes, fmt.Sprintf("%s exited with 1 after SIGTERM at %s: its release was not confirmed: %s", b.Name, fmtDur(b.FateAt), b.ExitErr))
		case b.Fate == FateTerminated:
			r.add(CheckExitCode, "%s exited with %d after SIGTERM at %s, want 0 (or 3 on a loss)", b.Name, b.ExitCode, fmtDur(b.FateAt))
		default:
			r.add(CheckExitCode, "%s exited with %d on its own at %s (held a lease: %v)", b.Name, b.ExitCode, fmtDur(b.ExitedAt), held)
		}
	}
}
