package snowflake

import (
	"fmt"
	"math"
	"time"
)

// wait blocks until the caller should try again to take sequence numbers, or
// returns why it cannot. Only one caller at a time waits on the clock (the
// leader); the others block on its channel and retry when it is done, so
// waiting burns at most one core, and a call's own deadlines still hold: they
// are measured from entryNs, the precise clock when the call first had to wait.
func (g *Generator) wait(entryNs int64) error {
	g.mu.Lock()
	if ch := g.waitCh; ch != nil {
		g.mu.Unlock()
		<-ch
		return nil
	}
	ch := make(chan struct{})
	g.waitCh = ch
	g.mu.Unlock()

	err := g.lead(entryNs)

	g.mu.Lock()
	g.waitCh = nil
	g.mu.Unlock()
	close(ch)
	return err
}

// lead waits, in steps of at most pollInterval, until an ID can be issued:
// the clock has reached the next issuable timestamp and that timestamp is
// within the reservation. It returns nil then (the caller takes it by CAS,
// racing the others), or an error: ErrFenced as soon as the fence is down or
// the generator stopped, ErrClockBackwards when the clock is further behind
// than MaxClockWait allows, ErrReservationExhausted when the reservation has
// not moved within MaxReservationWait, ErrTimeOverflow past the layout.
func (g *Generator) lead(entryNs int64) error {
	for {
		if g.fence != nil && !g.fence.Valid() {
			return ErrFenced
		}
		s := g.state.Load()
		if s == stopped {
			return ErrFenced
		}
		nowNs := g.nowNs()
		now := floorMs(nowNs)
		waited := max(nowNs-entryNs, 0)

		// The lowest timestamp that may be issued next: the last one if it
		// has sequence numbers left, else the one after (0 at least).
		next := s >> g.seqBits
		if s&g.seqMask == g.seqMask {
			next++
		}
		if now < next {
			// The clock is behind next: by less than a millisecond when the
			// sequence is used up (always waited for), by more when the clock
			// is behind the floor or stepped back (bounded by MaxClockWait).
			// The clock is behind the last issued timestamp (or the floor)
			// by d less the millisecond that timestamp lasts.
			d := untilMs(next, nowNs)
			if behind := d - int64(time.Millisecond); next-now > 1 && behind > g.maxClockWait-waited {
				return fmt.Errorf("%w by %v (MaxClockWait is %v)", ErrClockBackwards,
					time.Duration(behind).Round(time.Microsecond), time.Duration(g.maxClockWait))
			}
			g.clock.Sleep(min(time.Duration(d), pollInterval))
			continue
		}

		if now > g.maxTs {
			return fmt.Errorf("%w: the clock (%s) is past the layout's last timestamp (%s)", ErrTimeOverflow,
				fmtMs(now+g.epochMs), fmtMs(g.maxTs+g.epochMs))
		}
		lim := g.limit()
		if now <= lim {
			return nil
		}
		// The clock has passed the reservation: wait for a renewal to raise
		// it, polling.
		if waited >= g.maxResWait {
			return fmt.Errorf("%w: the clock (%s) is %v past the reservation (%s), which did not move for %v",
				ErrReservationExhausted, fmtMs(now+g.epochMs), time.Duration(nowNs-(lim+1)*int64(time.Millisecond)).Round(time.Microsecond),
				fmtMs(lim+g.epochMs), time.Duration(waited).Round(time.Microsecond))
		}
		g.clock.Sleep(min(time.Duration(g.maxResWait-waited), pollInterval))
	}
}

// untilMs returns the nanoseconds from nowNs to the start of millisecond ms
// (both since the epoch), saturating instead of overflowing.
func untilMs(ms, nowNs int64) int64 {
	if ms > math.MaxInt64/int64(time.Millisecond)-1 {
		return math.MaxInt64
	}
	return ms*int64(time.Millisecond) - nowNs
}

// fmtMs formats Unix milliseconds for error messages.
func fmtMs(ms int64) string {
	return time.UnixMilli(ms).UTC().Format("2006-01-02T15:04:05.000Z07:00")
}
