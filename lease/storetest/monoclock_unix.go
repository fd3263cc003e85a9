//go:build unix && !aix

package storetest

import (
	"fmt"
	"time"

	"golang.org/x/sys/unix"
)

// MonotonicClock returns the host's CLOCK_MONOTONIC, in nanoseconds since
// an arbitrary instant (the host's boot, on Linux): one clock for every
// process on the host, which no one can step, so that the calls one process
// records ([CallLog]) and those another does ([NewRecorderOn]) form one
// history. It is the clock Go's own monotonic readings come from on Linux.
func MonotonicClock() (func() time.Duration, error) {
	if _, err := monotonicNow(); err != nil {
		return nil, err
	}
	return func() time.Duration { d, _ := monotonicNow(); return d }, nil
}

func monotonicNow() (time.Duration, error) {
	var ts unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_MONOTONIC, &ts); err != nil {
		return 0, fmt.Errorf("storetest: clock_gettime(CLOCK_MONOTONIC): %w", err)
	}
	return time.Duration(ts.Nano()), nil
}
