// Package envflag is the flag layer the nodeid commands share: a flag set
// whose flags may also be set by NODEID_<FLAG> environment variables, where the
// command line wins, errors name the flag or the variable, and the help lists
// the variables.
package envflag

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"
)

// Prefix starts every environment variable that stands in for a flag.
const Prefix = "NODEID_"

// Name returns the environment variable that stands in for a flag: [Prefix]
// and the flag's name upper-cased with dashes as underscores ("s3-endpoint" ->
// "NODEID_S3_ENDPOINT").
func Name(flagName string) string {
	return Prefix + strings.ToUpper(strings.ReplaceAll(flagName, "-", "_"))
}

// ErrUsage marks a bad command line or environment variable: an unknown flag,
// a bad value, an unexpected argument, a missing required flag. Commands map
// it to their usage exit code.
var ErrUsage = errors.New("usage")

// usageError is an error that wraps ErrUsage with a message of its own, the
// whole of its text.
type usageError struct{ msg string }

func (e *usageError) Error() string        { return e.msg }
func (e *usageError) Is(target error) bool { return target == ErrUsage }

// Usagef returns an error that wraps [ErrUsage] and whose text is the
// formatted message alone (no "usage: " prefix): it should name the flag or
// the variable at fault, see [Set.Source].
func Usagef(format string, args ...any) error {
	return &usageError{msg: fmt.Sprintf(format, args...)}
}

// Set is a flag set some or all of whose flags may also be set by their
// environment variables ([Name]); a flag given on the command line wins over
// its variable. Define the flags on the embedded [flag.FlagSet], bind them
// with [Set.Bind] or [Set.BindAll], then call [Set.Parse]. Leave a flag that
// aims a write unbound, so that a variable left in a shell can never aim it.
// The Set prints nothing itself: Parse returns the errors, and
// [Set.PrintDefaultsTo] prints the flags.
type Set struct {
	*flag.FlagSet
	lookupEnv func(string) (string, bool)
	all       bool            // BindAll was called
	bound     []string        // flags a variable may set, in the order they were bound
	isBound   map[string]bool // the same, as a set
	fromEnv   map[string]bool // flags a variable did set
	set       map[string]bool // flags set on the command line or by a variable
}

// New returns an empty Set named name (for example "nodeidctl status") that
// reads the environment with lookupEnv (os.LookupEnv, or a fake in tests).
func New(name string, lookupEnv func(string) (string, bool)) *Set {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(io.Discard) // Parse returns the errors; PrintDefaultsTo prints the help
	fs.Usage = func() {}
	return &Set{
		FlagSet:   fs,
		lookupEnv: lookupEnv,
		isBound:   map[string]bool{},
		fromEnv:   map[string]bool{},
		set:       map[string]bool{},
	}
}

// Bind lets the environment set the named flags, which must be defined, and
// says so in their usage (" [$NODEID_NAME]"). Variables are read in the order
// the flags were bound; binding a flag twice changes nothing.
func (s *Set) Bind(names ...string) {
	for _, n := range names {
		fl := s.Lookup(n)
		if fl == nil {
			panic("envflag: Bind of undefined flag " + n)
		}
		if s.isBound[n] {
			continue
		}
		fl.Usage += " [$" + Name(n) + "]"
		s.bound = append(s.bound, n)
		s.isBound[n] = true
	}
}

// BindAll lets the environment set every flag, including those defined after
// the call: at Parse (or PrintDefaultsTo) the flags not bound yet are bound in
// lexical order.
func (s *Set) BindAll() { s.all = true }

// bindRest binds the flags left unbound, if BindAll was called.
func (s *Set) bindRest() {
	if s.all {
		s.VisitAll(func(fl *flag.Flag) { s.Bind(fl.Name) })
	}
}

// Parse parses args, which must hold flags only, and then sets every bound
// flag not given on the command line from its variable, if that is set (even
// to ""). It returns [flag.ErrHelp] for -h and --help (the caller prints the
// help), and for anything else wrong an error wrapping [ErrUsage] that names
// the flag, or the variable and its flag; it stops at the first bad variable.
// A duration flag or variable given what is not a duration (a bare number,
// say) says what it wants: --wait "15": want a duration such as 15s, 500ms
// or 2m.
// Parse replaces the embedded FlagSet's Parse.
func (s *Set) Parse(args []string) error {
	s.bindRest()
	if err := s.parseArgs(args); err != nil {
		return err
	}
	if s.NArg() > 0 {
		return Usagef("unexpected argument %q (flags only)", s.Arg(0))
	}
	s.Visit(func(fl *flag.Flag) { s.set[fl.Name] = true })
	for _, n := range s.bound {
		if s.set[n] {
			continue
		}
		v, ok := s.lookupEnv(Name(n))
		if !ok {
			continue
		}
		if err := s.Set(n, v); err != nil {
			return Usagef("environment variable %s=%q: invalid value for --%s: %s", Name(n), v, n, badValue(s.Lookup(n).Value, v, err))
		}
		s.set[n], s.fromEnv[n] = true, true
	}
	return nil
}

// Vars returns the environment variables the set reads, those of its bound
// flags (all of them after BindAll), in the order the flags were bound: the
// command's own configuration, to keep out of a child's environment.
func (s *Set) Vars() []string {
	s.bindRest()
	vars := make([]string, len(s.bound))
	for i, n := range s.bound {
		vars[i] = Name(n)
	}
	return vars
}

// IsSet reports whether Parse set the named flag, from the command line or
// from its variable: false means it kept its default.
func (s *Set) IsSet(name string) bool { return s.set[name] }

// Source names where a flag's value came from, for error messages: "--name",
// or "NODEID_NAME (--name)" when its variable set it.
func (s *Set) Source(name string) string {
	if s.fromEnv[name] {
		return Name(name) + " (--" + name + ")"
	}
	return "--" + name
}

// PrintDefaultsTo prints the flags on w as [flag.FlagSet.PrintDefaults] does,
// each bound flag's usage ending with its variable.
func (s *Set) PrintDefaultsTo(w io.Writer) {
	s.bindRest()
	s.SetOutput(w)
	s.PrintDefaults()
	s.SetOutput(io.Discard)
}

// parseArgs parses the command line with the embedded FlagSet. A bad value
// is reported as [badValue] says, naming the flag ("--wait "15": want a
// duration such as ...", "--id "abc": want a whole number such as 7"), where
// the flag package would say only "parse error".
func (s *Set) parseArgs(args []string) error {
	// The flag package's error keeps only the text of the Value's, and
	// formats it its own way: each flag's Value is wrapped for the
	// parse to catch the bad value first hand, then put back, so that the
	// help (which shows a duration flag's placeholder by its Value's type)
	// and the callers see the flags as they were defined.
	var bad error
	var wrapped []*flag.Flag
	defer func() {
		for _, fl := range wrapped {
			fl.Value = fl.Value.(*catchValue).Value
		}
	}()
	s.VisitAll(func(fl *flag.Flag) {
		fl.Value = &catchValue{Value: fl.Value, name: fl.Name, bad: &bad}
		wrapped = append(wrapped, fl)
	})
	err := s.FlagSet.Parse(args)
	switch {
	case err == nil, errors.Is(err, flag.ErrHelp):
		return err
	case bad != nil:
		return bad
	}
	return Usagef("%v", err)
}

// catchValue wraps a flag's Value during [Set.parseArgs] and keeps, in bad,
// the first value it refused, as the error to report.
type catchValue struct {
	flag.Value
	name string // the flag's
	bad  *error
}

// IsBoolFlag keeps a boolean flag one that needs no value (--s3-path-style).
func (c *catchValue) IsBoolFlag() bool {
	b, ok := c.Value.(interface{ IsBoolFlag() bool })
	return ok && b.IsBoolFlag()
}

func (c *catchValue) Set(v string) error {
	err := c.Value.Set(v)
	if err != nil && *c.bad == nil {
		*c.bad = Usagef("--%s %q: %s", c.name, v, badValue(c.Value, v, err))
	}
	return err
}

// durationWanted says what a duration flag wants.
const durationWanted = "want a duration such as 15s, 500ms or 2m"

// badValue says why value is no value for a flag of Value fv, whose Set
// refused it with err: what the flag wants (a duration, a whole number,
// true or false, a number), rather than the flag package's "parse error",
// when value is not of its kind; else err's text (a value out of range, a
// flag's own check).
func badValue(fv flag.Value, value string, err error) string {
	g, ok := fv.(flag.Getter)
	if !ok {
		return err.Error()
	}
	switch g.Get().(type) {
	case time.Duration:
		if _, perr := time.ParseDuration(value); perr != nil {
			return durationWanted
		}
	case int, int64:
		if _, perr := strconv.ParseInt(value, 0, 64); perr != nil && !errors.Is(perr, strconv.ErrRange) {
			return "want a whole number such as 7"
		}
	case uint, uint64:
		if _, perr := strconv.ParseUint(value, 0, 64); perr != nil && !errors.Is(perr, strconv.ErrRange) {
			return "want a whole number such as 7"
		}
	case bool:
		return "want true or false"
	case float64:
		if _, perr := strconv.ParseFloat(value, 64); perr != nil && !errors.Is(perr, strconv.ErrRange) {
			return "want a number such as 0.8"
		}
	}
	return err.Error()
}
