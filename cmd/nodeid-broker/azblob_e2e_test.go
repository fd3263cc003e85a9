package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"slices"
	"testing"
	"time"

	"github.com/nodeid/nodeid/azblobstore"
	"github.com/nodeid/nodeid/internal/testkit/emulator"
)

// TestServeAzblob runs brokers with --store azblob on Azurite (test/all.sh
// starts it with test/emulators.sh and sets NODEID_TEST_AZURITE_URL; with
// CI=true a missing Azurite fails the test): two get distinct IDs and serve
// them; SIGTERM releases at once and a newcomer takes the ID with a higher
// version; no ID repeats.
func TestServeAzblob(t *testing.T) {
	t.Parallel()
	accountURL := emulator.Azurite(t)
	b := make([]byte, 6)
	_, _ = rand.Read(b)
	name := "nodeid-broker-" + hex.EncodeToString(b)
	cfg := azblobstore.DefaultConfig()
	cfg.AccountURL, cfg.Container = accountURL, name
	cfg.AccountName, cfg.AccountKey = azblobstore.AzuriteAccountName, azblobstore.AzuriteAccountKey
	st, err := azblobstore.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if _, err := st.Client().Create(ctx, nil); err != nil {
		t.Fatalf("create container %s on Azurite at %s: %v", name, accountURL, err)
	}
	t.Cleanup(func() { _, _ = st.Client().Delete(context.Background(), nil) })

	env := brokerEnv(t, "NODEID_AZBLOB_ACCOUNT_NAME="+azblobstore.AzuriteAccountName, "NODEID_AZBLOB_ACCOUNT_KEY="+azblobstore.AzuriteAccountKey)
	args := slices.Concat([]string{"--store", "azblob", "--azblob-account-url", accountURL, "--azblob-container", name, "--cluster-size", "2"}, shortLease)
	serveAndHandOver(t, "Azurite", env, args)
}
