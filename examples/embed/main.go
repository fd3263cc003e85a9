// Command embed is a Go service that embeds a nodeid node, as an outside user
// writes one: it leases a node ID from an S3 bucket, serves Snowflake IDs on
// its own HTTP API next to the node's (/ids, /status, /health, /ready,
// /metrics), and releases the ID on SIGTERM.
//
//	go run . -bucket my-bucket                 # AWS S3 (credentials from the environment)
//	go run . -embedded-s3                      # an in-process gofakes3, no cloud
//	curl localhost:8080/order                  # the service's own endpoint, using an ID
//
// Its exit codes are nodeid-broker's: 0 after SIGTERM (the ID released), 1
// when it cannot start (Start checks the store first, store.Check: a wrong
// bucket or endpoint ends the start at once, an endpoint that never answers
// after the store's request timeout of 5 s, each with a message that names it
// and says what to fix), 2 on a bad flag or configuration, 3 when it lost its
// lease (the orchestrator should replace the task).
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/nodeid/nodeid/node"
	"github.com/nodeid/nodeid/nodeid"
	"github.com/nodeid/nodeid/s3store"
	"github.com/nodeid/nodeid/s3store/s3fake"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	log := slog.New(slog.NewJSONHandler(os.Stderr, nil))
	err := run(ctx, os.Args[1:], log, nil)
	if err != nil {
		log.Error("exiting", "err", err)
	}
	os.Exit(exitCode(err))
}

// errUsage marks a bad flag or configuration.
var errUsage = errors.New("usage")

// exitCode maps run's error to nodeid-broker's exit codes
// (docs/nodeid-broker.md, "Exit codes"): a lost lease (3: the orchestrator
// replaces the task), a bad flag or configuration (2), a failed start (1: the
// store's check or probe failed, a wrong bucket, endpoint or permission, the
// cluster full: an operator's turn), a release (0).
func exitCode(err error) int {
	switch {
	case err == nil:
		return 0
	case errors.Is(err, nodeid.ErrLeaseLost):
		return 3
	case errors.Is(err, errUsage):
		return 2
	}
	return 1
}

// run serves until ctx ends or the lease is lost. listening, if set, receives
// the HTTP address once the server listens.
func run(ctx context.Context, args []string, log *slog.Logger, listening chan<- string) error {
	fs := flag.NewFlagSet("embed", flag.ContinueOnError)
	addr := fs.String("http-addr", ":8080", "HTTP address")
	bucket := fs.String("bucket", "", "S3 bucket of the lease objects")
	endpoint := fs.String("s3-endpoint", "", "base URL of an S3-compatible server (path-style); empty: AWS S3")
	embedded := fs.Bool("embedded-s3", false, "use an in-process gofakes3 instead of S3")
	if err := fs.Parse(args); err != nil {
		return fmt.Errorf("%w: %w", errUsage, err)
	}
	sc := s3store.DefaultConfig()
	sc.Bucket = *bucket
	if *endpoint != "" {
		sc.Endpoint, sc.UsePathStyle = *endpoint, true
	}
	if *embedded {
		srv, err := s3fake.Start(s3fake.Config{})
		if err != nil {
			return err
		}
		defer srv.Close()
		sc = srv.StoreConfig(s3store.DefaultPrefix)
	}
	store, err := s3store.New(ctx, sc) // no request yet; RequestTimeout 5 s bounds each, and Start's check
	if err != nil {
		return fmt.Errorf("%w: %w", errUsage, err)
	}

	cfg := node.DefaultConfig()
	cfg.Provider.TaskID = node.TaskID(ctx, log) // the ECS task ARN on ECS
	cfg.Logger = log
	n, err := node.New(store, cfg)
	if err != nil {
		return fmt.Errorf("%w: %w", errUsage, err)
	}
	mux := http.NewServeMux()
	mux.Handle("/", n.Handler()) // /ids, /status, /health, /ready, /metrics
	mux.HandleFunc("GET /order", func(w http.ResponseWriter, _ *http.Request) {
		id, err := n.Next() // fails while the node holds no valid lease
		if err != nil {
			http.Error(w, err.Error(), http.StatusServiceUnavailable)
			return
		}
		fmt.Fprintf(w, "order %s created\n", id)
	})
	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		return err
	}
	web := &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}
	go func() { _ = web.Serve(ln) }()
	defer web.Close()
	if listening != nil {
		listening <- ln.Addr().String()
	}
	// store.Check (fails the start, naming the endpoint, when the store
	// refuses it or does not answer it within its request timeout), the
	// probe, acquire, serve, release on SIGTERM (within cfg.ShutdownTimeout).
	return n.Run(ctx)
}
