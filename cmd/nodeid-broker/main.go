// Command nodeid-broker is nodeid's broker, the process one deploys (an ECS
// sidecar container, a systemd service): "serve" leases a node ID from the
// store, renews it and serves Snowflake IDs over HTTP; "run" does the same
// and supervises a command that uses the ID; "healthcheck" is a container
// health check. See docs/nodeid-broker.md.
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"

	"github.com/nodeid/nodeid/cmd/internal/broker"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	code := broker.Main(ctx, "nodeid-broker", os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}
