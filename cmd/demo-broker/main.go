// Command demo-broker is nodeid's broker: with no arguments, a self-contained
// local demo on an embedded S3; with "serve", one broker as deployed in an ECS
// task; with "run", one broker that supervises a command using its node ID;
// with "healthcheck", an ECS container health check. See the README.
package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	code := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

// run dispatches a subcommand and returns the process exit code.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		return runDemo(ctx, nil, stdout, stderr)
	}
	switch args[0] {
	case "serve":
		return runServe(ctx, args[1:], stdout, stderr)
	case "run":
		return runRun(ctx, args[1:], stdout, stderr)
	case "healthcheck":
		return runHealthcheck(ctx, args[1:], stdout, stderr)
	case "demo":
		return runDemo(ctx, args[1:], stdout, stderr)
	case "-h", "-help", "--help", "help":
		fmt.Fprint(stdout, usage)
		return 0
	default:
		fmt.Fprintf(stderr, "demo-broker: unknown command %q\n\n%s", args[0], usage)
		return 2
	}
}

const usage = `Usage:
  demo-broker                 the local demo: several brokers on an embedded S3
  demo-broker demo [flags]    the same, with options (demo-broker demo --help)
  demo-broker serve [flags]   one broker (demo-broker serve --help)
  demo-broker run [flags] -- CMD [ARGS...]
                              one broker that runs CMD with the node ID and
                              stops it before the lease could be lost
                              (demo-broker run --help)
  demo-broker healthcheck     exit 0 if the broker's /health is 200, else 1
`
