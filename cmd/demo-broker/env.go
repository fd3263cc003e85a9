package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"
)

// errUsage marks a bad command line or environment variable: exit code 2.
var errUsage = errors.New("usage")

// usageError wraps errUsage with a message that names the flag or variable.
type usageError struct{ msg string }

func (e *usageError) Error() string        { return e.msg }
func (e *usageError) Is(target error) bool { return target == errUsage }

func usagef(format string, args ...any) error {
	return &usageError{msg: fmt.Sprintf(format, args...)}
}

// envName returns the environment variable that stands in for a flag: NODEID_
// and the flag's name upper-cased with dashes as underscores ("s3-endpoint" ->
// "NODEID_S3_ENDPOINT"), as nodeidctl does.
func envName(flagName string) string {
	return "NODEID_" + strings.ToUpper(strings.ReplaceAll(flagName, "-", "_"))
}

// envFlags is a flag set whose every flag may also be set by its environment
// variable; a flag on the command line wins.
type envFlags struct {
	*flag.FlagSet
	lookupEnv func(string) (string, bool)
	fromEnv   map[string]bool
}

// newEnvFlags returns an empty flag set that reports no errors itself: parse
// returns them.
func newEnvFlags(name string, lookupEnv func(string) (string, bool)) *envFlags {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.Usage = func() {}
	return &envFlags{FlagSet: fs, lookupEnv: lookupEnv, fromEnv: map[string]bool{}}
}

// parse parses args and then fills every flag not given on the command line
// from its variable, if set. Errors wrap errUsage and name the flag or the
// variable; -h and --help give flag.ErrHelp.
func (f *envFlags) parse(args []string) error {
	var discard strings.Builder
	f.SetOutput(&discard)
	if err := f.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return err
		}
		return usagef("%v", err)
	}
	if f.NArg() > 0 {
		return usagef("unexpected argument %q (flags only)", f.Arg(0))
	}
	set := map[string]bool{}
	f.Visit(func(fl *flag.Flag) { set[fl.Name] = true })
	var err error
	f.VisitAll(func(fl *flag.Flag) {
		if err != nil || set[fl.Name] {
			return
		}
		v, ok := f.lookupEnv(envName(fl.Name))
		if !ok {
			return
		}
		if e := f.Set(fl.Name, v); e != nil {
			err = usagef("environment variable %s=%q: invalid value for --%s: %v", envName(fl.Name), v, fl.Name, e)
			return
		}
		f.fromEnv[fl.Name] = true
	})
	return err
}

// source names where a flag's value came from, for error messages: "--name",
// or "NODEID_NAME (--name)".
func (f *envFlags) source(name string) string {
	if f.fromEnv[name] {
		return envName(name) + " (--" + name + ")"
	}
	return "--" + name
}

// printDefaults prints the flags with their variables.
func (f *envFlags) printDefaults(w io.Writer) {
	f.VisitAll(func(fl *flag.Flag) {
		if !strings.Contains(fl.Usage, "[$") {
			fl.Usage += " [$" + envName(fl.Name) + "]"
		}
	})
	f.SetOutput(w)
	f.PrintDefaults()
}
