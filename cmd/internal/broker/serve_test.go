package broker

import (
	"errors"
	"io"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/nodeid/nodeid/cmd/internal/envflag"
	"github.com/nodeid/nodeid/gossip"
	"github.com/nodeid/nodeid/nodeid"
)

// env returns a lookup function over the given variables.
func env(kv ...string) func(string) (string, bool) {
	m := map[string]string{}
	for i := 0; i < len(kv); i += 2 {
		m[kv[i]] = kv[i+1]
	}
	return func(k string) (string, bool) { v, ok := m[k]; return v, ok }
}

func TestParseServeFlagsDefaults(t *testing.T) {
	for _, tc := range []struct {
		args                             []string
		interval, deadline, margin, want time.Duration
	}{
		{[]string{"--bucket", "b"}, 5 * time.Second, 10 * time.Second, time.Second, 0},
		{[]string{"--bucket", "b", "--lease-duration", "2s"}, 2 * time.Second / 3, 2 * time.Second * 2 / 3, 500 * time.Millisecond, 0},
		{[]string{"--bucket", "b", "--lease-duration", "3s", "--renew-interval", "1s", "--renew-deadline", "2s"}, time.Second, 2 * time.Second, 750 * time.Millisecond, 0},
	} {
		c, err := parseServeFlags("nodeid-broker", tc.args, env(), io.Discard)
		if err != nil {
			t.Fatalf("%v: %v", tc.args, err)
		}
		nc := c.node
		nc.Provider.TaskID = "task" // resolved at start
		if err := nc.Validate(); err != nil {
			t.Fatalf("%v: %v", tc.args, err)
		}
		pc := nc.Provider.Timings() // the timings left zero derived
		if pc.RenewInterval != tc.interval || pc.RenewDeadline != tc.deadline || pc.SafetyMargin != tc.margin {
			t.Errorf("%v: interval %v deadline %v margin %v; want %v %v %v", tc.args,
				pc.RenewInterval, pc.RenewDeadline, pc.SafetyMargin, tc.interval, tc.deadline, tc.margin)
		}
		if c.httpAddr != ":8080" || c.gossipOn() || c.prefix != "nodeid/" || nc.Provider.ClusterSize != 1024 || c.logLevel != slog.LevelInfo {
			t.Errorf("%v: unexpected defaults %+v", tc.args, c)
		}
	}
}

func TestParseServeFlagsEnv(t *testing.T) {
	c, err := parseServeFlags("nodeid-broker", []string{"--cluster-size", "7"}, env(
		"NODEID_BUCKET", "from-env",
		"NODEID_CLUSTER_SIZE", "9", // the flag wins
		"NODEID_S3_PATH_STYLE", "true",
		"NODEID_GOSSIP_ADDR", ":7946",
		"NODEID_JOIN", "10.0.0.1:7946, 10.0.0.2:7946,",
		"NODEID_GOSSIP_KEY", "MDEyMzQ1Njc4OWFiY2RlZg==",
		"NODEID_LOG_LEVEL", "debug",
	), io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	g := c.node.Gossip
	if c.bucket != "from-env" || c.node.Provider.ClusterSize != 7 || !c.s3PathStyle || g == nil || g.BindAddr != "0.0.0.0" || g.BindPort != 7946 ||
		strings.Join(g.Join, " ") != "10.0.0.1:7946 10.0.0.2:7946" || string(g.SecretKey) != "0123456789abcdef" || c.logLevel != slog.LevelDebug {
		t.Errorf("%+v", c)
	}
	c, err = parseServeFlags("nodeid-broker", []string{"--embedded-s3", "127.0.0.1:0"}, env(), io.Discard)
	if err != nil || c.bucket != "nodeid" {
		t.Errorf("--embedded-s3 without --bucket: %q %v", c.bucket, err)
	}
	_, err = parseServeFlags("nodeid-broker", []string{"--bucket", "b"}, env("NODEID_RENEW_DEADLINE", "30s"), io.Discard)
	if !errors.Is(err, envflag.ErrUsage) || !strings.Contains(err.Error(), "NODEID_RENEW_DEADLINE (--renew-deadline) 30s") {
		t.Errorf("bad deadline from the environment: %v", err)
	}
}

// TestReadModeGossipDetectsSooner: in read mode gossip probes every 500 ms
// and suspects for two intervals; write mode keeps memberlist's LAN timings.
func TestReadModeGossipDetectsSooner(t *testing.T) {
	for _, mode := range []string{"write", "read"} {
		c, err := parseServeFlags("nodeid-broker", []string{"--bucket", "b", "--gossip-addr", "10.0.0.1:7946", "--keepalive", mode}, env(), io.Discard)
		if err != nil {
			t.Fatalf("%s: %v", mode, err)
		}
		g, lan := c.node.Gossip, gossip.DefaultConfig()
		want := [3]any{lan.ProbeInterval, lan.ProbeTimeout, lan.SuspicionMult}
		if mode == "read" {
			want = [3]any{500 * time.Millisecond, 250 * time.Millisecond, 2}
		}
		if got := [3]any{g.ProbeInterval, g.ProbeTimeout, g.SuspicionMult}; got != want {
			t.Errorf("%s mode: probe interval, timeout, suspicion mult %v, want %v", mode, got, want)
		}
	}
}

// TestGossipTimings: --gossip-timings auto picks memberlist's local timings on
// a loopback address and its LAN ones elsewhere; lan and local force either,
// whatever the address; another value is a usage error.
func TestGossipTimings(t *testing.T) {
	lan, local := gossip.DefaultConfig(), gossip.DefaultLocalConfig()
	for _, tc := range []struct {
		addr, timings string
		want          gossip.Config
	}{
		{"127.0.0.1:7946", "", local},
		{"10.0.0.1:7946", "", lan},
		{":7946", "auto", lan},
		{"127.0.0.1:7946", "lan", lan},
		{"10.0.0.1:7946", "local", local},
	} {
		args := []string{"--bucket", "b", "--gossip-addr", tc.addr}
		if tc.timings != "" {
			args = append(args, "--gossip-timings", tc.timings)
		}
		c, err := parseServeFlags("nodeid-broker", args, env(), io.Discard)
		if err != nil {
			t.Fatalf("%v: %v", args, err)
		}
		g, w := c.node.Gossip, tc.want
		got := [4]time.Duration{g.ProbeTimeout, g.PushPullInterval, g.RejoinMax, g.ReconnectInterval}
		if want := [4]time.Duration{w.ProbeTimeout, w.PushPullInterval, w.RejoinMax, w.ReconnectInterval}; got != want {
			t.Errorf("%v: probe timeout, push/pull, rejoin max, reconnect %v, want %v", args, got, want)
		}
	}
	_, err := parseServeFlags("nodeid-broker", []string{"--bucket", "b", "--gossip-addr", ":7946"}, env("NODEID_GOSSIP_TIMINGS", "fast"), io.Discard)
	if !errors.Is(err, envflag.ErrUsage) || !strings.Contains(err.Error(), `NODEID_GOSSIP_TIMINGS (--gossip-timings) "fast": want auto, lan or local`) {
		t.Errorf("--gossip-timings fast: %v", err)
	}
}

func TestLocalURL(t *testing.T) {
	for in, want := range map[string]string{
		":8080": "http://127.0.0.1:8080", "0.0.0.0:81": "http://127.0.0.1:81", "[::]:82": "http://[::1]:82",
		"10.1.2.3:83": "http://10.1.2.3:83", "localhost:84": "http://localhost:84",
	} {
		if got, err := localURL(in); err != nil || got != want {
			t.Errorf("localURL(%q) = %q %v, want %q", in, got, err, want)
		}
	}
	if _, err := localURL("8080"); err == nil {
		t.Error("localURL(8080) did not fail")
	}
}

// TestValidationMessages: a bad value is reported once, naming the flag (or
// variable) the user set, with durations as people write them; values
// derived from it are not reported too.
func TestValidationMessages(t *testing.T) {
	for _, tc := range []struct {
		args []string
		vars []string
		want string
	}{
		{[]string{"--lease-duration", "2s", "--safety-margin", "3s"}, nil,
			"--safety-margin 3s must be in (0, --lease-duration 2s)"},
		{nil, []string{"NODEID_LEASE_DURATION", "2s", "NODEID_SAFETY_MARGIN", "3s"},
			"NODEID_SAFETY_MARGIN (--safety-margin) 3s must be in (0, --lease-duration 2s)"},
		{[]string{"--lease-duration", "2m"}, nil, "--lease-duration 2m above --max-lease-duration 1m"},
		{[]string{"--lease-duration", "1s", "--renew-interval", "700ms"}, nil,
			"--renew-interval 700ms must be positive and below --renew-deadline 667ms"},
		{[]string{"--renew-deadline", "30s"}, nil, "--renew-deadline 30s above --lease-duration minus --safety-margin (14s)"},
		{[]string{"--lease-duration", "1s", "--safety-margin", "900ms"}, nil,
			"the default --renew-interval 333ms must be positive and below --renew-deadline 100ms, given --lease-duration 1s and --safety-margin 900ms: " +
				"set the timings left to their defaults, or change those"},
		{[]string{"--bucket", "a/b"}, nil, `--bucket "a/b" is not a bucket name (no slashes or spaces; a prefix goes in --prefix)`},
		{[]string{"--s3-endpoint", "ftp://x"}, nil, `--s3-endpoint "ftp://x" is not an http:// or https:// URL with a host`},
		{[]string{"--prefix", "nodeid"}, nil, `--prefix "nodeid" does not end with "/": the keys would be nodeidcluster.json, nodeid0.json, ...; give "nodeid/" (or "" for the root of the bucket)`},
		{nil, []string{"NODEID_PREFIX", "ids"}, `NODEID_PREFIX (--prefix) "ids" does not end with "/"`},
		{[]string{"--log-format", "xml"}, nil, `--log-format "xml": want json or text`},
	} {
		args := append([]string{"--bucket", "b"}, tc.args...)
		_, err := parseServeFlags("nodeid-broker", args, env(tc.vars...), io.Discard)
		if !errors.Is(err, envflag.ErrUsage) || !strings.HasPrefix(err.Error(), tc.want) {
			t.Errorf("%v %v: %v\nwant %s", tc.args, tc.vars, err, tc.want)
		}
		if err != nil && (strings.Contains(err.Error(), "StoreTimeout") || strings.Contains(err.Error(), "666.666")) {
			t.Errorf("%v: %v names an internal field or a float duration", tc.args, err)
		}
	}
}

// TestLogFormat: the broker's log lines are JSON by default, key=value
// lines with --log-format text (or NODEID_LOG_FORMAT), the exit reason
// among them.
func TestLogFormat(t *testing.T) {
	for _, tc := range []struct {
		args, vars []string
		want       string
	}{
		{nil, nil, `{"time":`},
		{[]string{"--log-format", "text"}, nil, `time=`},
		{nil, []string{"NODEID_LOG_FORMAT", "text"}, `time=`},
	} {
		cfg, err := parseServeFlags("nodeid-broker", append([]string{"--bucket", "b"}, tc.args...), env(tc.vars...), io.Discard)
		if err != nil {
			t.Fatalf("%v %v: %v", tc.args, tc.vars, err)
		}
		var out strings.Builder
		slog.New(logHandler(&out, &cfg)).Error("exiting after a failure", "err", "x")
		if line := out.String(); !strings.HasPrefix(line, tc.want) || !strings.Contains(line, "exiting after a failure") {
			t.Errorf("%v %v: log line %q, want it to start %q", tc.args, tc.vars, line, tc.want)
		}
	}
}

// TestParseLossGrace: --loss-grace left out is a lease (nodeid's default), 0
// turns jeopardy off (nodeid.NoLossGrace), a duration is that, and a negative
// one is a usage error naming the flag.
func TestParseLossGrace(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want time.Duration
		bad  bool
	}{
		{nil, 15 * time.Second, false},
		{[]string{"--loss-grace", "0"}, nodeid.NoLossGrace, false},
		{[]string{"--loss-grace", "40s"}, 40 * time.Second, false},
		{[]string{"--loss-grace", "-1s"}, 0, true},
	} {
		c, err := parseServeFlags("nodeid-broker", append([]string{"--bucket", "b"}, tc.args...), env(), io.Discard)
		if tc.bad {
			if !errors.Is(err, envflag.ErrUsage) || !strings.Contains(err.Error(), "--loss-grace -1s") {
				t.Errorf("%v: %v, want a usage error naming --loss-grace", tc.args, err)
			}
			continue
		}
		if err != nil {
			t.Fatalf("%v: %v", tc.args, err)
		}
		nc := c.node
		nc.Provider.TaskID = "task"
		if err := nc.Validate(); err != nil || nc.Provider.Timings().LossGrace != tc.want {
			t.Errorf("%v: LossGrace %v (%v), want %v", tc.args, nc.Provider.Timings().LossGrace, err, tc.want)
		}
	}
}
