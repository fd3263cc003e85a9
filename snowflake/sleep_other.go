//go:build !linux

package snowflake

import "time"

// osSleepUntil returns at once: without a precise sleep, sleepPrecise spins
// the whole wait (time.Sleep could wake up to a millisecond late, which would
// cost a millisecond of sequence numbers at every wait). That burns one core
// while a generator waits; only one goroutine per generator ever does.
func osSleepUntil(time.Time) {}

// tickSleepUntil is how a CoarseClock sleeps between ticks: with
// time.Sleep, which may wake up to a millisecond late, making the clock that
// much coarser.
func tickSleepUntil(end time.Time) { time.Sleep(time.Until(end)) }
