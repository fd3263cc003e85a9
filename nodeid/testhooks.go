package nodeid

// testHooks is how the deterministic simulation (sim_test.go) watches a
// Provider: it learns of each claim (it breaks rules through rules, and runs
// goroutines through goClock). Provider.hooks is nil in production; every
// method is safe on a nil *testHooks.
type testHooks struct {
	// onClaim, when set, is called with every claim the Provider creates,
	// before Acquire returns it.
	onClaim func(*Claim)
}

// newClaimed calls onClaim, if set, with a claim just created.
func (h *testHooks) newClaimed(c *Claim) {
	if h != nil && h.onClaim != nil {
		h.onClaim(c)
	}
}
