// Package ctxtime holds the one context-aware sleep that the module's
// packages share.
package ctxtime

import (
	"context"
	"time"
)

// Sleep waits for d or until ctx is done, whichever comes first, and returns
// ctx.Err() in the second case, nil in the first.
func Sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
