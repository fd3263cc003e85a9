package envflag

import (
	"errors"
	"flag"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"
)

// testFlags are the flags of every case: name, size and wait are bound (in
// that order) unless the case binds all; secret is bound only by BindAll.
type testFlags struct {
	name   string
	size   int
	wait   time.Duration
	secret bool
}

func newTestSet(env map[string]string, all bool) (*Set, *testFlags) {
	var v testFlags
	s := New("cmd sub", func(k string) (string, bool) { x, ok := env[k]; return x, ok })
	s.StringVar(&v.name, "task-name", "def", "the name")
	s.IntVar(&v.size, "size", 3, "the size")
	s.DurationVar(&v.wait, "wait", time.Second, "the wait")
	if all {
		s.BindAll()
	} else {
		s.Bind("task-name", "size", "wait")
	}
	s.BoolVar(&v.secret, "secret", false, "never from the environment unless all") // after BindAll: bound anyway
	return s, &v
}

func TestParse(t *testing.T) {
	for _, tc := range []struct {
		name    string
		all     bool
		env     map[string]string
		args    []string
		want    testFlags
		err     string // exact error text; "" for none
		help    bool   // want flag.ErrHelp
		set     []string
		sources map[string]string
	}{
		{name: "defaults", want: testFlags{"def", 3, time.Second, false}},
		{name: "command line", args: []string{"--task-name", "a", "-size=5", "--secret"},
			want: testFlags{"a", 5, time.Second, true}, set: []string{"task-name", "size", "secret"},
			sources: map[string]string{"task-name": "--task-name", "size": "--size"}},
		{name: "env fills", env: map[string]string{"NODEID_TASK_NAME": "e", "NODEID_WAIT": "2s"},
			want: testFlags{"e", 3, 2 * time.Second, false}, set: []string{"task-name", "wait"},
			sources: map[string]string{"task-name": "NODEID_TASK_NAME (--task-name)", "wait": "NODEID_WAIT (--wait)", "size": "--size"}},
		{name: "empty variable counts", env: map[string]string{"NODEID_TASK_NAME": ""},
			want: testFlags{"", 3, time.Second, false}, set: []string{"task-name"}},
		{name: "command line wins", env: map[string]string{"NODEID_TASK_NAME": "e", "NODEID_SIZE": "9"}, args: []string{"--task-name=c"},
			want: testFlags{"c", 9, time.Second, false}, set: []string{"task-name", "size"},
			sources: map[string]string{"task-name": "--task-name", "size": "NODEID_SIZE (--size)"}},
		{name: "command line wins over a bad variable", env: map[string]string{"NODEID_SIZE": "many"}, args: []string{"--size", "4"},
			want: testFlags{"def", 4, time.Second, false}, set: []string{"size"}},
		{name: "unbound flag ignores its variable", env: map[string]string{"NODEID_SECRET": "true"},
			want: testFlags{"def", 3, time.Second, false}},
		{name: "unbound flag ignores a bad variable", env: map[string]string{"NODEID_SECRET": "maybe"},
			want: testFlags{"def", 3, time.Second, false}},
		{name: "BindAll binds later flags", all: true, env: map[string]string{"NODEID_SECRET": "true"},
			want: testFlags{"def", 3, time.Second, true}, set: []string{"secret"},
			sources: map[string]string{"secret": "NODEID_SECRET (--secret)"}},
		{name: "bad variable", env: map[string]string{"NODEID_WAIT": "soon"},
			err: `environment variable NODEID_WAIT="soon": invalid value for --wait: want a duration such as 15s, 500ms or 2m`},
		{name: "bound order: first bad variable in Bind order", env: map[string]string{"NODEID_WAIT": "soon", "NODEID_SIZE": "many", "NODEID_TASK_NAME": "x"},
			err: `environment variable NODEID_SIZE="many": invalid value for --size: want a whole number such as 7`},
		{name: "BindAll order: lexical", all: true, env: map[string]string{"NODEID_WAIT": "soon", "NODEID_SECRET": "maybe"},
			err: `environment variable NODEID_SECRET="maybe": invalid value for --secret: want true or false`},
		{name: "bad flag value", args: []string{"--size", "x"},
			err: `--size "x": want a whole number such as 7`},
		{name: "unknown flag", args: []string{"--frob"}, err: "flag provided but not defined: -frob"},
		{name: "unexpected argument", args: []string{"--size", "4", "7", "8"}, err: `unexpected argument "7" (flags only)`},
		{name: "after --", args: []string{"--", "--size"}, err: `unexpected argument "--size" (flags only)`},
		{name: "-h", args: []string{"-h"}, help: true},
		{name: "--help", args: []string{"--size", "4", "--help"}, help: true},
		{name: "help before a bad variable", env: map[string]string{"NODEID_SIZE": "many"}, args: []string{"-help"}, help: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, got := newTestSet(tc.env, tc.all)
			err := s.Parse(tc.args)
			switch {
			case tc.help:
				if !errors.Is(err, flag.ErrHelp) || errors.Is(err, ErrUsage) {
					t.Fatalf("Parse = %v, want flag.ErrHelp", err)
				}
				return
			case tc.err != "":
				if !errors.Is(err, ErrUsage) || err.Error() != tc.err {
					t.Fatalf("Parse = %v, want a usage error %q", err, tc.err)
				}
				return
			case err != nil:
				t.Fatalf("Parse = %v", err)
			}
			if *got != tc.want {
				t.Errorf("flags = %+v, want %+v", *got, tc.want)
			}
			for _, n := range []string{"task-name", "size", "wait", "secret"} {
				want := strings.Contains(" "+strings.Join(tc.set, " ")+" ", " "+n+" ")
				if s.IsSet(n) != want {
					t.Errorf("IsSet(%q) = %v, want %v", n, s.IsSet(n), want)
				}
			}
			for n, want := range tc.sources {
				if got := s.Source(n); got != want {
					t.Errorf("Source(%q) = %q, want %q", n, got, want)
				}
			}
		})
	}
}

func TestPrintDefaultsTo(t *testing.T) {
	for _, tc := range []struct {
		name        string
		all         bool
		vars        int // variables listed
		has, hasNot []string
	}{
		{"selective", false, 3, []string{"the name [$NODEID_TASK_NAME] (default \"def\")", "the size [$NODEID_SIZE] (default 3)", "the wait [$NODEID_WAIT] (default 1s)", "never from the environment unless all\n"}, []string{"NODEID_SECRET"}},
		{"all", true, 4, []string{"[$NODEID_TASK_NAME]", "[$NODEID_SIZE]", "[$NODEID_WAIT]", "unless all [$NODEID_SECRET]\n"}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, _ := newTestSet(nil, tc.all)
			if err := s.Parse([]string{"--help"}); !errors.Is(err, flag.ErrHelp) {
				t.Fatalf("Parse = %v", err)
			}
			var b strings.Builder
			s.PrintDefaultsTo(&b)
			s.PrintDefaultsTo(&b) // twice: the variables are not added again
			out := b.String()
			first, second := out[:len(out)/2], out[len(out)/2:]
			if first != second {
				t.Errorf("the second print differs:\n%s\n%s", first, second)
			}
			for _, want := range tc.has {
				if !strings.Contains(first, want) {
					t.Errorf("help lacks %q:\n%s", want, first)
				}
			}
			for _, bad := range tc.hasNot {
				if strings.Contains(first, bad) {
					t.Errorf("help has %q:\n%s", bad, first)
				}
			}
			if n := strings.Count(first, "[$"); n != tc.vars {
				t.Errorf("%d variables listed, want %d:\n%s", n, tc.vars, first)
			}
		})
	}
}

func TestPrintDefaultsToWithoutParse(t *testing.T) {
	s, _ := newTestSet(nil, true)
	var b strings.Builder
	s.PrintDefaultsTo(&b)
	if !strings.Contains(b.String(), "[$NODEID_SECRET]") {
		t.Errorf("BindAll's variables missing before Parse:\n%s", b.String())
	}
	if err := s.Parse(nil); err != nil { // the set prints nothing itself
		t.Fatal(err)
	}
}

func TestBindUndefinedPanics(t *testing.T) {
	defer func() {
		if r := recover(); r == nil || !strings.Contains(fmt.Sprint(r), "frob") {
			t.Errorf("recover() = %v, want a panic naming the flag", r)
		}
	}()
	New("x", nil).Bind("frob")
}

func TestName(t *testing.T) {
	for flagName, want := range map[string]string{"bucket": "NODEID_BUCKET", "s3-endpoint": "NODEID_S3_ENDPOINT", "max-lease-duration": "NODEID_MAX_LEASE_DURATION"} {
		if got := Name(flagName); got != want {
			t.Errorf("Name(%q) = %q, want %q", flagName, got, want)
		}
	}
}

func TestUsagef(t *testing.T) {
	err := Usagef("--%s %d is negative", "size", -1)
	if !errors.Is(err, ErrUsage) || err.Error() != "--size -1 is negative" {
		t.Errorf("Usagef = %q (is ErrUsage: %v)", err, errors.Is(err, ErrUsage))
	}
	if wrapped := fmt.Errorf("start: %w", err); !errors.Is(wrapped, ErrUsage) {
		t.Errorf("a wrapped usage error is not ErrUsage")
	}
	if errors.Is(errors.New("usage"), ErrUsage) {
		t.Errorf("another error with the same text is ErrUsage")
	}
}

func TestVars(t *testing.T) {
	s := New("cmd", func(string) (string, bool) { return "", false })
	s.String("s3-endpoint", "", "")
	s.String("id", "", "") // unbound: a write's aim, never from the environment
	s.Bind("s3-endpoint")
	if got := s.Vars(); !slices.Equal(got, []string{"NODEID_S3_ENDPOINT"}) {
		t.Errorf("Vars = %v, want the bound flag's variable only", got)
	}
	all := New("cmd", func(string) (string, bool) { return "", false })
	all.BindAll()
	all.String("gossip-key", "", "")
	all.Bool("s3-path-style", false, "")
	if got := all.Vars(); !slices.Equal(got, []string{"NODEID_GOSSIP_KEY", "NODEID_S3_PATH_STYLE"}) {
		t.Errorf("Vars after BindAll = %v", got)
	}
}

// TestBadValueSaysTheWantedForm: a value not of its flag's kind, on the
// command line, is answered with the form the flag wants, not the flag
// package's "parse error"; a boolean flag still needs no value; a value of
// the right kind that the flag refuses keeps its own reason.
func TestBadValueSaysTheWantedForm(t *testing.T) {
	for _, tc := range []struct {
		args []string
		err  string // "" for none
	}{
		{[]string{"--id", "abc"}, `--id "abc": want a whole number such as 7`},
		{[]string{"--count", "-"}, `--count "-": want a whole number such as 7`},
		{[]string{"--big", "1.5"}, `--big "1.5": want a whole number such as 7`},
		{[]string{"--rate", "fast"}, `--rate "fast": want a number such as 0.8`},
		{[]string{"--on=maybe"}, `--on "maybe": want true or false`},
		{[]string{"--wait", "15"}, `--wait "15": ` + durationWanted},
		{[]string{"--id", "99999999999999999999"}, `--id "99999999999999999999": value out of range`},
		{[]string{"--on", "--id", "7"}, ""},
	} {
		s := New("cmd", func(string) (string, bool) { return "", false })
		s.Int("id", 0, "")
		s.Uint("count", 0, "")
		s.Int64("big", 0, "")
		s.Float64("rate", 1, "")
		s.Bool("on", false, "")
		s.Duration("wait", 0, "")
		err := s.Parse(tc.args)
		switch {
		case tc.err == "" && err != nil:
			t.Errorf("%v: %v", tc.args, err)
		case tc.err != "" && (err == nil || err.Error() != tc.err || !errors.Is(err, ErrUsage)):
			t.Errorf("%v: %v, want the usage error %q", tc.args, err, tc.err)
		}
	}
}
