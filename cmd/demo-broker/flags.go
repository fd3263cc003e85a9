package main

import (
	"encoding/base64"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"strconv"
	"strings"
	"time"

	"github.com/nodeid/nodeid/gossip"
	"github.com/nodeid/nodeid/nodeid"
	"github.com/nodeid/nodeid/s3store"
	"github.com/nodeid/nodeid/s3store/s3fake"
)

// serveConfig is what the flags of demo-broker serve say, validated, with the
// derived defaults filled in.
type serveConfig struct {
	bucket, prefix, region, s3Endpoint string
	s3PathStyle                        bool
	embeddedS3                         string // address to serve an in-process S3 on; "" for none

	clusterSize                                               int
	leaseDuration, renewInterval, renewDeadline, safetyMargin time.Duration
	clockMargin, maxLeaseDuration, acquireTimeout             time.Duration
	order                                                     nodeid.Order

	taskID string // "" until resolved at start (ECS metadata, else host+pid+random)

	httpAddr     string
	gossipHost   string // "" when gossip is off
	gossipPort   int
	join         []string
	gossipKey    []byte
	readyTimeout time.Duration

	idFile      string
	idFileGrace time.Duration

	clockOffset     time.Duration
	logLevel        slog.Level
	shutdownTimeout time.Duration
	drainDelay      time.Duration
}

// gossipOn reports whether --gossip-addr enables gossip.
func (c *serveConfig) gossipOn() bool { return c.gossipHost != "" }

const serveHelp = `Usage: demo-broker serve [flags]

Runs one broker: leases a node ID from the S3 bucket, renews it, serves
Snowflake IDs over HTTP (GET /ids?n=K, /status, /health, /ready, /metrics),
and releases the ID on SIGTERM or SIGINT. Every flag may also be set by the
environment variable shown after it; the command line wins.

Exit codes: 0 stopped by a signal with the lease released; 1 start-up or
run-time failure (the message says what to fix); 2 a bad flag or variable;
3 the lease was lost (fenced: ECS should replace the task).

Flags:
`

// parseServeFlags parses the flags of serve, then the environment, and
// validates the result. Errors wrap errUsage and name the flag or variable;
// -h prints the help on stdout and returns flag.ErrHelp.
func parseServeFlags(args []string, lookupEnv func(string) (string, bool), stdout io.Writer) (serveConfig, error) {
	var (
		c                    serveConfig
		order, join, key     string
		gossipAddr, logLevel string
	)
	def := nodeid.DefaultConfig()
	f := newEnvFlags("demo-broker serve", lookupEnv)
	f.StringVar(&c.bucket, "bucket", "", "S3 bucket that holds the lease objects (required, except with --embedded-s3: default "+s3fake.DefaultBucket+")")
	f.StringVar(&c.prefix, "prefix", s3store.DefaultPrefix, "key prefix of the manifest and lease objects, used as given")
	f.StringVar(&c.region, "region", "", "AWS region of the bucket (default: AWS_REGION, which ECS sets, or the shared config; us-east-1 with --s3-endpoint)")
	f.StringVar(&c.s3Endpoint, "s3-endpoint", "", "base URL of an S3-compatible server (empty: AWS S3)")
	f.BoolVar(&c.s3PathStyle, "s3-path-style", false, "address the bucket in the URL path (MinIO, versitygw, gofakes3)")
	f.StringVar(&c.embeddedS3, "embedded-s3", "", "serve an in-process S3 (gofakes3, in memory) on this address, create the bucket and use it; other brokers may point --s3-endpoint at it (demos and tests only)")
	f.IntVar(&c.clusterSize, "cluster-size", def.ClusterSize, "number of node IDs, 1..1024, written into the cluster manifest by the first broker (afterwards the manifest's value wins)")
	f.DurationVar(&c.leaseDuration, "lease-duration", def.LeaseDuration, "lease duration: how long after its last renewal a vanished broker's ID stays taken")
	f.DurationVar(&c.renewInterval, "renew-interval", 0, "time between renewals (0: lease-duration/3)")
	f.DurationVar(&c.renewDeadline, "renew-deadline", 0, "how long after its last successful renewal the broker keeps retrying before it fences itself and exits 3 (0: the lesser of 2/3 of the lease and lease-duration - safety-margin)")
	f.DurationVar(&c.safetyMargin, "safety-margin", 0, "taken off the lease on this broker's monotonic clock: it stops issuing IDs this long before others may take its ID (0: the lesser of 1s and lease-duration/4)")
	f.DurationVar(&c.clockMargin, "clock-margin", def.ClockMargin, "extra margin when judging another broker's lease expired on the store's clock (the same for every broker and nodeidctl)")
	f.DurationVar(&c.maxLeaseDuration, "max-lease-duration", def.MaxLeaseDuration, "longest lease a record may state; a record stating more is reported corrupt and never taken (the same for every broker and nodeidctl)")
	f.DurationVar(&c.acquireTimeout, "acquire-timeout", def.AcquireTimeout, "how long to keep looking for a free node ID before exiting 1")
	f.StringVar(&order, "order", string(nodeid.OrderSpread), "order in which node IDs are tried: spread (from an offset derived from the task ID) or lowest-first (dense IDs)")
	f.StringVar(&c.taskID, "task-id", "", "this broker's identity in the lease it holds and in gossip (default: the ECS task ARN from $ECS_CONTAINER_METADATA_URI_V4, else host name, pid and random bytes)")
	f.StringVar(&c.httpAddr, "http-addr", ":8080", "address of the HTTP server (/ids, /status, /health, /ready, /metrics)")
	f.StringVar(&gossipAddr, "gossip-addr", "", "IP:port to gossip on (TCP and UDP), for example :7946 or 0.0.0.0:7946 (empty: no gossip; gossip is advisory)")
	f.StringVar(&join, "join", "", "comma-separated host:port list of gossip members to join at start (needs --gossip-addr)")
	f.StringVar(&key, "gossip-key", "", "base64 of a 16, 24 or 32-byte key that encrypts gossip (AES-GCM); every broker needs the same (empty: plain text)")
	f.DurationVar(&c.readyTimeout, "ready-timeout", 10*time.Second, "after taking over an expired lease, how long /ready waits for gossip peers to see the new version")
	f.StringVar(&c.idFile, "id-file", "", "write {\"nodeId\":..,\"version\":..} to this file (atomically) once the lease is held, and remove it the moment the broker fences: for sidecar use")
	f.DurationVar(&c.idFileGrace, "id-file-grace", time.Second, "with --id-file, on shutdown: time between removing the file and releasing the lease, for the application to stop using the ID")
	f.DurationVar(&c.clockOffset, "debug-clock-offset", 0, "testing only: shift this broker's wall clock (Snowflake timestamps and reservations) by this much, to simulate clock skew")
	f.StringVar(&logLevel, "log-level", "info", "log level: debug, info, warn or error (JSON lines on stderr)")
	f.DurationVar(&c.shutdownTimeout, "shutdown-timeout", 10*time.Second, "bound on the release after SIGTERM; keep the ECS stopTimeout above it plus id-file-grace and drain-delay")
	f.DurationVar(&c.drainDelay, "drain-delay", time.Second, "how long the HTTP server keeps answering (503) after the broker fenced, before it exits")

	if err := f.parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			fmt.Fprint(stdout, serveHelp)
			f.printDefaults(stdout)
		}
		return c, err
	}
	if err := c.logLevel.UnmarshalText([]byte(logLevel)); err != nil {
		return c, usagef("%s %q: want debug, info, warn or error", f.source("log-level"), logLevel)
	}
	c.order = nodeid.Order(order)
	if err := c.fill(f, gossipAddr, join, key); err != nil {
		return c, err
	}
	return c, nil
}

// fill checks the values and derives the defaults that depend on others.
func (c *serveConfig) fill(f *envFlags, gossipAddr, join, key string) error {
	src := f.source
	switch {
	case c.embeddedS3 != "" && c.s3Endpoint != "":
		return usagef("%s and %s exclude each other: a broker either serves the embedded S3 or uses another", src("embedded-s3"), src("s3-endpoint"))
	case c.bucket == "" && c.embeddedS3 == "":
		return usagef("--bucket (or %s) is required", envName("bucket"))
	case c.order != nodeid.OrderSpread && c.order != nodeid.OrderLowestFirst:
		return usagef("%s %q: want %q or %q", src("order"), c.order, nodeid.OrderSpread, nodeid.OrderLowestFirst)
	case c.clusterSize < 1 || c.clusterSize > 1<<nodeid.DefaultLayout.NodeBits:
		return usagef("%s %d: want 1..%d (%d node bits)", src("cluster-size"), c.clusterSize, 1<<nodeid.DefaultLayout.NodeBits, nodeid.DefaultLayout.NodeBits)
	case c.leaseDuration < time.Second:
		return usagef("%s %v: want at least 1s", src("lease-duration"), c.leaseDuration)
	case c.leaseDuration > c.maxLeaseDuration:
		return usagef("%s %v is above %s %v", src("lease-duration"), c.leaseDuration, src("max-lease-duration"), c.maxLeaseDuration)
	case c.renewInterval < 0 || c.renewDeadline < 0 || c.safetyMargin < 0 || c.clockMargin < 0:
		return usagef("--renew-interval, --renew-deadline, --safety-margin and --clock-margin must not be negative")
	case c.acquireTimeout < 0 || c.readyTimeout < 0 || c.idFileGrace < 0 || c.drainDelay < 0:
		return usagef("--acquire-timeout, --ready-timeout, --id-file-grace and --drain-delay must not be negative")
	case c.shutdownTimeout <= 0:
		return usagef("%s %v: want a positive duration", src("shutdown-timeout"), c.shutdownTimeout)
	}
	if c.embeddedS3 != "" {
		if c.bucket == "" {
			c.bucket = s3fake.DefaultBucket
		}
		if _, _, err := net.SplitHostPort(c.embeddedS3); err != nil {
			return usagef("%s %q is not host:port: %v", src("embedded-s3"), c.embeddedS3, err)
		}
	}
	if c.safetyMargin == 0 {
		c.safetyMargin = min(time.Second, c.leaseDuration/4)
	}
	if c.renewInterval == 0 {
		c.renewInterval = c.leaseDuration / 3
	}
	if c.renewDeadline == 0 {
		c.renewDeadline = min(c.leaseDuration*2/3, c.leaseDuration-c.safetyMargin)
	}
	switch {
	case c.safetyMargin >= c.leaseDuration:
		return usagef("%s %v must be below --lease-duration %v", src("safety-margin"), c.safetyMargin, c.leaseDuration)
	case c.renewInterval >= c.renewDeadline:
		return usagef("%s %v must be below --renew-deadline %v", src("renew-interval"), c.renewInterval, c.renewDeadline)
	case c.renewDeadline > c.leaseDuration-c.safetyMargin:
		return usagef("%s %v must be at most --lease-duration - --safety-margin (%v)", src("renew-deadline"), c.renewDeadline, c.leaseDuration-c.safetyMargin)
	}
	if _, _, err := net.SplitHostPort(c.httpAddr); err != nil {
		return usagef("%s %q is not host:port: %v", src("http-addr"), c.httpAddr, err)
	}
	if err := c.fillGossip(f, gossipAddr, join, key); err != nil {
		return err
	}
	sc := s3store.DefaultConfig()
	sc.Bucket, sc.Prefix, sc.Region, sc.Endpoint = c.bucket, c.prefix, c.region, c.s3Endpoint
	if err := sc.Validate(); err != nil {
		return usagef("%v (flags --bucket, --prefix, --region, --s3-endpoint)", err)
	}
	if c.taskID != "" && len(c.taskID) > gossip.MaxNameLen {
		return usagef("%s is %d bytes: want at most %d", src("task-id"), len(c.taskID), gossip.MaxNameLen)
	}
	return nil
}

// fillGossip checks --gossip-addr, --join and --gossip-key.
func (c *serveConfig) fillGossip(f *envFlags, addr, join, key string) error {
	src := f.source
	if addr != "" {
		host, port, err := net.SplitHostPort(addr)
		if err != nil {
			return usagef("%s %q is not IP:port: %v", src("gossip-addr"), addr, err)
		}
		if host == "" {
			host = "0.0.0.0"
		}
		if net.ParseIP(host) == nil {
			return usagef("%s %q: the host must be an IP address (or empty for all interfaces)", src("gossip-addr"), addr)
		}
		p, err := strconv.Atoi(port)
		if err != nil || p < 0 || p > 65535 {
			return usagef("%s %q: the port must be 0..65535", src("gossip-addr"), addr)
		}
		c.gossipHost, c.gossipPort = host, p
	}
	for _, j := range strings.Split(join, ",") {
		if j = strings.TrimSpace(j); j != "" {
			c.join = append(c.join, j)
		}
	}
	if len(c.join) > 0 && !c.gossipOn() {
		return usagef("%s needs --gossip-addr (gossip is off without it)", src("join"))
	}
	if key != "" {
		b, err := base64.StdEncoding.DecodeString(key)
		if err != nil {
			return usagef("%s is not base64: %v", src("gossip-key"), err)
		}
		if n := len(b); n != 16 && n != 24 && n != 32 {
			return usagef("%s is %d bytes once decoded: want 16, 24 or 32", src("gossip-key"), n)
		}
		c.gossipKey = b
	}
	return nil
}
