package main

import (
	"net/http"
	"strings"
	"testing"
	"time"
)

// TestServeOpsAddr: --ops-addr serves the operator endpoints (health,
// readiness, status, metrics) on a port of their own, and never /ids, which
// stays on --http-addr: the port a task publishes hands out no IDs.
func TestServeOpsAddr(t *testing.T) {
	t.Parallel()
	srv := startFakeS3(t)
	p := startBroker(t, "ops", brokerEnv(t), append([]string{"--bucket", srv.Bucket(), "--s3-endpoint", srv.URL(), "--s3-path-style",
		"--cluster-size", "2", "--ops-addr", "127.0.0.1:0"}, shortLease...)...)
	ops := p.waitLog("ops listening", 15*time.Second)["addr"].(string)
	p.waitHeld(20 * time.Second)
	get := func(addr, path string) int {
		resp, err := httpClient.Get("http://" + addr + path)
		if err != nil {
			t.Fatalf("GET %s%s: %v", addr, path, err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	for path, want := range map[string]int{"/ids": http.StatusNotFound, "/health": 200, "/ready": 200, "/status": 200, "/metrics": 200} {
		if code := get(ops, path); code != want {
			t.Errorf("--ops-addr %s: HTTP %d, want %d", path, code, want)
		}
	}
	if code, body, err := p.get("/ids?n=2"); err != nil || code != 200 || !strings.Contains(string(body), `"ids":[`) {
		t.Errorf("--http-addr /ids: %d %s %v", code, body, err)
	}
}
