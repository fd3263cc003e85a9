package broker

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/nodeid/nodeid/cmd/internal/envflag"
	"github.com/nodeid/nodeid/cmd/internal/etcdflag"
	"github.com/nodeid/nodeid/lease"
	"github.com/nodeid/nodeid/node"
	"github.com/nodeid/nodeid/nodeid"
)

// broker is one running serve (or run): flags turned into a node.Node,
// its HTTP server, and the embedded S3 when asked for.
type broker struct {
	cfg serveConfig
	log *slog.Logger // with the task ID
	raw *slog.Logger // without it, for the node (which adds it itself)

	child *child // run's command; nil for serve
}

func newBroker(cfg serveConfig, log *slog.Logger) *broker {
	return &broker{cfg: cfg, log: log.With("task", cfg.node.Provider.TaskID), raw: log}
}

// run serves HTTP at once (so /health answers 503 while the broker starts),
// opens the store, and runs the node until ctx ends (a signal: the node
// fences, releases and stops) or its lease is lost. The HTTP server keeps
// answering 503 until the node has stopped and for --drain-delay more.
func (b *broker) run(ctx context.Context) error {
	lns, err := b.listen()
	if err != nil {
		return err
	}
	closeAll := func() {
		for _, ln := range lns {
			_ = ln.Close()
		}
	}
	b.child.listening(lns[0].Addr())
	store, closeStore, again, err := b.openStore(ctx)
	if err != nil {
		closeAll()
		return err
	}
	defer closeStore() // last: other brokers may use an embedded S3 until now, this one too
	nc := b.cfg.node
	if nc.Provider.KeepAlive.Mode() == lease.KeepAliveRead && !nc.SkipProbe {
		second, closeSecond, err := again()
		if err != nil {
			closeAll()
			return err
		}
		defer closeSecond()
		nc.ReadProbeStore = second
	}
	recorded, closeHistory, err := b.cfg.history.wrap(store)
	if err != nil {
		closeAll()
		return err
	}
	defer func() {
		if err := closeHistory(); err != nil {
			b.log.Error("store history", "err", err)
		}
	}()
	nc.Logger = b.raw
	n, err := node.New(recorded, nc)
	if err != nil {
		closeAll()
		return envflag.Usagef("%v", err)
	}
	if b.cfg.store == etcdflag.StoreS3 {
		b.log.Info("lease store", "store", b.cfg.storeName(), "bucket", b.cfg.bucket, "prefix", b.cfg.prefix, "endpoint", b.cfg.s3Endpoint)
	} else {
		b.log.Info("lease store", "store", b.cfg.storeName(), "prefix", b.cfg.prefix)
	}
	b.logKeepAlive(n.Status().KeepAlive)
	if g := b.cfg.node.Gossip; g != nil && len(g.SecretKey) == 0 {
		b.log.Warn("gossip is not encrypted: set --gossip-key (from a secret) so that only this cluster's brokers are heard", "cluster", g.Cluster)
	}
	handlers := []http.Handler{n.Handler(), n.OpsHandler()} // --http-addr, then --ops-addr
	g, gctx := errgroup.WithContext(ctx)
	// The HTTP servers stop once the node has, also when that ends without
	// an error (run's child exiting 0 by itself), which would not cancel
	// gctx.
	httpCtx, nodeEnded := context.WithCancel(gctx)
	for i, ln := range lns {
		srv := &http.Server{Handler: handlers[i], ReadHeaderTimeout: 5 * time.Second}
		g.Go(func() error { return b.serveHTTP(httpCtx, srv, ln, n) })
	}
	g.Go(func() error { defer nodeEnded(); return b.runNode(gctx, n) })
	return g.Wait()
}

// logKeepAlive logs how the lease is kept alive, with the timings derived.
func (b *broker) logKeepAlive(ka node.KeepAliveStatus) {
	ms := func(v int64) string { return envflag.FormatDuration(time.Duration(v) * time.Millisecond) }
	if ka.Mode == string(nodeid.KeepAliveRead) {
		b.log.Info("keep-alive", "mode", ka.Mode, "window", ms(ka.WindowMs), "backstop", ms(ka.BackstopMs),
			"backstopInterval", ms(ka.BackstopIntervalMs), "pollInterval", ms(ka.PollIntervalMs))
		return
	}
	b.log.Info("keep-alive", "mode", ka.Mode, "lease", ms(ka.LeaseMs), "renewInterval", ms(ka.RenewIntervalMs))
}

// listen listens on --http-addr and, when set, --ops-addr (in that order).
func (b *broker) listen() ([]net.Listener, error) {
	var lns []net.Listener
	for _, l := range []struct{ flag, addr, msg string }{
		{"http-addr", b.cfg.httpAddr, "http listening"},
		{"ops-addr", b.cfg.opsAddr, "ops listening"},
	} {
		if l.addr == "" {
			continue
		}
		ln, err := net.Listen("tcp", l.addr)
		if err != nil {
			for _, ln := range lns {
				_ = ln.Close()
			}
			return nil, fmt.Errorf("listen on --%s %s: %w (is another process using the port?)", l.flag, l.addr, err)
		}
		b.log.Info(l.msg, "addr", ln.Addr().String())
		lns = append(lns, ln)
	}
	return lns, nil
}

// runNode runs the node until ctx ends or the lease is lost. Its Start
// checks the store first (lease.Check: a one-key listing of the prefix, or
// etcd's count of it, bounded by the store's request timeout), as library
// users get it.
func (b *broker) runNode(ctx context.Context, n *node.Node) error {
	var err error
	if b.child != nil {
		err = n.RunChild(ctx, b.child.cmd, b.child.cfg)
	} else {
		err = n.Run(ctx)
	}
	if ce := (*lease.ConditionIgnoredError)(nil); errors.As(err, &ce) {
		return fmt.Errorf("%s ignores %s: nodeid cannot run on it, two brokers could hold one node ID (%w)",
			b.storeWhere(), ce.Condition, err)
	}
	if err == nil && n.Claim() == nil {
		b.log.Info("stopped by a signal before a node ID was acquired")
	}
	return err
}

// serveHTTP serves srv on ln until ctx ends; then it keeps answering (503)
// until the node has stopped and for --drain-delay more, and shuts the
// server down.
func (b *broker) serveHTTP(ctx context.Context, srv *http.Server, ln net.Listener, n *node.Node) error {
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	select {
	case err := <-errc:
		return fmt.Errorf("http server: %w", err)
	case <-ctx.Done():
	}
	<-n.Done()
	if n.Claim() != nil && b.cfg.drainDelay > 0 {
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
