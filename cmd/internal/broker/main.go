// Package broker is nodeid's broker command line: serve (one broker: lease a
// node ID, renew it, serve Snowflake IDs over HTTP), run (the same,
// supervising a command that uses the ID), healthcheck (a container health
// check) and local-s3 (an S3 in memory for trials on one machine). cmd/nodeid-broker is the binary one deploys; cmd/demo-broker runs
// the same commands, through [Main], beside its demo. Both are thin users of
// package node: flags become a node.Config, signals end the context.
package broker

import (
	"context"
	"fmt"
	"io"
	"slices"
	"strings"
)

// Commands names the subcommands [Main] runs.
var Commands = []string{"serve", "run", "healthcheck", "local-s3"}

// Main runs the subcommand args[0] (one of [Commands], or help) of the
// program prog, its name in messages and help, and returns the process exit
// code. ctx ends on SIGTERM or SIGINT.
func Main(ctx context.Context, prog string, args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, Usage(prog))
		return exitUsage
	}
	switch args[0] {
	case "serve":
		return runServe(ctx, prog, args[1:], stdout, stderr)
	case "run":
		return runRun(ctx, prog, args[1:], stdout, stderr)
	case "healthcheck":
		return runHealthcheck(ctx, prog, args[1:], stdout, stderr)
	case "local-s3":
		return runLocalS3(ctx, prog, args[1:], stdout, stderr)
	case "-h", "-help", "--help", "help":
		fmt.Fprint(stdout, Usage(prog))
		return exitOK
	}
	fmt.Fprintf(stderr, "%s: unknown command %q\n\n%s", prog, args[0], Usage(prog))
	return exitUsage
}

// IsCommand reports whether name is one of [Commands].
func IsCommand(name string) bool { return slices.Contains(Commands, name) }

// Usage returns the lines of the usage text that list the commands of
// prog.
func Usage(prog string) string {
	return helpText(`Usage:
  {prog} serve [flags]   one broker: leases a node ID from the store, renews
                         it and serves Snowflake IDs over HTTP
                         ({prog} serve --help)
  {prog} run [flags] -- CMD [ARGS...]
                         one broker that runs CMD with the node ID and stops
                         it before the lease could be lost ({prog} run --help)
  {prog} healthcheck     exit 0 if the broker's /health is 200, else 1
  {prog} local-s3 [flags]
                         an S3 in memory for trials on one machine, taking
                         no node ID ({prog} local-s3 --help)
`, prog)
}

// helpText returns text with {prog} replaced by the program's name.
func helpText(text, prog string) string { return strings.ReplaceAll(text, "{prog}", prog) }
