package faults

import (
	"reflect"
	"slices"
	"testing"
	"time"
)

// TestDrawClockFault: a seed gives the same clock every time, with a rate
// from the list, and a bump forward, a bump back and a strobe, in order of
// time within the run.
func TestDrawClockFault(t *testing.T) {
	rates := []float64{0.8, 1.25}
	d := 20 * time.Second
	for gen := range 50 {
		c := DrawClockFault(7, 0, gen, rates, d)
		if again := DrawClockFault(7, 0, gen, rates, d); !reflect.DeepEqual(c, again) {
			t.Fatalf("gen %d: drew %v, then %v", gen, c, again)
		}
		if !slices.Contains(rates, c.Rate) {
			t.Fatalf("gen %d: rate %v not in %v", gen, c.Rate, rates)
		}
		if len(c.Steps) != 2+strobeSteps {
			t.Fatalf("gen %d: %d steps, want %d", gen, len(c.Steps), 2+strobeSteps)
		}
		var fwd, back time.Duration
		for i, s := range c.Steps {
			if i > 0 && s.At < c.Steps[i-1].At {
				t.Fatalf("gen %d: steps out of order: %v", gen, c.Steps)
			}
			if s.At < 0 || s.At > d+strobeSteps*strobeEvery {
				t.Fatalf("gen %d: step at %v, outside the run", gen, s.At)
			}
			if s.By.Abs() < 500*time.Millisecond || s.By.Abs() > 4*time.Second {
				t.Fatalf("gen %d: step of %v", gen, s.By)
			}
			if s.By > 0 {
				fwd += s.By
			} else {
				back -= s.By
			}
		}
		if fwd == 0 || back == 0 {
			t.Fatalf("gen %d: steps %v: want some forward and some back", gen, c.Steps)
		}
	}
}

func TestClockFaultArgs(t *testing.T) {
	if args := (ClockFault{}).Args(); args != nil {
		t.Fatalf("a correct clock gives flags %v", args)
	}
	c := ClockFault{Rate: 0.8}
	c.Steps = append(c.Steps, DrawClockFault(1, 0, 0, []float64{1}, time.Second).Steps[:1]...)
	args := c.Args()
	if len(args) != 4 || args[0] != "--debug-clock-rate" || args[1] != "0.8" || args[2] != "--debug-clock-steps" {
		t.Fatalf("flags %q", args)
	}
}
