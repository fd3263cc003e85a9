package broker

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"

	"github.com/nodeid/nodeid/cmd/internal/envflag"
	"github.com/nodeid/nodeid/lease"
	"github.com/nodeid/nodeid/node"
	"github.com/nodeid/nodeid/nodeid"
)

// Exit codes of serve (and of run, but for the child's status).
const (
	exitOK        = 0 // stopped by SIGTERM or SIGINT, the lease released (or none held yet)
	exitFailure   = 1 // start-up failed, or the release or the HTTP server failed
	exitUsage     = 2 // a bad flag or environment variable
	exitLeaseLost = 3 // the lease was lost: the broker fenced itself
)

// logHandler writes cfg's log lines to w: JSON, or key=value with
// --log-format text.
func logHandler(w io.Writer, cfg *serveConfig) slog.Handler {
	opts := &slog.HandlerOptions{Level: cfg.logLevel}
	if cfg.logText {
		return slog.NewTextHandler(w, opts)
	}
	return slog.NewJSONHandler(w, opts)
}

// parsedBroker does what serve and run do once their flags are parsed (with
// err): it reports a usage error and returns its exit code and false, or it
// returns the logger, with the task identity filled in when none was given.
func parsedBroker(ctx context.Context, name string, cfg *serveConfig, err error, stderr io.Writer) (*slog.Logger, int, bool) {
	switch {
	case errors.Is(err, flag.ErrHelp):
		return nil, exitOK, false
	case err != nil:
		fmt.Fprintf(stderr, "%s: %v\nRun '%s --help' for the flags and their variables.\n", name, err, name)
		return nil, exitUsage, false
	}
	log := slog.New(logHandler(stderr, cfg))
	if cfg.node.Provider.TaskID == "" {
		cfg.node.Provider.TaskID = node.TaskID(ctx, log)
	}
	return log, 0, true
}

// runServe is the serve command of prog: it parses the flags and the environment, runs
// one broker until a signal (ctx) or the loss of its lease, and returns the
// exit code.
func runServe(ctx context.Context, prog string, args []string, stdout, stderr io.Writer) int {
	name := prog + " serve"
	cfg, err := parseServeFlags(prog, args, os.LookupEnv, stdout)
	log, code, ok := parsedBroker(ctx, name, &cfg, err, stderr)
	if !ok {
		return code
	}
	b := newBroker(cfg, log)
	return exitCode(b.log, b.run(ctx))
}

// exitCode maps the end of serve or run to the exit code, and logs why in
// one line: what an operator must fix (a bad configuration, a store that
// cannot be used), printed once.
func exitCode(log *slog.Logger, err error) int {
	var ce *node.ChildExitError
	switch {
	case err == nil:
		log.Info("stopped")
		return exitOK
	case errors.As(err, &ce):
		log.Info("exiting with the child's status after releasing the node ID", "exitCode", ce.ExitCode(), "child", ce.Error())
		return ce.ExitCode()
	case errors.Is(err, nodeid.ErrLeaseLost):
		log.Error("exiting after losing the lease", "exitCode", exitLeaseLost, "err", err)
		return exitLeaseLost
	case errors.Is(err, envflag.ErrUsage):
		log.Error("invalid configuration", "exitCode", exitUsage, "err", err)
		return exitUsage
	case errors.Is(err, lease.ErrConditionIgnored):
		log.Error("exiting: the store ignores a write condition", "exitCode", exitFailure, "err", err)
	default:
		log.Error("exiting after a failure", "exitCode", exitFailure, "err", err)
	}
	return exitFailure
}
