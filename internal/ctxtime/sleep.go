// Package ctxtime holds the one context-aware sleep that the module's
// packages share.
package ctxtime

import (
	"context"
	"time"
)

// Sleep waits for d or until ctx is done, whichever comes first, and returns
// ctx.Err() in the second case, nil in the first.
func Sleep(ctx context.Context, d time.Duration) error { return SleepOrWake(ctx, d, nil) }

// SleepOrWake is Sleep that also ends, returning nil, when wake is closed (a
// nil wake never is).
func SleepOrWake(ctx context.Context, d time.Duration, wake <-chan struct{}) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-wake:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
