package node

import (
	"errors"
	"testing"
	"time"

	"github.com/nodeid/nodeid/nodeid"
)

// TestChildConfigValidate: defaults fill the zero fields; a kill margin that
// leaves a lost lease's child no time to stop, and non-positive durations,
// are refused with a field error.
func TestChildConfigValidate(t *testing.T) {
	nc := DefaultLocalConfig() // lease 3 s, safety margin 500 ms, renew deadline 2 s: 500 ms after a loss
	nc.Provider.TaskID = "a"
	if err := nc.Validate(); err != nil {
		t.Fatal(err)
	}
	if w := nc.Provider.LossWindow(); w != 500*time.Millisecond {
		t.Fatalf("LossWindow %v, want 500ms", w)
	}
	for _, tc := range []struct {
		name      string
		cfg       ChildConfig
		wantField string // "" for valid
	}{
		{"zero: defaults", ChildConfig{}, ""},
		{"margin within the window", ChildConfig{StopTimeout: time.Second, KillMargin: 400 * time.Millisecond}, ""},
		{"margin fills the window", ChildConfig{KillMargin: 500 * time.Millisecond}, "Child.KillMargin"},
		{"negative stop timeout", ChildConfig{StopTimeout: -time.Second}, "Child.StopTimeout"},
		{"negative margin", ChildConfig{KillMargin: -time.Millisecond}, "Child.KillMargin"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := tc.cfg
			err := c.Validate(nc)
			fes := nodeid.FieldErrors(err)
			switch {
			case tc.wantField == "" && err != nil:
				t.Fatalf("Validate: %v", err)
			case tc.wantField == "" && (c.StopTimeout <= 0 || c.KillMargin <= 0):
				t.Fatalf("after Validate: %+v, want the defaults filled in", c)
			case tc.wantField != "" && (len(fes) != 1 || fes[0].Field != tc.wantField):
				t.Fatalf("Validate: %v, want one error on %s", err, tc.wantField)
			}
		})
	}
}

// TestChildExitError: the exit code a shell reports.
func TestChildExitError(t *testing.T) {
	var err error = &ChildExitError{Code: 7}
	var ce *ChildExitError
	if !errors.As(err, &ce) || ce.ExitCode() != 7 {
		t.Fatalf("exit 7: %v", err)
	}
	if c := (&ChildExitError{Code: -1, Signal: 9, Killed: true}).ExitCode(); c != 137 {
		t.Fatalf("SIGKILL: exit code %d, want 137", c)
	}
}
