package nodeid

import (
	"testing"
	"time"
)

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
