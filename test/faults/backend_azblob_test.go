//go:build faults

package faults

import (
	"context"
	"net/url"
	"testing"
	"time"

	"github.com/nodeid/nodeid/azblobstore"
	"github.com/nodeid/nodeid/internal/testkit/emulator"
	"github.com/nodeid/nodeid/lease"
)

// needAzurite builds the binaries and returns the suite with the Azurite of
// NODEID_TEST_AZURITE_URL as a storeBackend. The suite does not start
// Azurite (it never restarts it: Azurite keeps its blobs in memory): without
// the variable the scenario skips, or fails with CI=true.
func needAzurite(t *testing.T) (*suite, storeBackend) {
	t.Helper()
	s := needBinaries(t)
	u := emulator.Azurite(t)
	pu, err := url.Parse(u)
	if err != nil || pu.Host == "" {
		t.Fatalf("%s=%q is not a URL with a host", emulator.AzuriteEnv, u)
	}
	return s, azurite{url: pu}
}

// azurite is Azure Blob on Azurite, as a storeBackend: a container per
// run, shared key auth with the emulator's well-known account.
type azurite struct{ url *url.URL }

func (a azurite) Name() string { return "Azure Blob on Azurite at " + a.url.String() }

func (a azurite) Open(t *testing.T, name, prefix string) lease.Store {
	t.Helper()
	cfg := azblobstore.DefaultConfig()
	cfg.AccountURL, cfg.Container, cfg.Prefix = a.url.String(), name, prefix
	cfg.AccountName, cfg.AccountKey = azblobstore.AzuriteAccountName, azblobstore.AzuriteAccountKey
	cfg.RequestTimeout = 2 * time.Second
	st, err := azblobstore.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := st.Client().Create(ctx, nil); err != nil {
		t.Fatalf("create container %s on %s: %v", name, a.Name(), err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		_, _ = st.Client().Delete(ctx, nil)
	})
	return st
}

func (a azurite) Target() string { return a.url.Host }

func (a azurite) BrokerArgs(name, addr string) []string {
	u := *a.url
	u.Host = addr // shared key signs the account and path, not the host
	return []string{"--store", "azblob", "--azblob-account-url", u.String(), "--azblob-container", name}
}

func (a azurite) BrokerEnv() []string {
	return []string{"NODEID_AZBLOB_ACCOUNT_NAME=" + azblobstore.AzuriteAccountName, "NODEID_AZBLOB_ACCOUNT_KEY=" + azblobstore.AzuriteAccountKey}
}

// TestPartitionAzblob: ScenarioPartitionAzblob, the outage scenario's rules
// on Azure Blob (Azurite), through a TCP proxy per broker, with the real
// broker (partition-azblob-control: every check must pass) and with the
// nofence mutant, which serves through its renew deadline (nofence: the
// checks must find the partitioned holder serving after the spare took its
// ID over). See testPartitionStore.
func TestPartitionAzblob(t *testing.T) {
	s, az := needAzurite(t)
	forEachSeed(t, ScenarioPartitionAzblob, func(t *testing.T, seed uint64) {
		t.Run("partition-azblob-control", func(t *testing.T) { testPartitionStore(t, s, az, ScenarioPartitionAzblob, seed, "") })
		t.Run("nofence", func(t *testing.T) { testPartitionStore(t, s, az, ScenarioPartitionAzblob, seed, "nofence") })
	})
}
