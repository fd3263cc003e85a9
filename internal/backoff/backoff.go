// Package backoff is the one copy of nodeid's retry pacing: a capped
// exponential backoff with jitter, as the lease protocol's retry loops
// (nodeid) and gossip's rejoin loop use it. A library backoff would draw
// its jitter from a global source; here the caller supplies it, so that the
// lease protocol's simulation replays a seed exactly.
package backoff

import (
	"math/rand/v2"
	"time"
)

// Backoff paces the attempts of a retry loop: each pause is drawn uniformly
// from [d/2, d], and d doubles after each pause from Base up to Limit (a
// constant pace when Limit is at most Base). The zero value is not usable:
// set Base, then call Reset.
type Backoff struct {
	// Base is the first pace.
	Base time.Duration
	// Limit caps the pace.
	Limit time.Duration
	// Int64N is the random source, uniform in [0, n) for n > 0; nil:
	// math/rand/v2's.
	Int64N func(n int64) int64

	d time.Duration
}

// Reset starts the pauses over from Base.
func (b *Backoff) Reset() { b.d = b.Base }

// Next returns the next pause and doubles the pace, up to Limit.
func (b *Backoff) Next() time.Duration {
	w := Jitter(b.d, b.Int64N)
	b.d = min(2*b.d, max(b.Base, b.Limit))
	return w
}

// Jitter returns a duration uniformly in [d/2, d], drawn from int64n (nil:
// math/rand/v2's).
func Jitter(d time.Duration, int64n func(n int64) int64) time.Duration {
	if int64n == nil {
		int64n = rand.Int64N
	}
	return d/2 + time.Duration(int64n(int64(d/2)+1))
}
