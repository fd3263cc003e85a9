package broker

import (
	"errors"
	"io"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/nodeid/nodeid/cmd/internal/envflag"
	"github.com/nodeid/nodeid/internal/faultclock"
)

// TestDebugClockFlags: no --debug-clock-* flag leaves the system clock; a
// rate or steps give the broker a faultclock.Clock, which is also the host
// clock a child reads; bad values are usage errors naming the flag.
func TestDebugClockFlags(t *testing.T) {
	base := []string{"--bucket", "b"}
	c, err := parseServeFlags("nodeid-broker", base, env(), io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := c.node.Provider.Clock.(*faultclock.Clock); ok || c.node.HostClock != nil {
		t.Fatalf("no debug flag: clock %T, host clock set %v; want the system clock", c.node.Provider.Clock, c.node.HostClock != nil)
	}

	c, err = parseServeFlags("nodeid-broker", append(slices.Clone(base), "--debug-clock-rate", "0.8", "--debug-clock-steps", "5s:+2s, 9s:-2s"), env(), io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	fc, ok := c.node.Provider.Clock.(*faultclock.Clock)
	if !ok || c.node.HostClock == nil {
		t.Fatalf("clock %T: want a *faultclock.Clock, and its host clock", c.node.Provider.Clock)
	}
	if d := c.node.HostClock().Sub(fc.Wall()); d.Abs() > time.Second {
		t.Fatalf("the host clock is %v from the wall clock before any step", d)
	}

	for _, tt := range []struct {
		args []string
		flag string
	}{
		{[]string{"--debug-clock-rate", "0"}, "--debug-clock-rate"},
		{[]string{"--debug-clock-rate", "-1"}, "--debug-clock-rate"},
		{[]string{"--debug-clock-steps", "5s"}, "--debug-clock-steps"},
		{[]string{"--debug-clock-steps", "-1s:2s"}, "--debug-clock-steps"},
		{[]string{"--debug-clock-steps", "1s:two"}, "--debug-clock-steps"},
	} {
		_, err := parseServeFlags("nodeid-broker", append(slices.Clone(base), tt.args...), env(), io.Discard)
		if !errors.Is(err, envflag.ErrUsage) || !strings.Contains(err.Error(), tt.flag) {
			t.Errorf("%v: err %v, want a usage error naming %s", tt.args, err, tt.flag)
		}
	}
}

func TestParseClockSteps(t *testing.T) {
	got, err := parseClockSteps("5s:+2s,9s:-500ms,1m:0s")
	if err != nil {
		t.Fatal(err)
	}
	want := []faultclock.Step{{At: 5 * time.Second, By: 2 * time.Second}, {At: 9 * time.Second, By: -500 * time.Millisecond}, {At: time.Minute}}
	if !slices.Equal(got, want) {
		t.Fatalf("got %v, want %v", got, want)
	}
}
