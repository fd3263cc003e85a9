package nodeid

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain fails the package if a test leaves a goroutine running: every
// renewal loop must be stopped by Close or by the end of its claim.
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }
