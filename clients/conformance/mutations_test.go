package conformance

import "testing"

// mutations are CONFORMANCE.md's: each breaks one rule of a client on
// purpose (--mutation), and the scenario meant to catch it must find a
// violation of the kind named.
var mutations = []struct {
	name, kind string
	scenario   func(*scene)
}{
	{"ignore-valid-until", KindPastValidUntil, kill9},
	{"ignore-floor", KindDuplicate, handoverFloor},
	{"ignore-version", KindDuplicate, scriptedSwap},
	// No duplicate: the release covers the file's highest validUntilMs.
	{"ignore-missing", KindAfterRemoval, sigtermRelease},
	{"allow-backwards", KindNotIncreasing, clockStep},
	// HttpGenerator's: the version of the latest answer for the IDs in hand.
	{"prefetch-latest-version", KindBelowFloor, httpVersionChange},
}

// TestMutations runs, for every client, each mutation against the scenario
// that must catch it, and fails unless the checks find the violation.
func TestMutations(t *testing.T) {
	for _, m := range mutations {
		t.Run(m.name, func(t *testing.T) {
			t.Parallel()
			eachClient(t, func(t *testing.T, c *client) {
				m.scenario(newMutantScene(t, c, m.name, m.kind))
			})
		})
	}
}
