package snowflake

import (
	"errors"
	"testing"
	"time"
)

// TestHandover plays docs/evidence/design.md section 5: a predecessor holds node ID 5
// with reservation R and issues IDs until its clock passes R; a successor
// takes node ID 5 over with floor R and a clock behind the predecessor's by
// up to MaxClockWait. No ID may be issued by both.
func TestHandover(t *testing.T) {
	const (
		maxWait = 2 * time.Second
		reserve = t0 + 10_000 // R, in Unix ms
	)
	for _, behind := range []time.Duration{0, time.Millisecond, 700 * time.Millisecond, maxWait - time.Millisecond, maxWait} {
		t.Run("successor behind by "+behind.String(), func(t *testing.T) {
			// The predecessor starts far enough before R that it issues
			// every ID the successor's clock reads before the wait.
			pclk := newFakeClock(reserve - maxWait.Milliseconds() - 20)
			pred := newGen(t, pclk, func(c *Config) {
				c.Layout = tiny
				c.NodeID = 5
				c.Reservation = func() int64 { return reserve }
				c.MaxReservationWait = 10 * time.Millisecond
			})
			issued := make(map[ID]bool)
			for {
				r, err := pred.NextN(4)
				if errors.Is(err, ErrReservationExhausted) {
					break
				}
				if err != nil {
					t.Fatalf("predecessor: %v", err)
				}
				for id := range r.All() {
					issued[id] = true
				}
			}
			// 2 s + 21 ms at 4 IDs per ms, every one of them up to R.
			if want := 4 * int(maxWait.Milliseconds()+21); len(issued) != want {
				t.Fatalf("predecessor issued %d IDs, want %d", len(issued), want)
			}
			floor := pred.Stop()
			if floor != reserve {
				t.Fatalf("predecessor's last timestamp %d, want R = %d", floor, reserve)
			}

			// The successor's clock reads R-behind when it takes over (the
			// predecessor's reads about R).
			sclk := newFakeClock(reserve)
			sclk.advance(-behind)
			succ := newGen(t, sclk, func(c *Config) {
				c.Layout = tiny
				c.NodeID = 5
				c.FloorMs = reserve // the reservedUntilMs it read
				c.MaxClockWait = maxWait
			})
			for range 4000 {
				id, err := succ.Next()
				if err != nil {
					t.Fatalf("successor: %v", err)
				}
				if issued[id] {
					p, _ := tiny.Decode(id)
					t.Fatalf("ID %d (%+v) issued by both predecessor and successor", id, p)
				}
			}
		})
	}

	t.Run("successor behind by more than MaxClockWait", func(t *testing.T) {
		sclk := newFakeClock(reserve - maxWait.Milliseconds())
		sclk.advance(-time.Microsecond)
		succ := newGen(t, sclk, func(c *Config) {
			c.NodeID = 5
			c.FloorMs = reserve
			c.MaxClockWait = maxWait
		})
		if _, err := succ.Next(); !errors.Is(err, ErrClockBackwards) {
			t.Fatalf("Next = %v, want ErrClockBackwards", err)
		}
	})
}
