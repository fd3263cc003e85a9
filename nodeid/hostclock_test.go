package nodeid

import (
	"testing"
	"time"

	"github.com/nodeid/nodeid/internal/testkit/fakeclock"
)

// TestHostClockHighCoversReadingsBeforeAStepBack: High is at least every
// reading taken before, also after the host's clock steps back, and follows
// a step forward at once.
func TestHostClockHighCoversReadingsBeforeAStepBack(t *testing.T) {
	clk := fakeclock.New(start)
	offset := 2 * time.Second
	h := NewHostClock(func() time.Time { return clk.Wall().Add(offset) }, clk)
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

// TestValidUntilOnAnotherClock: ValidUntilOn moves the fence onto another
// clock and caps it by the reservation; 0 once fenced.
func TestValidUntilOnAnotherClock(t *testing.T) {
	e := newEnv(t)
	cfg := e.config("a")
	c := e.acquire(e.provider(cfg))
	left := c.ValidUntil().Sub(e.clk.Now())
	other := e.clk.Wall().Add(-time.Hour) // a clock an hour behind
	if got, want := c.ValidUntilOn(other), other.Add(left).UnixMilli(); got != want {
		t.Errorf("ValidUntilOn(an hour behind) = %d, want %d", got, want)
	}
	if got := c.ValidUntilOn(e.clk.Wall().Add(time.Hour)); got != c.Reservation() {
		t.Errorf("ValidUntilOn(an hour ahead) = %d, want the reservation %d", got, c.Reservation())
	}
	c.fence()
	if got := c.ValidUntilOn(e.clk.Wall()); got != 0 {
		t.Errorf("ValidUntilOn once fenced = %d, want 0", got)
	}
}
