//go:build linux

package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// interpreter returns the path of name (python3, node), skipping the test
// when it is missing, except with CI=true: test/all.sh installs both.
func interpreter(t *testing.T, name string) string {
	t.Helper()
	p, err := exec.LookPath(name)
	if err == nil {
		return p
	}
	if os.Getenv("CI") == "true" {
		t.Fatalf("%s is not installed (test/all.sh installs it)", name)
	}
	t.Skipf("%s is not installed: %v", name, err)
	return ""
}

// TestRunNonGoReaders runs the id-file readers of examples/idfile as run's
// child, as an application not written in Go uses them: each reads the id
// file the broker wrote, finds the node ID and version the environment
// names, usable for a while, and exits 0; the broker exits with that.
func TestRunNonGoReaders(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		lang, interpreter, script string
	}{
		{"python", "python3", "../../examples/idfile/python/example.py"},
		{"node", "node", "../../examples/idfile/node/example.mjs"},
	} {
		t.Run(tc.lang, func(t *testing.T) {
			t.Parallel()
			bin := interpreter(t, tc.interpreter)
			script, err := filepath.Abs(tc.script)
			if err != nil {
				t.Fatal(err)
			}
			idFile := filepath.Join(t.TempDir(), "id.json")
			env := brokerEnv(t, "PATH="+os.Getenv("PATH"))
			code, out, errOut := runBin(t, env, "run", "--embedded-s3", "127.0.0.1:0", "--http-addr", "127.0.0.1:0",
				"--id-file", idFile, "--lease-duration", "5s", "--cluster-size", "1", "--", bin, script)
			want := tc.lang + ": node 0 version 1, usable for "
			if code != 0 || !strings.Contains(out, want) {
				t.Fatalf("exit %d, want 0 with %q on stdout:\n%s%s", code, want, out, errOut)
			}
		})
	}
}
