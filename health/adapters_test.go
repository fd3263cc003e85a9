package health_test

import (
	"github.com/nodeid/nodeid/gossip"
	"github.com/nodeid/nodeid/health"
	"github.com/nodeid/nodeid/nodeid"
)

// The project's state holders are Checkers without health importing them: a
// claim for /health, a claim and a readiness gate for /ready.
var (
	_ health.Checker = (*nodeid.Claim)(nil)
	_ health.Checker = (*gossip.Gate)(nil)
)
