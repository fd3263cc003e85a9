package faultclock

import (
	"context"
	"math"
	"testing"
	"time"

	"github.com/nodeid/nodeid/internal/testkit/fakeclock"
)

var start = time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC)

// TestRunsAtItsRate: every reading advances Rate seconds per real
// second, the wall clock from the creation's reading plus Offset, and a sleep
// of d lasts d/Rate.
func TestRunsAtItsRate(t *testing.T) {
	real := fakeclock.New(start)
	c := New(Fault{Rate: 0.5, Offset: 2 * time.Second}, real)
	real.Advance(10 * time.Second)
	if got := c.Now().Sub(start); got != 5*time.Second {
		t.Fatalf("Now advanced %v in 10 s at rate 0.5, want 5s", got)
	}
	if got, want := c.Wall(), start.Add(7*time.Second); !got.Equal(want) {
		t.Fatalf("Wall = %v, want %v (start + offset 2 s + 5 s)", got, want)
	}
	if got := c.Host(); !got.Equal(c.Wall()) {
		t.Fatalf("Host = %v, want the wall clock %v (no steps)", got, c.Wall())
	}

	done := make(chan error, 1)
	go func() { done <- c.Sleep(context.Background(), time.Second) }()
	if err := real.WaitForSleepers(context.Background(), 1); err != nil {
		t.Fatal(err)
	}
	real.Advance(2*time.Second - time.Nanosecond)
	if real.Sleepers() != 1 {
		t.Fatal("a sleep of 1 s at rate 0.5 ended before 2 s of real time")
	}
	real.Advance(time.Nanosecond)
	if err := <-done; err != nil {
		t.Fatalf("Sleep = %v", err)
	}
}

// TestSteps: the real-time clock (Host, and the suspension check's
// reading) takes each step at its instant on the faulty clock, in any order
// given; the wall clock never steps.
func TestSteps(t *testing.T) {
	real := fakeclock.New(start)
	c := New(Fault{Rate: 2, Steps: []Step{
		{At: 4 * time.Second, By: -5 * time.Second},
		{At: 2 * time.Second, By: 3 * time.Second},
	}}, real)
	for _, tt := range []struct {
		real, shift time.Duration // real time since creation; the step sum then
	}{
		{0, 0},
		{999 * time.Millisecond, 0},    // 1.998 s on the clock
		{time.Second, 3 * time.Second}, // 2 s: the first step
		{1999 * time.Millisecond, 3 * time.Second},
		{2 * time.Second, -2 * time.Second}, // 4 s: the second step
		{time.Hour, -2 * time.Second},
	} {
		real.Advance(tt.real - real.Now().Sub(start))
		wall := start.Add(2 * tt.real)
		if got := c.Wall(); !got.Equal(wall) {
			t.Fatalf("after %v: Wall = %v, want %v (it never steps)", tt.real, got, wall)
		}
		if got, want := c.Host(), wall.Add(tt.shift); !got.Equal(want) {
			t.Fatalf("after %v: Host = %v, want wall %+v", tt.real, got, tt.shift)
		}
		if got, want := c.SuspendReading(c.Now()), wall.Add(tt.shift).UnixNano(); got != want {
			t.Fatalf("after %v: SuspendReading = %d, want %d", tt.real, got, want)
		}
	}
}

func TestFaultValidate(t *testing.T) {
	for _, rate := range []float64{-0.5, math.NaN(), math.Inf(1)} {
		if (Fault{Rate: rate}).Validate() == nil {
			t.Errorf("rate %v validated", rate)
		}
	}
	for _, rate := range []float64{0, 0.8, 1.25} {
		if err := (Fault{Rate: rate}).Validate(); err != nil {
			t.Errorf("rate %v: %v", rate, err)
		}
	}
}
