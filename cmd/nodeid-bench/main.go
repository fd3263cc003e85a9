// Command nodeid-bench measures nodeid's lease protocol on a real S3 server: how
// many S3 requests a fleet makes to get its node IDs, how long that takes, how
// fast a dead holder's ID is taken over, and what holding an ID costs. See
// docs/evidence/performance.md for the figures and the commands that produced them.
//
// Every scenario runs real nodeid Providers (real time, no fakes) against an
// embedded gofakes3 server (the default) or an S3 endpoint such as MinIO
// (--s3-endpoint), through an in-process proxy that adds a round-trip latency
// (--latency, default 20 ms) and counts every request by operation and outcome.
// The ids scenario instead runs real nodeid-broker serve processes and loads
// their /ids endpoint from in-process HTTP clients.
//
//	nodeid-bench herd      K tasks start at once on N IDs (spread, lowest-first, Zeebe-style baseline)
//	nodeid-bench rolling   N tasks holding every ID are replaced in batches, as an ECS deployment does
//	nodeid-bench join      one task joins 1024 IDs of which 1000 are held
//	nodeid-bench failover  a holder dies; how long until a waiting task holds its ID
//	nodeid-bench steady    S3 requests and cost per node per hour while holding
//	nodeid-bench ids       IDs per second through nodeid-broker serve's /ids, and its RSS
//	nodeid-bench outage    the store down for D seconds under real brokers: exits, IDs/s, time to serve again
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
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

const usage = `Usage: nodeid-bench COMMAND [flags]

Commands:
  herd       K tasks start at once on N IDs: requests and time-to-ID per acquire order
  rolling    N tasks holding every ID are replaced as an ECS deployment does it
  join       one task joins a bucket of N IDs with most of them held
  failover   a holder is cut off; time until a waiting task holds its ID
  steady     S3 requests per node per hour while holding, and the monthly cost
  ids        IDs per second through nodeid-broker serve's /ids?n=K, and its RSS
  outage     the store down for D seconds under N brokers: exits, IDs/s dip, time to serve again

Run "nodeid-bench COMMAND --help" for a command's flags. Every command takes
--json for machine-readable output, and runs against an embedded S3 (gofakes3)
unless --s3-endpoint names a server (MinIO).
`

// run dispatches a subcommand and returns the exit code: 0 when the scenario
// ran and its checks held, 1 when it failed, 2 on a usage error.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return 2
	}
	var cmd func(context.Context, []string, io.Writer, io.Writer) int
	switch args[0] {
	case "herd":
		cmd = runHerd
	case "rolling":
		cmd = runRolling
	case "join":
		cmd = runJoin
	case "failover":
		cmd = runFailover
	case "steady":
		cmd = runSteady
	case "ids":
		cmd = runIDs
	case "outage":
		cmd = runOutage
	case "-h", "-help", "--help", "help":
		fmt.Fprint(stdout, usage)
		return 0
	default:
		fmt.Fprintf(stderr, "nodeid-bench: unknown command %q\n\n%s", args[0], usage)
		return 2
	}
	return cmd(ctx, args[1:], stdout, stderr)
}
