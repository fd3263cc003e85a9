package snowflake

import (
	"syscall"
	"time"
)

// shortSleep sleeps for d (ending at end) with nanosleep(2): it wakes about
// 0.05 to 0.1 ms late (timer slack), where time.Sleep would wake up to 1.1 ms
// late, and burns no CPU. The thread blocks in the kernel; the runtime hands
// its P to another thread if the sleep outlasts a few tens of microseconds.
func shortSleep(d time.Duration, end time.Time) {
	for d > 0 {
		ts := syscall.NsecToTimespec(int64(d))
		if err := syscall.Nanosleep(&ts, nil); err == nil {
			return
		}
		// EINTR: a signal arrived (the runtime uses them); sleep the rest.
		d = time.Until(end)
	}
}
