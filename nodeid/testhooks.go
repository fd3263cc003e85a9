package nodeid

// testHooks is how the deterministic simulation (sim_test.go) schedules and
// watches a Provider: it runs it on one goroutine and learns of each claim.
// The rules it breaks on purpose are rule values (see rules), not hooks.
// Provider.hooks is nil in production; every method is safe on a nil
// *testHooks and then gives the production behaviour.
type testHooks struct {
	sequential bool // no goroutines: reads and creates one by one, no renewal loop
	// onClaim, when set, is called with every claim the Provider creates,
	// before Acquire returns it (the simulation drives its renewals).
	onClaim func(*Claim)
}

// newClaimed calls onClaim, if set, with a claim just created.
func (h *testHooks) newClaimed(c *Claim) {
	if h != nil && h.onClaim != nil {
		h.onClaim(c)
	}
}

// isSequential reports whether the Provider must not start goroutines.
func (h *testHooks) isSequential() bool { return h != nil && h.sequential }
