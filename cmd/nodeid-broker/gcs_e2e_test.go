package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/nodeid/nodeid/gcsstore"
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
	base := os.Getenv("NODEID_TEST_FAKEGCS_URL")
	if base == "" {
		if os.Getenv("CI") == "true" {
			t.Fatal("NODEID_TEST_FAKEGCS_URL is not set (CI=true, so this is a failure; test/all.sh starts fake-gcs-server with test/emulators.sh)")
		}
		t.Skip(`NODEID_TEST_FAKEGCS_URL is not set (start fake-gcs-server: eval "$(bash test/emulators.sh start fakegcs)")`)
	}
	b := make([]byte, 6)
	_, _ = rand.Read(b)
	bucket := "nodeid-broker-" + hex.EncodeToString(b)
	endpoint := strings.TrimSuffix(base, "/") + "/storage/v1/"
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
	// interval below that is refused, naming the limit.
	fast := startBroker(t, "fast", env, slices.Concat(store, shortLease)...)
	if code := fast.waitExit(15 * time.Second); code != 1 {
		t.Fatalf("a broker renewing every 500ms on Cloud Storage exited %d, want 1", code)
	}
	if msg := fast.waitLog("exiting after a failure", time.Second)["err"]; !strings.Contains(fmt.Sprint(msg), "500ms is below 1s") {
		t.Errorf("the refusal says %q, want it to name the 1s limit", msg)
	}
	args := slices.Concat(store, []string{"--lease-duration", "3s", "--renew-interval", "1s", "--drain-delay", "200ms", "--log-level", "info"})
	var ids idLedger
	a := startBroker(t, "a", env, args...)
	bb := startBroker(t, "b", env, args...)
	as, bs := a.waitHeld(15*time.Second), bb.waitHeld(15*time.Second)
	if as.NodeID == bs.NodeID || as.Version != 1 || bs.Version != 1 {
		t.Fatalf("a holds node %d version %d, b node %d version %d: want two IDs, version 1", as.NodeID, as.Version, bs.NodeID, bs.Version)
	}
	fetchIDs(t, a, as.NodeID, &ids)
	fetchIDs(t, bb, bs.NodeID, &ids)

	a.signal(syscall.SIGTERM)
	if code := a.waitExit(15 * time.Second); code != 0 {
		t.Fatalf("a exited %d after SIGTERM, want 0", code)
	}
	c := startBroker(t, "c", env, args...)
	cs := c.waitHeld(15 * time.Second)
	if cs.NodeID != as.NodeID || cs.Version != as.Version+1 {
		t.Fatalf("c holds node %d version %d; want a's node %d with version %d", cs.NodeID, cs.Version, as.NodeID, as.Version+1)
	}
	if from := c.waitLog("acquired node ID", time.Second)["from"]; from != "free" {
		t.Errorf("c took node %d from state %v, want free (released)", cs.NodeID, from)
	}
	fetchIDs(t, c, cs.NodeID, &ids)
	t.Logf("%d IDs from 3 brokers on fake-gcs-server, none repeated", ids.len())
}
