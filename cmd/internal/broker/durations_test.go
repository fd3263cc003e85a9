package broker

import (
	"bytes"
	"context"
	"regexp"
	"testing"

	"github.com/nodeid/nodeid/cmd/internal/envflag"
)

// durationFlag matches a duration flag in the help: "  -lease-duration duration".
var durationFlag = regexp.MustCompile(`(?m)^  -([a-z0-9-]+) duration$`)

// TestBadDurationEveryCommand: every duration flag of serve, run and
// healthcheck, given a bare number on the command line or in its variable
// (every flag of theirs has one), says it wants a duration, naming the flag
// or the variable, with the command's usage exit code (healthcheck's is 1:
// Docker reserves 2).
func TestBadDurationEveryCommand(t *testing.T) {
	for _, tc := range []struct {
		cmd  string
		args []string // the rest of a command line that would pass
		code int
		hint string // the line after the error, if any
	}{
		{"serve", []string{"--bucket", "b"}, exitUsage, "Run 'nodeid-broker serve --help' for the flags and their variables.\n"},
		{"run", []string{"--bucket", "b", "--", "true"}, exitUsage, "Run 'nodeid-broker run --help' for the flags and their variables.\n"},
		{"healthcheck", nil, unhealthy, ""},
	} {
		var help bytes.Buffer
		if code := Main(context.Background(), "nodeid-broker", []string{tc.cmd, "--help"}, &help, &help); code != exitOK {
			t.Fatalf("%s --help: exit %d", tc.cmd, code)
		}
		flags := durationFlag.FindAllStringSubmatch(help.String(), -1)
		if len(flags) == 0 {
			t.Fatalf("%s --help shows no duration flag:\n%s", tc.cmd, help.String())
		}
		for _, fl := range flags {
			name, v := fl[1], envflag.Name(fl[1])
			for how, want := range map[string]string{
				"flag":     "--" + name + ` "15": want a duration such as 15s, 500ms or 2m`,
				"variable": "environment variable " + v + `="15": invalid value for --` + name + ": want a duration such as 15s, 500ms or 2m",
			} {
				t.Run(tc.cmd+"/"+name+"/"+how, func(t *testing.T) {
					args := append([]string{tc.cmd}, tc.args...)
					if how == "flag" {
						args = append([]string{tc.cmd, "--" + name, "15"}, tc.args...)
					} else {
						t.Setenv(v, "15")
					}
					var stdout, stderr bytes.Buffer
					code := Main(context.Background(), "nodeid-broker", args, &stdout, &stderr)
					line := "nodeid-broker " + tc.cmd + ": " + want + "\n" + tc.hint
					if code != tc.code || stderr.String() != line || stdout.Len() != 0 {
						t.Errorf("exit %d, want %d\nstderr: %q\nwant:   %q\nstdout: %s", code, tc.code, stderr.String(), line, stdout.String())
					}
				})
			}
		}
	}
}
