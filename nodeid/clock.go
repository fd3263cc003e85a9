package nodeid

import (
	"context"
	"time"

	"github.com/nodeid/nodeid/internal/ctxtime"
)

// Clock is the time source of a Provider. Now is used only for durations (the
// monotonic fence, deadlines); Wall is used only for Snowflake reservations and
// the human-readable fields of a record. Tests and the simulation substitute their
// own; the default is the system clock.
type Clock interface {
	// Now returns the current time; only differences between its results are
	// used, so it should carry a monotonic reading.
	Now() time.Time
	// Wall returns the wall-clock time (Unix ms feed Snowflake reservations).
	Wall() time.Time
	// Sleep waits for d or until ctx is done, and then returns ctx.Err().
	Sleep(ctx context.Context, d time.Duration) error
}

// SystemClock returns the system clock, its wall clock shifted by wallOffset (zero
// in production; demo-broker's --debug-clock-offset sets it to test clock skew).
func SystemClock(wallOffset time.Duration) Clock { return systemClock{wallOffset} }

type systemClock struct{ offset time.Duration }

func (systemClock) Now() time.Time    { return time.Now() }
func (c systemClock) Wall() time.Time { return time.Now().Round(0).Add(c.offset) }

func (systemClock) Sleep(ctx context.Context, d time.Duration) error { return ctxtime.Sleep(ctx, d) }
