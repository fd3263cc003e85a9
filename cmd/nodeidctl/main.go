// Command nodeidctl operates a nodeid lease bucket: status, init, release,
// repair and resize. See docs/nodeidctl.md, or run nodeidctl --help.
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"

	"github.com/nodeid/nodeid/cmd/nodeidctl/internal/ctl"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := ctl.Run(ctx, os.Args[1:], os.Stdout, os.Stderr, ctl.DefaultEnv())
	stop()
	os.Exit(code)
}
