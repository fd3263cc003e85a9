// Command demo-broker is nodeid's local demo: with no arguments, "demo" or
// the demo's flags alone (demo-broker --fast),
// several brokers on an embedded S3, a live lease table, a kill, a graceful
// stop and a skewed clock, and every ID checked unique. "serve", "run" and
// "healthcheck" are nodeid-broker's commands (the same code, package
// cmd/internal/broker), kept here as aliases. See the README.
package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/nodeid/nodeid/cmd/internal/broker"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	code := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

// run dispatches a subcommand and returns the process exit code.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	switch {
	case len(args) == 0:
		return runDemo(ctx, nil, stdout, stderr)
	case args[0] == "demo":
		return runDemo(ctx, args[1:], stdout, stderr)
	case broker.IsCommand(args[0]):
		return broker.Main(ctx, "demo-broker", args, stdout, stderr)
	case args[0] == "-h" || args[0] == "-help" || args[0] == "--help" || args[0] == "help":
		fmt.Fprint(stdout, usage)
		return 0
	case strings.HasPrefix(args[0], "-"): // the demo's flags without "demo": demo-broker --fast
		return runDemo(ctx, args, stdout, stderr)
	default:
		fmt.Fprintf(stderr, "demo-broker: unknown command %q\n\n%s", args[0], usage)
		return 2
	}
}

var usage = `Usage:
  demo-broker                 the local demo: several brokers on an embedded S3
  demo-broker demo [flags]    the same, with options (demo-broker demo --help);
                              "demo" may be left out: demo-broker --fast

The broker one deploys is nodeid-broker; its commands also run here:
` + broker.Usage("demo-broker")
