package broker

import (
	"encoding/base64"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"net"
	"strconv"
	"strings"
	"time"

	"github.com/nodeid/nodeid/cmd/internal/azblobflag"
	"github.com/nodeid/nodeid/cmd/internal/envflag"
	"github.com/nodeid/nodeid/cmd/internal/etcdflag"
	"github.com/nodeid/nodeid/cmd/internal/gcsflag"
	"github.com/nodeid/nodeid/cmd/internal/k8sflag"
	"github.com/nodeid/nodeid/gossip"
	"github.com/nodeid/nodeid/node"
	"github.com/nodeid/nodeid/nodeid"
	"github.com/nodeid/nodeid/s3store"
	"github.com/nodeid/nodeid/s3store/s3fake"
)

// serveConfig is what the flags of serve say, validated.
type serveConfig struct {
	// node is the node's configuration, checked by node.Config.Validate;
	// New validates it again once the task ID and the loggers are set.
	node node.Config

	bucket, prefix, region, s3Endpoint string
	gossipCluster                      string // --gossip-cluster; "" derives it from the store
	gossipTimings                      string // --gossip-timings: auto, lan or local
	s3PathStyle                        bool
	embeddedS3                         string // address to serve an in-process S3 on; "" for none
	store                              string // --store: s3, etcd, azblob or gcs
	etcd                               etcdflag.Flags
	azblob                             azblobflag.Flags
	gcs                                gcsflag.Flags
	k8s                                k8sflag.Flags
	ownVars                            []string // the NODEID_ variables of the flags: kept from run's child

	httpAddr   string
	opsAddr    string       // "" for none
	gossipAddr string       // "" when gossip is off
	clock      debugClock   // --debug-clock-*
	history    debugHistory // --debug-store-history
	logLevel   slog.Level
	logText    bool // --log-format text
	drainDelay time.Duration
}

// gossipOn reports whether --gossip-addr enables gossip.
func (c *serveConfig) gossipOn() bool { return c.node.Gossip != nil }

const serveHelp = `Usage: {prog} serve [flags]

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
// validates the result. Errors wrap envflag.ErrUsage and name the flag or
// variable; -h prints the help on stdout and returns flag.ErrHelp.
func parseServeFlags(prog string, args []string, lookupEnv func(string) (string, bool), stdout io.Writer) (serveConfig, error) {
	return parseBrokerFlags(prog+" serve", helpText(serveHelp, prog), args, lookupEnv, stdout, nil)
}

// parseBrokerFlags parses the flags of serve for command name (serve, run),
// with more flags defined by extra (nil: none); help heads -h's output.
func parseBrokerFlags(name, help string, args []string, lookupEnv func(string) (string, bool), stdout io.Writer, extra func(*envflag.Set)) (serveConfig, error) {
	var (
		c                                        serveConfig
		order, join, key                         string
		logLevel                                 string
		logFormat                                string
		readyTimeout, grace, maxLease, lossGrace time.Duration
		ka                                       keepAliveFlags
	)
	c.node = node.DefaultConfig()
	pc := &c.node.Provider
	pc.TaskID = "" // resolved at start (ECS metadata, else host+pid+random)
	f := envflag.New(name, lookupEnv)
	f.BindAll()
	f.StringVar(&c.store, "store", etcdflag.StoreS3, "lease store: s3 (a bucket: --bucket, --s3-*), etcd (--etcd-endpoints, --etcd-*), azblob (Azure Blob Storage: --azblob-*) gcs (Google Cloud Storage: --gcs-*) or k8s (Kubernetes Leases: --k8s-*, --kubeconfig)")
	c.etcd.Bind(f)
	c.azblob.Bind(f)
	c.gcs.Bind(f)
	c.k8s.Bind(f)
	f.StringVar(&c.bucket, "bucket", "", "S3 bucket that holds the lease objects (required, except with --embedded-s3: default "+s3fake.DefaultBucket+")")
	f.StringVar(&c.prefix, "prefix", s3store.DefaultPrefix, "key prefix of the manifest and lease objects: ends with \"/\", or empty for the root of the bucket")
	f.StringVar(&c.region, "region", "", "AWS region of the bucket (default: AWS_REGION, which ECS sets, or the shared config; us-east-1 with --s3-endpoint)")
	f.StringVar(&c.s3Endpoint, "s3-endpoint", "", "base URL of an S3-compatible server (empty: AWS S3)")
	f.BoolVar(&c.s3PathStyle, "s3-path-style", false, "address the bucket in the URL path (MinIO, versitygw, gofakes3)")
	f.StringVar(&c.embeddedS3, "embedded-s3", "", "serve an in-process S3 (gofakes3, in memory) on this address, create the bucket and use it; other brokers may point --s3-endpoint at it (demos and tests only)")
	f.IntVar(&pc.ClusterSize, "cluster-size", pc.ClusterSize, "number of node IDs, 1..1024, written into the cluster manifest by the first broker (afterwards the manifest's value wins)")
	f.IntVar(&pc.FirstNodeID, "first-node-id", 0, "the cluster's lowest node ID: it owns first-node-id..first-node-id+cluster-size-1; give clusters in other regions or buckets ranges that do not overlap, so that their IDs never collide (written into the manifest by the first broker; a broker with another is refused)")
	f.DurationVar(&pc.LeaseDuration, "lease-duration", pc.LeaseDuration, "lease duration: how long after its last renewal a vanished broker's ID stays taken (write mode; with --keepalive read the lease is --backstop)")
	f.DurationVar(&pc.RenewInterval, "renew-interval", 0, "time between renewals (0: lease-duration/3) (write mode; with --keepalive read see --backstop-interval)")
	f.DurationVar(&pc.RenewDeadline, "renew-deadline", 0, "how long after its last successful renewal the broker keeps retrying before it fences itself (and enters jeopardy, see --loss-grace) (0: the lesser of 2/3 of the lease and lease-duration - safety-margin)")
	f.DurationVar(&pc.SafetyMargin, "safety-margin", 0, "taken off the lease on this broker's monotonic clock: it stops issuing IDs this long before others may take its ID (0: the lesser of 1s and lease-duration/4)")
	f.DurationVar(&lossGrace, "loss-grace", 0, "when renewals give up with no sign of another writer, how long the broker stays in jeopardy (/health 503, no IDs) renewing on its last write before it exits 3; a renewal that lands recovers the lease (/health 200, the same version). Keep it below what the orchestrator waits on a failing health check (ECS: retries x interval) (default: --lease-duration; 0: none, the first fence is final)")
	ka.bind(f)
	f.DurationVar(&pc.ClockMargin, "clock-margin", pc.ClockMargin, "extra margin when judging another broker's lease expired on the store's clock (the same for every broker and nodeidctl)")
	f.DurationVar(&maxLease, "max-lease-duration", pc.MaxLeaseDuration, "longest lease a record may state; a record stating more is reported corrupt and never taken (the same for every broker and nodeidctl)")
	f.DurationVar(&pc.AcquireTimeout, "acquire-timeout", pc.AcquireTimeout, "how long to keep looking for a free node ID before exiting 1")
	f.StringVar(&order, "order", string(nodeid.OrderSpread), "order in which node IDs are tried: spread (from an offset derived from the task ID) or lowest-first (dense IDs)")
	f.StringVar(&pc.TaskID, "task-id", "", "this broker's identity in the lease it holds and in gossip (default: the ECS task ARN from $ECS_CONTAINER_METADATA_URI_V4, else host name, pid and random bytes)")
	f.StringVar(&c.httpAddr, "http-addr", ":8080", "address of the HTTP server (/ids, /status, /health, /ready, /metrics); 127.0.0.1:8080 keeps /ids to the application on this host")
	f.StringVar(&c.opsAddr, "ops-addr", "", "address of a second HTTP server with the operator endpoints only (/status, /leader, /health, /ready, /metrics; no /ids): the port to publish for Prometheus and a load balancer's health check (/ready) (empty: none)")
	f.StringVar(&c.gossipAddr, "gossip-addr", "", "IP:port to gossip on (TCP and UDP), for example :7946 or 0.0.0.0:7946 (empty: no gossip; gossip is advisory)")
	f.StringVar(&join, "join", "", "comma-separated host:port list of gossip members to join at start (needs --gossip-addr)")
	f.StringVar(&c.gossipCluster, "gossip-cluster", "", "the cluster's identity in gossip: members with another are never heard, or reported and ignored (default: the store and prefix, s3://BUCKET/PREFIX, etcd://ENDPOINTS/PREFIX, azblob://ACCOUNT-URL/CONTAINER/PREFIX or gs://BUCKET/PREFIX)")
	f.StringVar(&c.gossipTimings, "gossip-timings", gossipTimingsAuto, "gossip's timings: lan (memberlist's LAN timings: 1s probes, reconnect to lost members every 30s), local (its local ones, for brokers on one host or a test network: 200ms probe timeout, reconnect every 2s) or auto (local on a loopback --gossip-addr, else lan)")
	f.StringVar(&key, "gossip-key", "", "base64 of a 16, 24 or 32-byte key that encrypts gossip (AES-GCM); every broker needs the same (empty: plain text)")
	f.DurationVar(&c.node.MaxIssueStall, "max-issue-stall", 0, "how long the generator may fail to issue IDs (a clock behind the floor, a reservation no renewal raises) before health fails and the task is replaced (0: the lesser of 30s and 2 x lease-duration)")
	f.DurationVar(&readyTimeout, "ready-timeout", c.node.ReadyTimeout, "after taking over an expired lease, how long /ready waits for gossip peers to see the new version")
	f.StringVar(&c.node.IDFile, "id-file", "", "write {\"nodeId\":..,\"version\":..,\"floorMs\":..,\"validUntilMs\":..} to this file (atomically) once the lease is held, rewrite it every id-file-horizon/4 and after every renewal, and remove it the moment the broker fences: for sidecar use")
	f.DurationVar(&c.node.IDFileHorizon, "id-file-horizon", c.node.IDFileHorizon, "with --id-file: how far past the host's clock each write lets the application issue IDs (validUntilMs at most now + this): how long it goes on after the broker crashed, and what a release covers; a duration such as 3s, at least 2s")
	f.DurationVar(&grace, "id-file-grace", c.node.IDFileGrace, "with --id-file, on shutdown: time between removing the file and releasing the lease, for the application to stop using the ID; above its re-read period (1s) with slack, and at least id-file-horizon or a successor waits for the rest")
	f.StringVar(&c.node.Elect, "elect", "", "campaign for the leadership of this election name beside the node ID; GET /leader says who leads (empty: none)")
	f.StringVar(&c.node.ElectValue, "elect-value", "", "with --elect: a value published with the leadership, for example this broker's URL; GET /leader and nodeidctl leaders show the leader's (at most 4096 bytes; empty: none)")
	c.clock.bind(f)
	c.history.bind(f)
	f.BoolVar(&c.node.SkipProbe, "skip-store-probe", false, "do not check at start-up that the store honours If-None-Match: * and If-Match, also for a replaced ETag and two concurrent updates (it costs six requests on one object, probe.json under the prefix); only for a store known to honour both")
	f.StringVar(&logLevel, "log-level", "info", "log level: debug, info, warn or error")
	f.StringVar(&logFormat, "log-format", "json", "log lines on stderr: json (one JSON object a line, for CloudWatch, Cloud Logging and log shippers) or text (key=value, for a terminal)")
	f.DurationVar(&c.node.ShutdownTimeout, "shutdown-timeout", c.node.ShutdownTimeout, "bound on the release after SIGTERM; keep the ECS stopTimeout above it plus id-file-grace and drain-delay")
	f.DurationVar(&c.drainDelay, "drain-delay", time.Second, "how long the HTTP server keeps answering (503) after the broker fenced, before it exits")
	if extra != nil {
		extra(f)
	}

	if err := f.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			fmt.Fprint(stdout, help)
			f.PrintDefaultsTo(stdout)
		}
		return c, err
	}
	c.ownVars = f.Vars()
	if err := c.logLevel.UnmarshalText([]byte(logLevel)); err != nil {
		return c, envflag.Usagef("%s %q: want debug, info, warn or error", f.Source("log-level"), logLevel)
	}
	switch logFormat {
	case "json", "text":
		c.logText = logFormat == "text"
	default:
		return c, envflag.Usagef("%s %q: want json or text", f.Source("log-format"), logFormat)
	}
	pc.Order, pc.MaxLeaseDuration = nodeid.Order(order), maxLease
	if err := ka.apply(f, pc); err != nil {
		return c, err
	}
	switch {
	case lossGrace < 0:
		return c, envflag.Usagef("%s %s is negative (0 turns jeopardy off)", f.Source("loss-grace"), envflag.FormatDuration(lossGrace))
	case f.IsSet("loss-grace") && lossGrace == 0:
		pc.LossGrace = nodeid.NoLossGrace
	default:
		pc.LossGrace = lossGrace // 0: a lease
	}
	c.node.ReadyTimeout, c.node.IDFileGrace = readyTimeout, grace
	if err := c.clock.apply(&c.node, f.Source); err != nil {
		return c, err
	}
	if err := c.fill(f, join, key); err != nil {
		return c, err
	}
	return c, nil
}

// fieldFlags maps the fields of node.Config (and nodeid.Config, its
// Provider) to the flags that set them: node.Config.Validate's errors name
// fields, the user typed flags.
var fieldFlags = map[string]string{
	"ClusterSize": "cluster-size", "FirstNodeID": "first-node-id", "LeaseDuration": "lease-duration", "RenewInterval": "renew-interval",
	"RenewDeadline": "renew-deadline", "SafetyMargin": "safety-margin", "ClockMargin": "clock-margin",
	"MaxLeaseDuration": "max-lease-duration", "AcquireTimeout": "acquire-timeout", "Order": "order",
	"TaskID": "task-id", "Node.IDFileGrace": "id-file-grace", "Node.IDFileHorizon": "id-file-horizon", "Node.ReadyTimeout": "ready-timeout", "Node.ShutdownTimeout": "shutdown-timeout",
	"Node.MaxIssueStall": "max-issue-stall", "LossGrace": "loss-grace",
	"KeepAlive": "keepalive", "Window": "window", "Backstop": "backstop", "PollInterval": "poll-interval",
}

// readFieldFlags is fieldFlags in read mode: the lease is the backstop, and
// the renewals are its backstop writes.
var readFieldFlags = func() map[string]string {
	m := maps.Clone(fieldFlags)
	m["LeaseDuration"], m["RenewInterval"] = "backstop", "backstop-interval"
	return m
}()

// fieldFlagNames and readFieldFlagNames rewrite the field names in a reason
// into flag names, in write and in read mode.
var fieldFlagNames, readFieldFlagNames = flagNamer(fieldFlags), flagNamer(readFieldFlags)

func flagNamer(flags map[string]string) *strings.Replacer {
	pairs := []string{"LeaseDuration - SafetyMargin", "--" + flags["LeaseDuration"] + " minus --safety-margin",
		"Window - SafetyMargin", "--window minus --safety-margin", "StoreTimeout", "the store timeout"}
	for field, fl := range flags {
		pairs = append(pairs, strings.TrimPrefix(field, "Node."), "--"+fl)
	}
	return strings.NewReplacer(pairs...)
}

// keepAliveFlags are what --keepalive and read mode's flags say.
type keepAliveFlags struct {
	mode                             string
	window, backstop, interval, poll time.Duration
}

// readOnlyFlags are the flags of read mode alone.
var readOnlyFlags = []string{"window", "backstop", "backstop-interval", "poll-interval"}

// writeOnlyFlags are the flags of write mode alone, with what stands for
// each in read mode.
var writeOnlyFlags = []struct{ flag, read string }{
	{"lease-duration", "the lease every record states is --backstop"},
	{"renew-interval", "the time between writes is --backstop-interval"},
}

func (k *keepAliveFlags) bind(f *envflag.Set) {
	f.StringVar(&k.mode, "keepalive", string(nodeid.KeepAliveWrite), "how the lease is kept alive, the cluster manifest's (the first broker writes its own; a broker configured otherwise is refused, exit 1): write (a conditional write every --renew-interval) or read (a conditional read of the lease object every --poll-interval and a backstop write every --backstop-interval: far fewer PUTs; the store must pass a read probe at start; docs/evidence/design.md section 11)")
	f.DurationVar(&k.window, "window", nodeid.DefaultWindow, "with --keepalive read: the window W, how long after its send a read that shows the lease unchanged (or a write) keeps the broker issuing IDs, less --safety-margin; the manifest's, as for nodeidctl init")
	f.DurationVar(&k.backstop, "backstop", nodeid.DefaultBackstop, "with --keepalive read: the backstop B, the lease every record states (in place of --lease-duration): a vanished broker's ID stays taken this long after its last write; the manifest's, as for nodeidctl init")
	f.DurationVar(&k.interval, "backstop-interval", 0, "with --keepalive read: time between backstop writes, in place of --renew-interval (0: backstop/3)")
	f.DurationVar(&k.poll, "poll-interval", 0, "with --keepalive read: time between two conditional reads of the lease object (0: the lesser of window/2 and 3/4 of window - safety-margin - the store timeout)")
}

// apply checks that only the flags of the mode asked for are given, and
// sets the provider's keep-alive from them; the provider's configuration
// checks the timings.
func (k *keepAliveFlags) apply(f *envflag.Set, pc *nodeid.Config) error {
	given := func(names ...string) []string {
		var set []string
		for _, n := range names {
			if f.IsSet(n) {
				set = append(set, f.Source(n))
			}
		}
		return set
	}
	switch nodeid.KeepAlive(k.mode) {
	case nodeid.KeepAliveWrite:
		if set := given(readOnlyFlags...); len(set) > 0 {
			verb := "is"
			if len(set) > 1 {
				verb = "are"
			}
			return envflag.Usagef("%s %s for --keepalive read only", joinAnd(set), verb)
		}
		return nil
	case nodeid.KeepAliveRead:
	default:
		return envflag.Usagef("%s %q is not write or read", f.Source("keepalive"), k.mode)
	}
	for _, w := range writeOnlyFlags {
		if f.IsSet(w.flag) {
			return envflag.Usagef("%s is for --keepalive write only: in read mode %s", f.Source(w.flag), w.read)
		}
	}
	pc.KeepAlive, pc.Window, pc.Backstop = nodeid.KeepAliveRead, k.window, k.backstop
	pc.RenewInterval, pc.PollInterval = k.interval, k.poll
	return nil
}

// joinAnd joins "a", "a and b", "a, b and c".
func joinAnd(s []string) string {
	if len(s) <= 1 {
		return strings.Join(s, "")
	}
	return strings.Join(s[:len(s)-1], ", ") + " and " + s[len(s)-1]
}

// fill checks the values the node's configuration does not cover, builds the
// gossip configuration, and validates the whole as node.New will.
func (c *serveConfig) fill(f *envflag.Set, join, key string) error {
	src := f.Source
	if err := c.checkStoreFlags(f); err != nil {
		return err
	}
	switch {
	case c.embeddedS3 != "" && c.s3Endpoint != "":
		return envflag.Usagef("%s and %s exclude each other: a broker either serves the embedded S3 or uses another", src("embedded-s3"), src("s3-endpoint"))
	case c.bucket == "" && c.embeddedS3 == "" && c.store == etcdflag.StoreS3:
		return envflag.Usagef("--bucket (or %s) is required", envflag.Name("bucket"))
	case c.drainDelay < 0:
		return envflag.Usagef("%s %v must not be negative", src("drain-delay"), c.drainDelay)
	case c.node.ShutdownTimeout <= 0:
		return envflag.Usagef("%s %v: want a positive duration", src("shutdown-timeout"), c.node.ShutdownTimeout)
	}
	if c.embeddedS3 != "" {
		if c.bucket == "" {
			c.bucket = s3fake.DefaultBucket
		}
		if _, _, err := net.SplitHostPort(c.embeddedS3); err != nil {
			return envflag.Usagef("%s %q is not host:port: %v", src("embedded-s3"), c.embeddedS3, err)
		}
	}
	if _, _, err := net.SplitHostPort(c.httpAddr); err != nil {
		return envflag.Usagef("%s %q is not host:port: %v", src("http-addr"), c.httpAddr, err)
	}
	if _, _, err := net.SplitHostPort(c.opsAddr); c.opsAddr != "" && err != nil {
		return envflag.Usagef("%s %q is not host:port: %v", src("ops-addr"), c.opsAddr, err)
	}
	if err := c.fillGossip(f, join, key); err != nil {
		return err
	}
	sc := s3store.DefaultConfig()
	sc.Bucket, sc.Prefix, sc.Region, sc.Endpoint = c.bucket, c.prefix, c.region, c.s3Endpoint
	if err := sc.Validate(); err != nil && c.store == etcdflag.StoreS3 {
		return etcdflag.S3ConfigError(err, src)
	}
	check := c.node // validated as a copy: New fills in the task ID and the loggers first
	if check.Provider.TaskID == "" {
		check.Provider.TaskID = "task"
	}
	return flagErrors(check.Validate(), f, check.Provider.KeepAlive == nodeid.KeepAliveRead)
}

// timingFlags are the flags the lease's derived timings come from: a rule
// broken by a derived value names those the user set; readTimingFlags the
// same in read mode.
var (
	timingFlags     = []string{"lease-duration", "safety-margin", "renew-interval", "renew-deadline"}
	readTimingFlags = []string{"window", "backstop", "safety-margin", "backstop-interval", "renew-deadline", "poll-interval"}
)

// flagErrors turns the errors of node.Config.Validate into one usage error
// that names the flags (or variables) at fault, each once, with durations
// as people write them. An error on a value the user set comes first; those
// on values derived from it (a timing left to its default, a field no flag
// sets, such as StoreTimeout) follow from it and are left out. When only
// derived values break a rule, the first is reported with the flags set
// that it was derived from. In read mode (read) the lease is --backstop and
// the renewals its --backstop-interval.
func flagErrors(err error, f *envflag.Set, read bool) error {
	if err == nil {
		return nil
	}
	fields, namer, timings := fieldFlags, fieldFlagNames, timingFlags
	if read {
		fields, namer, timings = readFieldFlags, readFieldFlagNames, readTimingFlags
	}
	var set, derived []string
	seen := map[string]bool{}
	for _, fe := range nodeid.FieldErrors(err) {
		if seen[fe.Field] {
			continue
		}
		seen[fe.Field] = true
		reason := envflag.HumanDurations(namer.Replace(fe.Reason))
		switch fl, ok := fields[fe.Field]; {
		case ok && f.IsSet(fl):
			set = append(set, f.Source(fl)+" "+reason)
		case ok:
			derived = append(derived, "the default --"+fl+" "+reason)
		default:
			derived = append(derived, "the derived "+fe.Field+" "+reason)
		}
	}
	switch {
	case len(set) > 0:
		return envflag.Usagef("%s", strings.Join(set, "; "))
	case len(derived) == 0:
		return envflag.Usagef("%s", envflag.HumanDurations(err.Error()))
	}
	var from []string
	for _, fl := range timings {
		if f.IsSet(fl) {
			from = append(from, f.Source(fl)+" "+envflag.HumanDurations(f.Lookup(fl).Value.String()))
		}
	}
	if len(from) == 0 {
		return envflag.Usagef("%s", derived[0])
	}
	return envflag.Usagef("%s, given %s: set the timings left to their defaults, or change those", derived[0], strings.Join(from, " and "))
}

// Read mode's failure detection (readModeDetection).
const (
	readProbeInterval = 500 * time.Millisecond
	readProbeTimeout  = 250 * time.Millisecond
	readSuspicionMult = 2
)

// readModeDetection sets gossip's failure detection for read mode, where its
// verdict decides how soon a waiting broker challenges a crashed holder: a
// probe every 500 ms (timeout at most 250 ms) and a suspicion of two probe
// intervals, about 2-3 s from a crash to the verdict where memberlist's LAN
// timings take 5-7 s. A live holder judged dead while stalled answers the
// challenge with one PUT.
func readModeDetection(gc *gossip.Config) {
	gc.ProbeInterval = readProbeInterval
	gc.ProbeTimeout = min(gc.ProbeTimeout, readProbeTimeout)
	gc.SuspicionMult = readSuspicionMult
}

// The values of --gossip-timings.
const (
	gossipTimingsAuto  = "auto"  // local on a loopback address, else lan
	gossipTimingsLAN   = "lan"   // gossip.DefaultConfig: memberlist's LAN timings
	gossipTimingsLocal = "local" // gossip.DefaultLocalConfig: its local ones
)

// fillGossip checks --gossip-addr, --join, --gossip-timings and --gossip-key
// and builds the gossip configuration: memberlist's LAN timings, or its local
// ones (--gossip-timings local, or auto on a loopback address).
func (c *serveConfig) fillGossip(f *envflag.Set, join, key string) error {
	src := f.Source
	switch c.gossipTimings {
	case gossipTimingsAuto, gossipTimingsLAN, gossipTimingsLocal:
	default:
		return envflag.Usagef("%s %q: want auto, lan or local", src("gossip-timings"), c.gossipTimings)
	}
	var secret []byte
	if key != "" {
		b, err := base64.StdEncoding.DecodeString(key)
		if err != nil {
			return envflag.Usagef("%s is not base64: %v", src("gossip-key"), err)
		}
		if n := len(b); n != 16 && n != 24 && n != 32 {
			return envflag.Usagef("%s is %d bytes once decoded: want 16, 24 or 32", src("gossip-key"), n)
		}
		secret = b
	}
	var joins []string
	for _, j := range strings.Split(join, ",") {
		if j = strings.TrimSpace(j); j != "" {
			joins = append(joins, j)
		}
	}
	if c.gossipAddr == "" {
		if len(joins) > 0 {
			return envflag.Usagef("%s needs --gossip-addr (gossip is off without it)", src("join"))
		}
		return nil
	}
	host, port, err := net.SplitHostPort(c.gossipAddr)
	if err != nil {
		return envflag.Usagef("%s %q is not IP:port: %v", src("gossip-addr"), c.gossipAddr, err)
	}
	if host == "" {
		host = "0.0.0.0"
	}
	ip := net.ParseIP(host)
	if ip == nil {
		return envflag.Usagef("%s %q: the host must be an IP address (or empty for all interfaces)", src("gossip-addr"), c.gossipAddr)
	}
	p, err := strconv.Atoi(port)
	if err != nil || p < 0 || p > 65535 {
		return envflag.Usagef("%s %q: the port must be 0..65535", src("gossip-addr"), c.gossipAddr)
	}
	gc := gossip.DefaultConfig()
	if c.gossipTimings == gossipTimingsLocal || c.gossipTimings == gossipTimingsAuto && ip.IsLoopback() {
		gc = gossip.DefaultLocalConfig()
	}
	gc.BindAddr, gc.BindPort, gc.Join = host, p, joins
	gc.SecretKey = secret
	gc.Cluster = c.gossipCluster
	if gc.Cluster == "" {
		gc.Cluster = c.storeName()
	}
	if c.node.Provider.KeepAlive == nodeid.KeepAliveRead {
		readModeDetection(&gc)
	}
	c.node.Gossip = &gc
	if t := c.node.Provider.TaskID; len(t) > gossip.MaxNameLen {
		return envflag.Usagef("%s is %d bytes: want at most %d", src("task-id"), len(t), gossip.MaxNameLen)
	}
	return nil
}
