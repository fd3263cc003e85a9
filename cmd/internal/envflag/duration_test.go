package envflag

import (
	"errors"
	"strconv"
	"strings"
	"testing"
	"time"
)

func TestFormatDuration(t *testing.T) {
	for d, want := range map[time.Duration]string{
		0: "0s", 2 * time.Second / 3: "667ms", 43 * time.Second / 3: "14.333s", 2 * time.Minute: "2m",
		90 * time.Minute: "1h30m", time.Hour: "1h", 61 * time.Second: "1m1s", -1500 * time.Millisecond: "-1.5s",
		250 * time.Microsecond: "250µs", 1500 * time.Microsecond: "2ms", 10 * time.Second: "10s",
	} {
		if got := FormatDuration(d); got != want {
			t.Errorf("FormatDuration(%v) = %q, want %q", d, got, want)
		}
	}
}

func TestHumanDurations(t *testing.T) {
	for in, want := range map[string]string{
		"--renew-interval 666.666666ms must be below --renew-deadline 1.333333333s": "--renew-interval 667ms must be below --renew-deadline 1.333s",
		"--lease-duration 2m0s above --max-lease-duration 1m0s":                     "--lease-duration 2m above --max-lease-duration 1m",
		"in (0, --lease-duration 1h0m0s)":                                           "in (0, --lease-duration 1h)",
		"--cluster-size 0 outside 1..1024 (2^NodeBits)":                             "--cluster-size 0 outside 1..1024 (2^NodeBits)",
		"key=7s, lease 0.json, v1s":                                                 "key=7s, lease 0.json, v1s",
	} {
		if got := HumanDurations(in); got != want {
			t.Errorf("HumanDurations(%q) = %q, want %q", in, got, want)
		}
	}
}

// minutes is a duration flag of a type of its own (a flag.Getter of a
// time.Duration) that also takes a bare number, as minutes.
type minutes time.Duration

func (m *minutes) String() string { return time.Duration(*m).String() }
func (m *minutes) Get() any       { return time.Duration(*m) }
func (m *minutes) Set(s string) error {
	if n, err := strconv.Atoi(s); err == nil {
		*m = minutes(time.Duration(n) * time.Minute)
		return nil
	}
	d, err := time.ParseDuration(s)
	if err == nil && d < 0 {
		return errors.New("negative")
	}
	*m = minutes(d)
	return err
}

// TestBadDuration: a duration flag or variable given what is not a duration
// (a bare number above all) says what it wants, naming the flag or the
// variable; other errors and other flags keep their messages.
func TestBadDuration(t *testing.T) {
	for _, tc := range []struct {
		name string
		env  map[string]string
		args []string
		err  string
	}{
		{name: "bare number", args: []string{"--wait", "15"}, err: `--wait "15": want a duration such as 15s, 500ms or 2m`},
		{name: "bare number with =", args: []string{"--wait=15"}, err: `--wait "15": want a duration such as 15s, 500ms or 2m`},
		{name: "one dash", args: []string{"-wait", "15"}, err: `--wait "15": want a duration such as 15s, 500ms or 2m`},
		{name: "a word", args: []string{"--size", "4", "--wait", "soon"}, err: `--wait "soon": want a duration such as 15s, 500ms or 2m`},
		{name: "empty", args: []string{"--wait="}, err: `--wait "": want a duration such as 15s, 500ms or 2m`},
		{name: "bare number variable", env: map[string]string{"NODEID_WAIT": "15"},
			err: `environment variable NODEID_WAIT="15": invalid value for --wait: want a duration such as 15s, 500ms or 2m`},
		{name: "bad duration after a good one", args: []string{"--wait", "2s", "--other", "3"}, err: `--other "3": want a duration such as 15s, 500ms or 2m`},
		{name: "own type takes a bare number", args: []string{"--minutes", "3"}},
		{name: "own type, not a duration", args: []string{"--minutes", "3x"}, err: `--minutes "3x": want a duration such as 15s, 500ms or 2m`},
		{name: "own type's own error", args: []string{"--minutes=-1s"}, err: `--minutes "-1s": negative`},
		{name: "own type variable", env: map[string]string{"NODEID_MINUTES": "soon"},
			err: `environment variable NODEID_MINUTES="soon": invalid value for --minutes: want a duration such as 15s, 500ms or 2m`},
		{name: "an int says what it wants", args: []string{"--size", "x"}, err: `--size "x": want a whole number such as 7`},
		{name: "a missing value keeps its message", args: []string{"--wait"}, err: `flag needs an argument: -wait`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, _ := newTestSet(tc.env, true)
			s.Duration("other", 0, "another duration")
			var m minutes
			s.Var(&m, "minutes", "a duration of its own type")
			err := s.Parse(tc.args)
			if tc.err == "" {
				if err != nil || time.Duration(m) != 3*time.Minute {
					t.Fatalf("Parse = %v, minutes %v", err, time.Duration(m))
				}
				return
			}
			if !errors.Is(err, ErrUsage) || err.Error() != tc.err {
				t.Fatalf("Parse = %v, want a usage error %q", err, tc.err)
			}
			// The flags are as they were defined: the help still shows the
			// duration placeholder, and the values are their own types.
			var b strings.Builder
			s.PrintDefaultsTo(&b)
			for _, want := range []string{"-wait duration\n", "-other duration\n"} {
				if !strings.Contains(b.String(), want) {
					t.Errorf("help lacks %q after a failed Parse:\n%s", want, b.String())
				}
			}
			if _, ok := s.Lookup("minutes").Value.(*minutes); !ok {
				t.Errorf("--minutes has Value %T after Parse, want *minutes", s.Lookup("minutes").Value)
			}
		})
	}
}

// TestDurationPlaceholder: the help of a duration flag says that it wants a
// duration (its placeholder), before and after a Parse.
func TestDurationPlaceholder(t *testing.T) {
	s, _ := newTestSet(nil, false)
	for _, args := range [][]string{nil, {"--wait", "3s"}} {
		if err := s.Parse(args); err != nil {
			t.Fatal(err)
		}
		var b strings.Builder
		s.PrintDefaultsTo(&b)
		if !strings.Contains(b.String(), "  -wait duration\n") {
			t.Errorf("after Parse(%q), help lacks the duration placeholder:\n%s", args, b.String())
		}
	}
}
