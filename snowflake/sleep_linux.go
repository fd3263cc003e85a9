package snowflake

import (
	"syscall"
	"time"
)

// osSleepUntil sleeps until about end with nanosleep(2), which wakes about
// 0.05 to 0.1 ms late (timer slack) where time.Sleep wakes up to 1.1 ms late,
// and burns no CPU. The thread blocks in the kernel; the runtime hands its P
// to another thread if other goroutines need it meanwhile.
func osSleepUntil(end time.Time) {
	for d := time.Until(end); d > 0; d = time.Until(end) {
		ts := syscall.NsecToTimespec(int64(d))
		if syscall.Nanosleep(&ts, nil) == nil {
			return
		}
		// EINTR: a signal arrived (the runtime uses them); sleep the rest.
	}
}

// tickSleepUntil is how a CoarseClock sleeps between ticks: precisely.
func tickSleepUntil(end time.Time) { osSleepUntil(end) }
