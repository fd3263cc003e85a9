package main

import (
	"net/http"
	"path/filepath"
	"slices"
	"syscall"
	"testing"
	"time"
)

// TestServeHealthWaitsForTheIDFile: with --id-file, /health and /ready answer
// 200 only once the file is written, so that an application that waits for
// the broker's health (ECS dependsOn HEALTHY) and then reads the file finds
// it. The successor takes a node ID whose floor, its predecessor's
// reservation on a clock 3 s ahead, is seconds ahead of its own clock: it
// holds the ID and waits for its clock to pass the floor before it writes the
// file. The test polls both checks meanwhile and fails at the first 200
// answered while the file was not there.
func TestServeHealthWaitsForTheIDFile(t *testing.T) {
	t.Parallel()
	srv := startFakeS3(t)
	env := brokerEnv(t)
	args := slices.Concat([]string{"--bucket", srv.Bucket(), "--s3-endpoint", srv.URL(), "--s3-path-style", "--cluster-size", "1"}, shortLease)
	dir := t.TempDir()
	ahead := startBroker(t, "ahead", env, slices.Concat(args, []string{"--debug-clock-offset", "3s",
		"--id-file", filepath.Join(dir, "ahead.json"), "--id-file-grace", "100ms"})...)
	ahead.waitHeld(15 * time.Second)
	ahead.waitLog("id file written", 5*time.Second)
	ahead.signal(syscall.SIGTERM)
	if code := ahead.waitExit(15 * time.Second); code != exitOK {
		t.Fatalf("predecessor: exit %d after SIGTERM", code)
	}

	idFile := filepath.Join(dir, "id.json")
	b := startBroker(t, "successor", env, slices.Concat(args, []string{"--id-file", idFile})...)
	refused := 0 // answers other than 200 while the broker held the ID
	waitFor(t, 15*time.Second, "the id file and /health 200", func() (bool, string) {
		up := 0
		for _, path := range []string{"/health", "/ready"} {
			code, body, err := b.get(path)
			if err != nil {
				return false, err.Error()
			}
			if code == http.StatusOK && !fileExists(idFile) {
				t.Fatalf("%s answered 200 while the id file %s did not exist: %s", path, idFile, body)
			}
			if code == http.StatusOK {
				up++
			} else if b.findLog("serving IDs") != nil {
				refused++
			}
		}
		return up == 2, "not yet"
	})
	if b.findLog("waiting for the host's clock to pass the node ID's floor before writing the id file") == nil || refused == 0 {
		t.Fatalf("the successor never held the ID without its id file (refused %d times): the test proved nothing", refused)
	}
	t.Logf("/health and /ready refused %d times while the ID was held and the id file not yet written", refused)
}
