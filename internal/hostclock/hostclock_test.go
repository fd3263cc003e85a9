package hostclock

import (
	"testing"
	"time"

	"github.com/nodeid/nodeid/internal/testkit/fakeclock"
)

// TestHostClockHighCoversReadingsBeforeAStepBack: High is at least every
// reading taken before, also after the host's clock steps back, and follows
// a step forward at once.
func TestHostClockHighCoversReadingsBeforeAStepBack(t *testing.T) {
	clk := fakeclock.New(time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC))
	offset := 2 * time.Second
	h := New(func() time.Time { return clk.Wall().Add(offset) }, clk)
	before := h.Read()
	offset = -time.Hour // the host's clock steps back an hour
	clk.Advance(time.Second)
	if hi := h.High(); hi.Before(before.Add(time.Second)) {
		t.Fatalf("High %v after a step back, below the reading %v taken before it plus the time since", hi, before)
	}
	offset = time.Hour // and forward
	if hi, now := h.High(), clk.Wall().Add(time.Hour); hi.Before(now) {
		t.Fatalf("High %v after a step forward, below the host's clock %v", hi, now)
	}
}
