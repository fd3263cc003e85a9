package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/nodeid/nodeid/gcsstore"
	"github.com/nodeid/nodeid/internal/testkit/emulator"
)

// TestServeGCS runs brokers with --store gcs on fake-gcs-server (test/all.sh
// starts it with test/emulators.sh and sets NODEID_TEST_FAKEGCS_URL; with
// CI=true a missing emulator fails the test), as deploy/cloud-run.md's
// "Tried locally" does: two get distinct IDs and serve them; SIGTERM releases
// at once and a newcomer takes the ID with a higher version; no ID repeats.
// A renew interval below Cloud Storage's one write per second per object is
// refused.
func TestServeGCS(t *testing.T) {
	t.Parallel()
	base := emulator.FakeGCS(t)
	b := make([]byte, 6)
	_, _ = rand.Read(b)
	bucket := "nodeid-broker-" + hex.EncodeToString(b)
	endpoint := emulator.FakeGCSEndpoint(base)
	cfg := gcsstore.DefaultConfig()
	cfg.Bucket, cfg.Endpoint, cfg.NoAuth = bucket, endpoint, true
	st, err := gcsstore.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := st.Client().Bucket(bucket).Create(ctx, "nodeid-test", nil); err != nil {
		t.Fatalf("create bucket %s on fake-gcs-server at %s: %v", bucket, base, err)
	}

	env := brokerEnv(t)
	store := []string{"--store", "gcs", "--gcs-bucket", bucket, "--gcs-endpoint", endpoint, "--gcs-no-auth", "--cluster-size", "2"}
	// Cloud Storage sustains one write per second per object: a renew
	// interval below that is refused, naming the limit, before any request
	// (a usage error).
	fast := startBroker(t, "fast", env, slices.Concat(store, shortLease)...)
	if code := fast.waitExit(15 * time.Second); code != 2 {
		t.Fatalf("a broker renewing every 500ms on Cloud Storage exited %d, want 2", code)
	}
	if out := fast.log(); !strings.Contains(out, "500ms is below 1s") {
		t.Errorf("the refusal says %q, want it to name the 1s limit", out)
	}
	if l, err := st.List(ctx); err != nil || len(l.Objects) != 0 {
		t.Errorf("the bucket after the refusal: %+v, %v; want it empty (no request before the refusal)", l.Objects, err)
	}
	args := slices.Concat(store, []string{"--lease-duration", "3s", "--renew-interval", "1s", "--drain-delay", "200ms", "--log-level", "info"})
	serveAndHandOver(t, "fake-gcs-server", env, args)
}
