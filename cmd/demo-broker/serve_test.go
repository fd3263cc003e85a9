package main

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
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
		c, err := parseServeFlags(tc.args, env(), io.Discard)
		if err != nil {
			t.Fatalf("%v: %v", tc.args, err)
		}
		if c.renewInterval != tc.interval || c.renewDeadline != tc.deadline || c.safetyMargin != tc.margin {
			t.Errorf("%v: interval %v deadline %v margin %v; want %v %v %v", tc.args,
				c.renewInterval, c.renewDeadline, c.safetyMargin, tc.interval, tc.deadline, tc.margin)
		}
		if c.httpAddr != ":8080" || c.gossipOn() || c.prefix != "nodeid/" || c.clusterSize != 1024 || c.logLevel != slog.LevelInfo {
			t.Errorf("%v: unexpected defaults %+v", tc.args, c)
		}
	}
}

func TestParseServeFlagsEnv(t *testing.T) {
	c, err := parseServeFlags([]string{"--cluster-size", "7"}, env(
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
	if c.bucket != "from-env" || c.clusterSize != 7 || !c.s3PathStyle || c.gossipHost != "0.0.0.0" || c.gossipPort != 7946 ||
		strings.Join(c.join, " ") != "10.0.0.1:7946 10.0.0.2:7946" || string(c.gossipKey) != "0123456789abcdef" || c.logLevel != slog.LevelDebug {
		t.Errorf("%+v", c)
	}
	c, err = parseServeFlags([]string{"--embedded-s3", "127.0.0.1:0"}, env(), io.Discard)
	if err != nil || c.bucket != "nodeid" {
		t.Errorf("--embedded-s3 without --bucket: %q %v", c.bucket, err)
	}
	_, err = parseServeFlags([]string{"--bucket", "b"}, env("NODEID_RENEW_DEADLINE", "30s"), io.Discard)
	if !errors.Is(err, errUsage) || !strings.Contains(err.Error(), "NODEID_RENEW_DEADLINE (--renew-deadline) 30s") {
		t.Errorf("bad deadline from the environment: %v", err)
	}
}

func TestParseCount(t *testing.T) {
	for q, want := range map[string]int{"": 1, "n=1": 1, "n=10000": 10000, "n=42": 42, "n=0": -1, "n=10001": -1, "n=abc": -1, "n=": -1, "n=1&n=1": -1, "n=1.5": -1} {
		v, _ := url.ParseQuery(q)
		n, err := parseCount(v)
		if (want < 0) != (err != nil) || (want > 0 && n != want) {
			t.Errorf("%q: %d %v, want %d", q, n, err, want)
		}
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

func TestResolveTaskID(t *testing.T) {
	const arn = "arn:aws:ecs:eu-west-1:123456789012:task/demo/0123456789abcdef"
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/v4/abc/task" {
			http.NotFound(w, r)
			return
		}
		_ = json.NewEncoder(w).Encode(map[string]any{"Cluster": "demo", "TaskARN": arn, "Family": "broker"})
	}))
	defer srv.Close()
	log := slog.New(slog.DiscardHandler)
	ctx := context.Background()
	if got := resolveTaskID(ctx, "given", env(ecsMetadataEnv, srv.URL+"/v4/abc"), log); got != "given" {
		t.Errorf("with --task-id: %q", got)
	}
	if got := resolveTaskID(ctx, "", env(ecsMetadataEnv, srv.URL+"/v4/abc"), log); got != arn {
		t.Errorf("from ECS metadata: %q", got)
	}
	host, _ := os.Hostname()
	for _, e := range []func(string) (string, bool){env(), env(ecsMetadataEnv, srv.URL+"/wrong")} {
		if got := resolveTaskID(ctx, "", e, log); !strings.HasPrefix(got, host+"-") {
			t.Errorf("fallback: %q", got)
		}
	}
}

func TestIDFile(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "id.json")
	if err := checkIDFileDir(path); err != nil {
		t.Fatal(err)
	}
	if err := checkIDFileDir(filepath.Join(dir, "missing", "id.json")); err == nil {
		t.Error("checkIDFileDir of a missing directory did not fail")
	}
	for v := int64(1); v <= 2; v++ {
		if err := writeIDFile(path, idFileContent{NodeID: 7, Version: v, ValidUntilMs: 1763700000000 + v}); err != nil {
			t.Fatal(err)
		}
	}
	b, err := os.ReadFile(path)
	if err != nil || string(b) != "{\"nodeId\":7,\"version\":2,\"validUntilMs\":1763700000002}\n" {
		t.Fatalf("%q %v", b, err)
	}
	if st, _ := os.Stat(path); st.Mode().Perm() != 0o644 {
		t.Errorf("mode %v, want 0644", st.Mode().Perm())
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 1 {
		t.Errorf("temporary files left: %v", entries)
	}
	if removed, err := removeIDFile(path); !removed || err != nil {
		t.Errorf("remove: %v %v", removed, err)
	}
	if removed, err := removeIDFile(path); removed || err != nil {
		t.Errorf("remove again: %v %v", removed, err)
	}
}
