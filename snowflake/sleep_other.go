//go:build !linux

package snowflake

import (
	"runtime"
	"time"
)

// shortSleep waits until end by spinning on the clock, yielding the processor
// between reads: time.Sleep can wake up to a millisecond late, which would
// cost a millisecond of sequence numbers at every wait. This burns one core
// while it waits; only one goroutine per generator ever waits here.
func shortSleep(_ time.Duration, end time.Time) {
	for time.Now().Before(end) {
		runtime.Gosched()
	}
}
