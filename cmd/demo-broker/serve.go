package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/nodeid/nodeid/internal/metrics"
	"github.com/nodeid/nodeid/nodeid"
)

// Exit codes of demo-broker serve.
const (
	exitOK        = 0 // stopped by SIGTERM or SIGINT, the lease released (or none held yet)
	exitFailure   = 1 // start-up failed, or the release or the HTTP server failed
	exitUsage     = 2 // a bad flag or environment variable
	exitLeaseLost = 3 // the lease was lost: the broker fenced itself
)

// runServe is demo-broker serve: it parses the flags and the environment, runs
// one broker until a signal (ctx) or the loss of its lease, and returns the
// exit code.
func runServe(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	cfg, err := parseServeFlags(args, os.LookupEnv, stdout)
	switch {
	case errors.Is(err, flag.ErrHelp):
		return exitOK
	case err != nil:
		fmt.Fprintf(stderr, "demo-broker serve: %v\nRun 'demo-broker serve --help' for the flags and their variables.\n", err)
		return exitUsage
	}
	log := slog.New(slog.NewJSONHandler(stderr, &slog.HandlerOptions{Level: cfg.logLevel}))
	cfg.taskID = resolveTaskID(ctx, cfg.taskID, os.LookupEnv, log)
	b := newBroker(cfg, log)
	err = b.run(ctx)
	switch {
	case err == nil:
		b.log.Info("stopped")
		return exitOK
	case errors.Is(err, errUsage):
		b.log.Error("invalid configuration", "err", err)
		fmt.Fprintf(stderr, "demo-broker serve: %v\n", err)
		return exitUsage
	case errors.Is(err, nodeid.ErrLeaseLost):
		b.log.Error("exiting after losing the lease", "exitCode", exitLeaseLost, "err", err)
		return exitLeaseLost
	default:
		b.log.Error("exiting after a failure", "exitCode", exitFailure, "err", err)
		return exitFailure
	}
}

// run serves HTTP at once (so /health answers 503 while the broker starts),
// then starts the broker in an errgroup with the HTTP server, gossip and the
// claim watcher: the first to fail cancels the others. A signal (ctx) makes the
// broker fence, release and stop.
func (b *broker) run(ctx context.Context) error {
	ln, err := net.Listen("tcp", b.cfg.httpAddr)
	if err != nil {
		return fmt.Errorf("listen on --http-addr %s: %w (is another process using the port?)", b.cfg.httpAddr, err)
	}
	b.log.Info("http listening", "addr", ln.Addr().String())
	srv := &http.Server{Handler: b.routes(), ReadHeaderTimeout: 5 * time.Second}
	g, gctx := errgroup.WithContext(ctx)
	g.Go(func() error { return b.serveHTTP(gctx, srv, ln) })
	g.Go(func() error { return b.lifecycle(gctx, g.Go) })
	err = g.Wait()
	if b.s3srv != nil { // last: other brokers may use it until now, this one too
		_ = b.s3srv.Close()
	}
	if err != nil && ctx.Err() != nil && errors.Is(err, context.Canceled) && b.claim.Load() == nil {
		b.log.Info("stopped by a signal before a node ID was acquired")
		return nil
	}
	return err
}

// serveHTTP serves until ctx ends; then it keeps answering (503) until the
// claim is released and for --drain-delay more, and shuts the server down.
func (b *broker) serveHTTP(ctx context.Context, srv *http.Server, ln net.Listener) error {
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	select {
	case err := <-errc:
		return fmt.Errorf("http server: %w", err)
	case <-ctx.Done():
	}
	<-b.released
	if b.claim.Load() != nil && b.cfg.drainDelay > 0 {
		time.Sleep(b.cfg.drainDelay)
	}
	sctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	if err := srv.Shutdown(sctx); err != nil {
		_ = srv.Close()
	}
	<-errc
	return nil
}

// lifecycle acquires a node ID, serves it until ctx ends or the lease is lost,
// and then releases it (or not, when lost). spawn starts more goroutines in the
// errgroup.
func (b *broker) lifecycle(ctx context.Context, spawn func(func() error)) error {
	defer close(b.released)
	claim, err := b.acquire(ctx, spawn)
	if err != nil {
		return err
	}
	if err := b.activate(ctx, claim); err != nil {
		return errors.Join(err, b.stop(claim))
	}
	return b.watch(ctx, claim)
}

// watch refreshes the id file after each renewal and waits for the end: the
// claim lost, or ctx done (a signal, or another part failed), in which case
// it releases the claim. The id file is only ever written and removed here
// (after activate), so a refresh cannot bring back a removed file.
func (b *broker) watch(ctx context.Context, claim *nodeid.Claim) error {
	for {
		select {
		case <-b.renewed:
			if claim.Valid() && !b.stopping.Load() {
				b.refreshIDFile(claim)
			}
		case <-claim.Done():
			b.removeIDFile()
			err := claim.Err()
			b.log.Error("lease lost: stopped issuing IDs", "nodeId", claim.NodeID(), "version", claim.Version(), "err", err)
			return err
		case <-ctx.Done():
			b.log.Info("stopping: fencing and releasing the node ID", "nodeId", claim.NodeID(), "version", claim.Version())
			return b.stop(claim)
		}
	}
}

// stop fences the broker (health 503, no more IDs), removes the id file, gives
// the application --id-file-grace to stop using the ID, and releases the claim
// within --shutdown-timeout.
func (b *broker) stop(claim *nodeid.Claim) error {
	b.stopping.Store(true)
	if b.removeIDFile() && b.cfg.idFileGrace > 0 {
		time.Sleep(b.cfg.idFileGrace)
	}
	ctx, cancel := context.WithTimeout(context.Background(), b.cfg.shutdownTimeout)
	defer cancel()
	if err := claim.Close(ctx); err != nil {
		return fmt.Errorf("release: %w", err)
	}
	if err := claim.Err(); errors.Is(err, nodeid.ErrLeaseLost) {
		return err // lost before the release: nothing was ours to release
	}
	return nil
}

// removeIDFile removes --id-file, if set, and reports whether it is set.
func (b *broker) removeIDFile() bool {
	if b.cfg.idFile == "" {
		return false
	}
	b.idFileUp = false // for good: watch refreshes no more
	removed, err := removeIDFile(b.cfg.idFile)
	switch {
	case err != nil:
		b.log.Error("could not remove the id file: the application may keep using the node ID", "path", b.cfg.idFile, "err", err)
	case removed:
		b.log.Info("id file removed", "path", b.cfg.idFile)
	}
	return true
}

// newMetrics returns the broker's metrics, reporting its state.
func (b *broker) newMetrics() *metrics.Metrics {
	return metrics.New(func() string { s, _ := b.state(); return s })
}
