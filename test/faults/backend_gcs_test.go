//go:build faults

package faults

import (
	"context"
	"net/url"
	"testing"
	"time"

	"github.com/nodeid/nodeid/gcsstore"
	"github.com/nodeid/nodeid/internal/testkit/emulator"
	"github.com/nodeid/nodeid/lease"
)

// needFakeGCS builds the binaries and returns the suite with the
// fake-gcs-server of NODEID_TEST_FAKEGCS_URL as a storeBackend. The suite
// does not start it (and never restarts it: it keeps its objects in
// memory): without the variable the scenario skips, or fails with CI=true.
func needFakeGCS(t *testing.T) (*suite, storeBackend) {
	t.Helper()
	s := needBinaries(t)
	base := emulator.FakeGCS(t)
	u, err := url.Parse(base)
	if err != nil || u.Host == "" {
		t.Fatalf("%s=%q is not a URL with a host", emulator.FakeGCSEnv, base)
	}
	return s, fakeGCS{url: u}
}

// fakeGCS is Google Cloud Storage on fake-gcs-server, as a storeBackend: a
// bucket per run, no credentials.
type fakeGCS struct{ url *url.URL }

func (g fakeGCS) Name() string { return "Cloud Storage on fake-gcs-server at " + g.url.String() }

func (g fakeGCS) Open(t *testing.T, name, prefix string) lease.Store {
	t.Helper()
	cfg := gcsstore.DefaultConfig()
	cfg.Bucket, cfg.Prefix, cfg.Endpoint, cfg.NoAuth = name, prefix, emulator.FakeGCSEndpoint(g.url.String()), true
	cfg.RequestTimeout = 2 * time.Second
	st, err := gcsstore.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	// fake-gcs-server cannot delete a bucket that holds objects; its
	// buckets go with the server.
	if err := st.Client().Bucket(name).Create(ctx, "nodeid-faults", nil); err != nil {
		t.Fatalf("create bucket %s on %s: %v", name, g.Name(), err)
	}
	return st
}

func (g fakeGCS) Target() string { return g.url.Host }

func (g fakeGCS) BrokerArgs(name, addr string) []string {
	u := *g.url
	u.Host = addr
	return []string{"--store", "gcs", "--gcs-bucket", name, "--gcs-endpoint", emulator.FakeGCSEndpoint(u.String()), "--gcs-no-auth"}
}

func (g fakeGCS) BrokerEnv() []string { return nil }

// TestPartitionGCS: ScenarioPartitionGCS, the outage scenario's rules on
// Cloud Storage (fake-gcs-server), through a TCP proxy per broker, with the
// real broker (partition-gcs-control: every check must pass) and with the
// nofence mutant (nofence: the checks must find the partitioned holder
// serving after the spare took its ID over). See testPartitionStore.
func TestPartitionGCS(t *testing.T) {
	s, gcs := needFakeGCS(t)
	forEachSeed(t, ScenarioPartitionGCS, func(t *testing.T, seed uint64) {
		t.Run("partition-gcs-control", func(t *testing.T) { testPartitionStore(t, s, gcs, ScenarioPartitionGCS, seed, "") })
		t.Run("nofence", func(t *testing.T) { testPartitionStore(t, s, gcs, ScenarioPartitionGCS, seed, "nofence") })
	})
}
