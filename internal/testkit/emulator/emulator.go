// Package emulator finds the cloud storage emulators that test/emulators.sh
// starts (Azurite, fake-gcs-server) for the tests that need one: a test
// skips when its emulator's variable is unset, and fails instead with
// CI=true, where a run that silently skipped is no run.
package emulator

import (
	"os"
	"strings"
	"testing"
)

// Variables test/emulators.sh exports.
const (
	// AzuriteEnv is Azurite's account URL,
	// http://127.0.0.1:PORT/devstoreaccount1.
	AzuriteEnv = "NODEID_TEST_AZURITE_URL"
	// FakeGCSEnv is fake-gcs-server's base URL, http://127.0.0.1:PORT (the
	// JSON API is under /storage/v1/).
	FakeGCSEnv = "NODEID_TEST_FAKEGCS_URL"
)

// Azurite returns Azurite's account URL, or skips t (fails it with CI=true).
func Azurite(t testing.TB) string { return url(t, AzuriteEnv, "azurite") }

// FakeGCS returns fake-gcs-server's base URL, or skips t (fails it with
// CI=true).
func FakeGCS(t testing.TB) string { return url(t, FakeGCSEnv, "fakegcs") }

// FakeGCSEndpoint returns the JSON API endpoint of fake-gcs-server at base,
// as gcsstore.Config.Endpoint and --gcs-endpoint take it.
func FakeGCSEndpoint(base string) string { return strings.TrimRight(base, "/") + "/storage/v1/" }

func url(t testing.TB, env, name string) string {
	t.Helper()
	u := os.Getenv(env)
	if u != "" {
		return u
	}
	if os.Getenv("CI") == "true" {
		t.Fatalf("%s is not set (CI=true, so this is a failure, not a skip; test/all.sh starts the emulators with test/emulators.sh)", env)
	}
	t.Skipf(`%s is not set (start the emulator: eval "$(bash test/emulators.sh start %s)")`, env, name)
	return ""
}
