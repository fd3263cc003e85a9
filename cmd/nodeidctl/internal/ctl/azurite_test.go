package ctl

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/nodeid/nodeid/azblobstore"
	"github.com/nodeid/nodeid/lease"
)

// azuriteURL returns Azurite's account URL from NODEID_TEST_AZURITE_URL
// (test/all.sh starts Azurite and sets it), skipping the test when it is not
// set, or failing it with CI=true: in CI, a run that silently skipped is no
// run.
func azuriteURL(t *testing.T) string {
	t.Helper()
	u := os.Getenv("NODEID_TEST_AZURITE_URL")
	if u == "" {
		if os.Getenv("CI") == "true" {
			t.Fatal("NODEID_TEST_AZURITE_URL is not set (CI=true, so this is a failure, not a skip; test/all.sh starts Azurite)")
		}
		t.Skip(`NODEID_TEST_AZURITE_URL is not set (start Azurite: eval "$(bash test/azurite.sh start)")`)
	}
	return u
}

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
// through NODEID_* variables as an operator would, with the real
// OpenAzblob: check, init, status, release (refused while held, then
// --force), resize, repair of a corrupt blob, leaders; and a wrong container
// is reported before anything else.
func TestAzurite(t *testing.T) {
	url := azuriteURL(t)
	st, name := azuriteStore(t, url, "ids/")
	env := map[string]string{
		"NODEID_STORE":               "azblob",
		"NODEID_AZBLOB_ACCOUNT_URL":  url,
		"NODEID_AZBLOB_CONTAINER":    name,
		"NODEID_AZBLOB_ACCOUNT_NAME": azblobstore.AzuriteAccountName,
		"NODEID_AZBLOB_ACCOUNT_KEY":  azblobstore.AzuriteAccountKey,
		"NODEID_PREFIX":              "ids/",
	}
	run := func(want int, args ...string) string {
		t.Helper()
		var out, errb bytes.Buffer
		code := Run(context.Background(), args, &out, &errb, Env{LookupEnv: func(k string) (string, bool) { v, ok := env[k]; return v, ok }})
		if code != want {
			t.Fatalf("nodeidctl %s: exit %d, want %d\nstdout:\n%s\nstderr:\n%s", strings.Join(args, " "), code, want, out.String(), errb.String())
		}
		return out.String() + errb.String()
	}
	status := func() StatusJSON {
		t.Helper()
		var s StatusJSON
		if err := json.Unmarshal([]byte(run(ExitOK, "status", "--json")), &s); err != nil {
			t.Fatal(err)
		}
		return s
	}
	ctx := context.Background()

	contains(t, "check", run(ExitOK, "check"), "conditions:    ok", "verdict:       ok")
	contains(t, "init", run(ExitOK, "init", "--cluster-size", "4"), "created 4 lease object(s), free: IDs 0-3")
	s := status()
	if s.Manifest.State != "ok" || s.Manifest.ClusterSize != 4 || len(s.Leases) != 4 || s.Counts["free"] != 4 {
		t.Fatalf("status after init: %+v", s)
	}

	// A task holds node 2: release refuses, --force frees it.
	_, meta, err := st.Get(ctx, lease.RecordKey(2))
	if err != nil {
		t.Fatal(err)
	}
	rec := held(2, "task-a", 1)
	rec.WriteID = lease.NewWriteID()
	body, err := rec.Encode()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := st.Update(ctx, lease.RecordKey(2), body, meta.ETag); err != nil {
		t.Fatal(err)
	}
	if s := status(); s.Counts["held"] != 1 || s.Leases[2].State != "held" || s.Leases[2].AgeMs == nil {
		t.Fatalf("status with node 2 held: %+v", s)
	}
	contains(t, "release", run(ExitFailed, "release", "--id", "2"), "--force")
	contains(t, "release --force", run(ExitOK, "release", "--id", "2", "--force"), `released node 2 (was held, held by "task-a")`)
	if s := status(); s.Counts["free"] != 4 || *s.Leases[2].Version != 1 {
		t.Fatalf("status after release: %+v", s)
	}

	contains(t, "resize", run(ExitOK, "resize", "--cluster-size", "6"), "cluster size 4 -> 6")
	if s := status(); s.Manifest.ClusterSize != 6 || s.Counts["free"] != 6 {
		t.Fatalf("status after resize: %+v", s)
	}

	// Garbage in node 5's blob: corrupt until repaired.
	_, meta, err = st.Get(ctx, lease.RecordKey(5))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := st.Update(ctx, lease.RecordKey(5), []byte("not a lease"), meta.ETag); err != nil {
		t.Fatal(err)
	}
	run(ExitFailed, "status", "--fail-on-anomalies")
	contains(t, "repair", run(ExitOK, "repair", "--id", "5", "--floor", "1900000000000", "--yes"), "repaired node 5: free, version 2")
	if s := status(); s.Counts["free"] != 6 {
		t.Fatalf("status after repair: %+v", s)
	}
	run(ExitOK, "leaders")

	env["NODEID_AZBLOB_CONTAINER"] = "nodeidctl-absent"
	contains(t, "status of a missing container", run(ExitFailed, "status"), "open the store", "nodeidctl-absent")
}
