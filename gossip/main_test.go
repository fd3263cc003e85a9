package gossip

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain fails the package when a goroutine outlives the tests: every
// Node's goroutines, and memberlist's, must stop at Close.
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }
