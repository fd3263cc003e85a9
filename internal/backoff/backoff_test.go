package backoff

import (
	"testing"
	"time"
)

// TestBackoffDoublesToItsLimitWithinItsJitter: every pause lies in [d/2, d]
// for the pace d, which doubles from Base and stops at Limit; Reset starts
// over; the extremes of the random source give the bounds exactly.
func TestBackoffDoublesToItsLimitWithinItsJitter(t *testing.T) {
	for _, tc := range []struct {
		name   string
		int64n func(int64) int64
		half   bool // the pause is d/2 (else d)
	}{
		{"lowest", func(int64) int64 { return 0 }, true},
		{"highest", func(n int64) int64 { return n - 1 }, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := Backoff{Base: time.Second, Limit: 5 * time.Second, Int64N: tc.int64n}
			b.Reset()
			for round := range 2 {
				for i, d := range []time.Duration{1, 2, 4, 5, 5} {
					want := d * time.Second
					if tc.half {
						want /= 2
					}
					if got := b.Next(); got != want {
						t.Fatalf("round %d pause %d = %v, want %v", round, i, got, want)
					}
				}
				b.Reset()
			}
		})
	}
	b := Backoff{Base: time.Second}
	b.Reset()
	for range 100 {
		if got := b.Next(); got < time.Second/2 || got > time.Second {
			t.Fatalf("pause %v outside [500ms, 1s] with math/rand's source", got)
		}
	}
}
