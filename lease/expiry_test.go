package lease_test

import (
	"testing"
	"time"

	"github.com/nodeid/nodeid/lease"
)

func TestExpired(t *testing.T) {
	lm := time.Date(2026, 11, 21, 10, 0, 0, 0, time.UTC)
	const lease15, margin = 15 * time.Second, time.Second
	tests := []struct {
		name         string
		lastModified time.Time
		date         time.Time
		want         bool
	}{
		{"just written", lm, lm, false},
		{"within lease", lm, lm.Add(10 * time.Second), false},
		{"at lease", lm, lm.Add(lease15), false},
		{"lease+resolution", lm, lm.Add(lease15 + time.Second), false},
		{"exactly at bound", lm, lm.Add(lease15 + 2*time.Second), false},
		{"one ms past bound", lm, lm.Add(lease15 + 2*time.Second + time.Millisecond), true},
		{"one second past bound", lm, lm.Add(lease15 + 3*time.Second), true},
		{"long ago", lm, lm.Add(time.Hour), true},
		{"date before write", lm, lm.Add(-time.Hour), false},
		{"unknown date", lm, time.Time{}, false},
		{"unknown last-modified", time.Time{}, lm.Add(time.Hour), false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := lease.Expired(tc.lastModified, tc.date, lease15, margin); got != tc.want {
				t.Fatalf("Expired(lm, lm+%v) = %v, want %v", tc.date.Sub(tc.lastModified), got, tc.want)
			}
		})
	}
}

func TestFirstExpiredDate(t *testing.T) {
	base := time.Date(2026, 11, 21, 10, 0, 0, 0, time.UTC)
	for _, d := range []time.Duration{time.Second, 1500 * time.Millisecond, 15 * time.Second} {
		for _, frac := range []time.Duration{0, time.Millisecond, 500 * time.Millisecond, 999 * time.Millisecond} {
			lm := base.Add(frac)
			first := lease.FirstExpiredDate(lm, d, time.Second)
			if first.Truncate(time.Second) != first {
				t.Errorf("lease %v, lm +%v: %v is not a whole second", d, frac, first)
			}
			if !lease.Expired(lm, first, d, time.Second) {
				t.Errorf("lease %v, lm +%v: not expired at the first expired date %v", d, frac, first)
			}
			if lease.Expired(lm, first.Add(-time.Second), d, time.Second) {
				t.Errorf("lease %v, lm +%v: already expired a second before %v", d, frac, first)
			}
		}
	}
	if !lease.FirstExpiredDate(time.Time{}, time.Second, time.Second).IsZero() {
		t.Error("unknown last-modified gives a date")
	}
}

func TestStateOf(t *testing.T) {
	lm := time.Date(2026, 11, 21, 10, 0, 0, 0, time.UTC)
	held := lease.Record{NodeID: 1, Holder: "t", LeaseMillis: 5000, WriteID: "0000000000000000"}
	free := lease.Record{NodeID: 1, LeaseMillis: 5000, WriteID: "0000000000000000"}
	challenge, confirm := held, held
	challenge.Challenge = &lease.Challenge{Of: "00000000000000aa", By: "c", WindowMillis: 2000}
	confirm.Challenge = &lease.Challenge{Of: "00000000000000aa", By: "c", Confirmed: true, WindowMillis: 2000}
	tests := []struct {
		name string
		r    lease.Record
		age  time.Duration
		want lease.State
	}{
		{"free fresh", free, 0, lease.StateFree},
		{"free old", free, time.Hour, lease.StateFree},
		{"held fresh", held, time.Second, lease.StateHeld},
		{"held at bound", held, 7 * time.Second, lease.StateHeld},
		{"held expired", held, 8 * time.Second, lease.StateExpired},
		{"challenge past its window", challenge, 5 * time.Second, lease.StateHeld},
		{"challenge expired by its lease", challenge, 8 * time.Second, lease.StateExpired},
		{"confirm at its window's bound", confirm, 4 * time.Second, lease.StateHeld},
		{"confirm past its window", confirm, 5 * time.Second, lease.StateExpired},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			m := lease.Meta{LastModified: lm, Date: lm.Add(tc.age)}
			if got := lease.StateOf(&tc.r, m, time.Second); got != tc.want {
				t.Fatalf("StateOf = %v, want %v", got, tc.want)
			}
		})
	}
	if lease.StateExpired.String() != "expired" || lease.State(9).String() != "unknown" {
		t.Fatalf("State.String broken")
	}
}
