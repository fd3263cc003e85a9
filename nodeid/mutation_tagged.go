//go:build nodeid_mutation

package nodeid

import (
	"os"
	"time"

	"github.com/nodeid/nodeid/lease"
)

// In a build with the nodeid_mutation tag, NODEID_MUTATION (read once, at
// init) breaks one rule in every Provider:
//
//	nofence   the claim stays valid for a day past its lease, and its renewals
//	          give up a day late (no monotonic fence: it stops only on evidence
//	          of a takeover)
//	nofloor   a successor ignores its predecessor's reservation (floor 0)
//
// This exists for the fault suite's mutation tests only.
func init() {
	if m := os.Getenv("NODEID_MUTATION"); m != "" {
		mutant, mutation = mutantRules(m), m
	}
}

// mutantRules returns the production rules with the mutation m; it panics on
// an unknown m.
func mutantRules(m string) *rules {
	r := productionRules()
	switch m {
	case "nofence":
		fence, deadline := r.fenceSpan, r.renewDeadline
		r.fenceSpan = func(span, margin time.Duration) time.Duration { return fence(span, margin) + 24*time.Hour }
		r.renewDeadline = func(t Timings) time.Duration { return deadline(t) + 24*time.Hour }
	case "nofloor":
		r.floor = func(lease.Record) int64 { return 0 }
	default:
		panic("nodeid: unknown NODEID_MUTATION " + m)
	}
	return &r
}
