//go:build !unix || aix

package storetest

import (
	"errors"
	"fmt"
	"runtime"
	"time"
)

// MonotonicClock returns the host's CLOCK_MONOTONIC; on this system it
// returns an error matching errors.ErrUnsupported.
func MonotonicClock() (func() time.Duration, error) {
	return nil, fmt.Errorf("storetest: a monotonic clock shared by processes on %s: %w", runtime.GOOS, errors.ErrUnsupported)
}
