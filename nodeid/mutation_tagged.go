//go:build nodeid_mutation

package nodeid

import (
	"log/slog"
	"os"
	"time"
)

// In a build with the nodeid_mutation tag, NODEID_MUTATION breaks one rule:
//
//	nofence   the claim stays valid for a day past its lease, and its renewals
//	          give up a day late (no monotonic fence: it stops only on evidence
//	          of a takeover)
//	nofloor   a successor ignores its predecessor's reservation (floor 0)
//
// This exists for the fault suite's mutation tests only.
func init() {
	applyMutation = func(p *Provider) {
		switch m := os.Getenv("NODEID_MUTATION"); m {
		case "nofence":
			p.hooks = &testHooks{fenceExtra: 24 * time.Hour, renewDeadlineExtra: 24 * time.Hour}
		case "nofloor":
			p.hooks = &testHooks{ignoreFloor: true}
		case "":
			return
		default:
			panic("nodeid: unknown NODEID_MUTATION " + m)
		}
		p.log.Warn("SAFETY RULE BROKEN ON PURPOSE (nodeid_mutation build)", slog.String("mutation", os.Getenv("NODEID_MUTATION")))
	}
}
