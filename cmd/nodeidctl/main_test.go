package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/nodeid/nodeid/s3store/s3fake"
)

// TestBinaryOnS3Fake builds nodeidctl and runs it as an operator would, against
// an embedded gofakes3 server configured through NODEID_* variables: init, then
// status --json, then a bad variable.
func TestBinaryOnS3Fake(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary")
	}
	dir := t.TempDir()
	bin := filepath.Join(dir, "nodeidctl")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	srv, err := s3fake.Start(s3fake.Config{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = srv.Close() })
	env := []string{
		"HOME=" + dir,
		"AWS_CONFIG_FILE=" + filepath.Join(dir, "none"),
		"AWS_SHARED_CREDENTIALS_FILE=" + filepath.Join(dir, "none"),
		"AWS_EC2_METADATA_DISABLED=true",
		"AWS_ACCESS_KEY_ID=" + s3fake.AccessKeyID,
		"AWS_SECRET_ACCESS_KEY=" + s3fake.SecretAccessKey,
		"NODEID_BUCKET=" + srv.Bucket(),
		"NODEID_S3_ENDPOINT=" + srv.URL(),
		"NODEID_S3_PATH_STYLE=true",
		"NODEID_REGION=us-east-1",
	}
	run := func(extraEnv []string, args ...string) (int, string, string) {
		t.Helper()
		cmd := exec.Command(bin, args...)
		cmd.Env = append(append([]string{}, env...), extraEnv...)
		var out, errb bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &errb
		err := cmd.Run()
		var exit *exec.ExitError
		switch {
		case err == nil:
			return 0, out.String(), errb.String()
		case errors.As(err, &exit):
			return exit.ExitCode(), out.String(), errb.String()
		}
		t.Fatalf("run %v: %v", args, err)
		return 0, "", ""
	}

	code, stdout, stderr := run(nil, "init", "--cluster-size", "5")
	if code != 0 || !strings.Contains(stdout, "created 5 lease object(s), free: IDs 0-4") {
		t.Fatalf("init: exit %d\n%s%s", code, stdout, stderr)
	}
	code, stdout, stderr = run(nil, "status", "--json")
	if code != 0 {
		t.Fatalf("status: exit %d\n%s%s", code, stdout, stderr)
	}
	var s struct {
		Prefix   string `json:"prefix"`
		Manifest struct {
			State       string `json:"state"`
			ClusterSize int    `json:"clusterSize"`
			NodeBits    int    `json:"nodeBits"`
		} `json:"manifest"`
		Leases []struct {
			NodeID  int     `json:"nodeId"`
			State   string  `json:"state"`
			Holder  *string `json:"holder"`
			Version *int64  `json:"version"`
			AgeMs   *int64  `json:"ageMs"`
		} `json:"leases"`
		Counts map[string]int `json:"counts"`
	}
	if err := json.Unmarshal([]byte(stdout), &s); err != nil {
		t.Fatalf("status --json: %v\n%s", err, stdout)
	}
	if s.Prefix != "nodeid/" || s.Manifest.State != "ok" || s.Manifest.ClusterSize != 5 || s.Manifest.NodeBits != 10 ||
		len(s.Leases) != 5 || s.Counts["free"] != 5 {
		t.Fatalf("status --json = %+v", s)
	}
	for i, l := range s.Leases {
		if l.NodeID != i || l.State != "free" || l.Holder == nil || *l.Holder != "" || l.Version == nil || *l.Version != 0 || l.AgeMs == nil {
			t.Errorf("lease %d = %+v", i, l)
		}
	}

	code, _, stderr = run([]string{"NODEID_MAX_LEASE_DURATION=forever"}, "status")
	if code != 2 || !strings.Contains(stderr, "NODEID_MAX_LEASE_DURATION") {
		t.Fatalf("bad variable: exit %d, stderr %s", code, stderr)
	}
}
