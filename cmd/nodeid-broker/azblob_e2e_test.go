package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"os"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/nodeid/nodeid/azblobstore"
)

// TestServeAzblob runs brokers with --store azblob on Azurite (test/all.sh
// starts it with test/emulators.sh and sets NODEID_TEST_AZURITE_URL; with
// CI=true a missing Azurite fails the test): two get distinct IDs and serve
// them; SIGTERM releases at once and a newcomer takes the ID with a higher
// version; no ID repeats.
func TestServeAzblob(t *testing.T) {
	t.Parallel()
	accountURL := os.Getenv("NODEID_TEST_AZURITE_URL")
	if accountURL == "" {
		if os.Getenv("CI") == "true" {
			t.Fatal("NODEID_TEST_AZURITE_URL is not set (CI=true, so this is a failure; test/all.sh starts Azurite with test/emulators.sh)")
		}
		t.Skip(`NODEID_TEST_AZURITE_URL is not set (start Azurite: eval "$(bash test/emulators.sh start azurite)")`)
	}
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
	t.Logf("%d IDs from 3 brokers on Azurite, none repeated", ids.len())
}

// TestAzblobEntraIDChainFails: with --store azblob and neither a key nor a
// SAS, the broker and nodeidctl authenticate with azidentity's
// DefaultAzureCredential. Here its chain is narrowed to the environment's
// service principal and none is configured (no Entra ID is reachable from the
// tests): both stop at the store check, before any request (the account URL
// refuses connections anyway), with exit 1 and a message that says why the
// chain was used and what it tried.
func TestAzblobEntraIDChainFails(t *testing.T) {
	t.Parallel()
	env := brokerEnv(t, "AZURE_TOKEN_CREDENTIALS=EnvironmentCredential",
		"NODEID_STORE=azblob", "NODEID_AZBLOB_ACCOUNT_URL=https://127.0.0.1:1/devstoreaccount1", "NODEID_AZBLOB_CONTAINER=leases")
	for _, run := range []struct {
		name string
		run  func() (int, string, string)
	}{
		{"nodeid-broker serve", func() (int, string, string) {
			return runBin(t, env, "serve", "--http-addr", "127.0.0.1:0")
		}},
		{"nodeidctl status", func() (int, string, string) { return runCtl(t, env, "status") }},
	} {
		code, stdout, stderr := run.run()
		if code != 1 {
			t.Errorf("%s: exit %d, want 1\n%s%s", run.name, code, stdout, stderr)
			continue
		}
		for _, want := range []string{"without --azblob-account-key or --azblob-sas authenticates with Microsoft Entra ID", "got no token",
			"EnvironmentCredential: missing environment variable AZURE_TENANT_ID", `container \"leases\"`} {
			if !strings.Contains(stderr, want) && !strings.Contains(stderr, strings.ReplaceAll(want, `\"`, `"`)) {
				t.Errorf("%s: stderr does not say %q:\n%s", run.name, want, stderr)
			}
		}
	}
}
