package ctl

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"testing"
	"time"

	"github.com/nodeid/nodeid/azblobstore"
	"github.com/nodeid/nodeid/internal/testkit/emulator"
)

// azuriteStore creates a fresh container on Azurite for t (deleted when t
// ends) and returns a store on it under prefix, with the container's name.
func azuriteStore(t *testing.T, url, prefix string) (*azblobstore.Store, string) {
	t.Helper()
	b := make([]byte, 6)
	_, _ = rand.Read(b)
	name := "nodeidctl-" + hex.EncodeToString(b)
	cfg := azblobstore.DefaultConfig()
	cfg.AccountURL, cfg.Container, cfg.Prefix = url, name, prefix
	cfg.AccountName, cfg.AccountKey = azblobstore.AzuriteAccountName, azblobstore.AzuriteAccountKey
	cfg.RequestTimeout = 30 * time.Second
	st, err := azblobstore.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if _, err := st.Client().Create(ctx, nil); err != nil {
		t.Fatalf("create container %s on Azurite at %s: %v", name, url, err)
	}
	t.Cleanup(func() { _, _ = st.Client().Delete(context.Background(), nil) })
	return st, name
}

// TestAzurite runs every command with --store azblob on Azurite, configured
// through NODEID_* variables as an operator would, with the real OpenAzblob
// (everyCommand); and a wrong container is reported before anything else.
func TestAzurite(t *testing.T) {
	url := emulator.Azurite(t)
	st, name := azuriteStore(t, url, "ids/")
	env := map[string]string{
		"NODEID_STORE":               "azblob",
		"NODEID_AZBLOB_ACCOUNT_URL":  url,
		"NODEID_AZBLOB_CONTAINER":    name,
		"NODEID_AZBLOB_ACCOUNT_NAME": azblobstore.AzuriteAccountName,
		"NODEID_AZBLOB_ACCOUNT_KEY":  azblobstore.AzuriteAccountKey,
		"NODEID_PREFIX":              "ids/",
	}
	run := runWith(t, env)
	everyCommand(t, st, run)

	env["NODEID_AZBLOB_CONTAINER"] = "nodeidctl-absent"
	contains(t, "status of a missing container", run(ExitFailed, "status"), "open the store", "nodeidctl-absent")
}
