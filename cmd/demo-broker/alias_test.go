package main

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/nodeid/nodeid/internal/testkit/brokerproc"
)

// demoBin builds the demo-broker binary into a temporary directory.
func demoBin(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "demo-broker")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	return bin
}

// runDemoBin runs the binary to completion and returns its exit code and
// output.
func runDemoBin(t *testing.T, bin string, args ...string) (int, string) {
	t.Helper()
	cmd := exec.Command(bin, args...)
	cmd.Env = append(os.Environ(), "AWS_EC2_METADATA_DISABLED=true")
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	var ee *exec.ExitError
	switch {
	case err == nil:
		return 0, out.String()
	case errors.As(err, &ee):
		return ee.ExitCode(), out.String()
	}
	t.Fatalf("%v: %v", args, err)
	return 0, ""
}

// TestBrokerAliases runs nodeid-broker's commands under their old name, as
// the black-box tests of DESIGN.md section 9 do: demo-broker serve holds an
// ID on an embedded S3 (its healthcheck says so) and exits 0 on SIGTERM,
// demo-broker run exits with its command's status, and errors and help name
// demo-broker.
func TestBrokerAliases(t *testing.T) {
	if testing.Short() {
		t.Skip("builds demo-broker")
	}
	bin := demoBin(t)
	for _, tc := range []struct {
		args     []string
		code     int
		contains string
	}{
		{[]string{"serve", "--help"}, 0, "Usage: demo-broker serve [flags]"},
		{[]string{"run", "--help"}, 0, "Usage: demo-broker run [flags] -- CMD [ARGS...]"},
		{[]string{"healthcheck", "--help"}, 0, "Usage: demo-broker healthcheck [flags]"},
		{[]string{"serve", "--bukket", "b"}, 2, "demo-broker serve: flag provided but not defined: -bukket"},
		{[]string{"--help"}, 0, "The broker one deploys is nodeid-broker"},
		{[]string{"run", "--embedded-s3", "127.0.0.1:0", "--http-addr", "127.0.0.1:0", "--", "sh", "-c", "exit 7"}, 7, `"exitCode":7`},
	} {
		if code, out := runDemoBin(t, bin, tc.args...); code != tc.code || !strings.Contains(out, tc.contains) {
			t.Errorf("demo-broker %s: exit %d, want %d with %q in:\n%s", strings.Join(tc.args, " "), code, tc.code, tc.contains, out)
		}
	}

	p, err := brokerproc.Start(brokerproc.Config{Bin: bin, Env: append(os.Environ(), "AWS_EC2_METADATA_DISABLED=true"),
		Args: []string{"serve", "--embedded-s3", "127.0.0.1:0", "--http-addr", "127.0.0.1:0", "--cluster-size", "2"}})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Kill()
	addr, err := p.WaitAddr("http listening", 30*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.WaitLog("serving IDs", 30*time.Second); err != nil {
		t.Fatalf("%v:\n%s", err, p.Log())
	}
	if code, out := runDemoBin(t, bin, "healthcheck", "--http-addr", addr); code != 0 || !strings.HasPrefix(out, "healthy: ") {
		t.Errorf("demo-broker healthcheck: exit %d: %s", code, out)
	}
	if err := p.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case <-p.Exited():
	case <-time.After(30 * time.Second):
		t.Fatalf("demo-broker serve did not exit after SIGTERM:\n%s", p.Log())
	}
	if code := p.ExitCode(); code != 0 || p.Find("stopped") == nil {
		t.Errorf("demo-broker serve after SIGTERM: exit %d:\n%s", code, p.Log())
	}
}

// TestDemoFlagsWithoutDemo: the demo's flags work without the word "demo"
// (demo-broker --fast, as the README's demo --fast reads): they reach the
// demo's own flags, which answer --help with the demo's usage and refuse a
// flag they do not know.
func TestDemoFlagsWithoutDemo(t *testing.T) {
	for _, tc := range []struct {
		args     []string
		code     int
		contains string
	}{
		{[]string{"--fast", "--help"}, 0, "short timeline"},
		{[]string{"--fast", "--brokers", "0"}, 2, "--brokers 0 outside 1..32"},
		{[]string{"--bogus"}, 2, "flag provided but not defined: -bogus"},
		{[]string{"bogus"}, 2, `unknown command "bogus"`},
	} {
		var out, errOut bytes.Buffer
		code := run(t.Context(), tc.args, &out, &errOut)
		if code != tc.code || !strings.Contains(out.String()+errOut.String(), tc.contains) {
			t.Errorf("demo-broker %s: exit %d, want %d with %q:\n%s%s", strings.Join(tc.args, " "), code, tc.code, tc.contains, out.String(), errOut.String())
		}
	}
}
