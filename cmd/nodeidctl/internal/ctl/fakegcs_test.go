package ctl

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"testing"
	"time"

	"github.com/nodeid/nodeid/gcsstore"
	"github.com/nodeid/nodeid/internal/testkit/emulator"
)

// TestFakeGCS runs every command with --store gcs on fake-gcs-server
// (NODEID_TEST_FAKEGCS_URL, which test/all.sh sets; with CI=true a missing
// emulator fails the test), configured through NODEID_* variables as an
// operator would, with the real OpenGCS (everyCommand); and a missing bucket
// is reported before anything else.
func TestFakeGCS(t *testing.T) {
	base := emulator.FakeGCS(t)
	b := make([]byte, 6)
	_, _ = rand.Read(b)
	bucket := "nodeidctl-" + hex.EncodeToString(b)
	endpoint := emulator.FakeGCSEndpoint(base)
	cfg := gcsstore.DefaultConfig()
	cfg.Bucket, cfg.Prefix, cfg.Endpoint, cfg.NoAuth = bucket, "ids/", endpoint, true
	st, err := gcsstore.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := st.Client().Bucket(bucket).Create(ctx, "nodeid-test", nil); err != nil {
		t.Fatalf("create bucket %s on fake-gcs-server at %s: %v", bucket, base, err)
	}
	env := map[string]string{
		"NODEID_STORE":        "gcs",
		"NODEID_GCS_BUCKET":   bucket,
		"NODEID_GCS_ENDPOINT": endpoint,
		"NODEID_GCS_NO_AUTH":  "true",
		"NODEID_PREFIX":       "ids/",
	}
	run := runWith(t, env)
	everyCommand(t, st, run)

	env["NODEID_GCS_BUCKET"] = "nodeidctl-absent"
	contains(t, "status of a missing bucket", run(ExitFailed, "status"), "open the store", "nodeidctl-absent")
}
