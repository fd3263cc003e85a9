package lease

import "time"

// WriteSpacer is implemented by a [Store] that refuses, or throttles, writes
// to one object that come closer together than some interval: Google Cloud
// Storage allows about one write per second to an object name (gcsstore).
// nodeid.New refuses a renewal interval below it, with an error naming both
// figures, instead of renewals that the store answers with 429. Wrappers of
// stores forward it through [MinWriteInterval], as they forward [Check].
type WriteSpacer interface {
	// MinWriteInterval is the shortest time between two writes of one object
	// that the store sustains.
	MinWriteInterval() time.Duration
}

// MinWriteInterval returns s's MinWriteInterval when s is a [WriteSpacer],
// else 0 (no limit).
func MinWriteInterval(s Store) time.Duration {
	switch w := s.(type) {
	case WriteSpacer:
		return w.MinWriteInterval()
	case filtered:
		return MinWriteInterval(w.parent)
	}
	return 0
}
