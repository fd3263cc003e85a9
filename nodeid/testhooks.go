package nodeid

// testHooks is how the deterministic simulation (sim_test.go) watches a
// Provider: it learns of each claim. The rules it breaks on purpose are rule
// values (see rules), and it runs the Provider's goroutines through the
// Clock it hands in (see goClock), not through hooks. Provider.hooks is nil
// in production; every method is safe on a nil *testHooks and then gives the
// production behaviour.
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
