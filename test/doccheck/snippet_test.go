package doccheck

import (
	"context"
	"net"
	"os"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// block returns the first fenced block of lang after the heading in doc.
func block(t *testing.T, doc, heading, lang string) string {
	t.Helper()
	text := read(t, doc)
	i := strings.Index(text, heading)
	if i < 0 {
		t.Fatalf("%s has no heading %q", doc, heading)
	}
	m := regexp.MustCompile("(?s)```" + lang + "\n(.*?)```").FindStringSubmatch(text[i:])
	if m == nil {
		t.Fatalf("%s: no %s block after %q", doc, lang, heading)
	}
	return m[1]
}

// freePort returns a port nothing listens on now.
func freePort(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	_, p, _ := net.SplitHostPort(ln.Addr().String())
	return p
}

// TestTryItSnippet runs the "Try it locally" snippet of docs/nodeid-broker.md
// as a user would paste it into bash, with the broker built already and free
// ports for its fixed ones: a local S3 and two brokers in processes of their
// own, a wait for their health, IDs, status and a healthcheck, then a
// SIGTERM that each survives with exit 0. The snippet must not race: the
// first curl finds the broker healthy.
func TestTryItSnippet(t *testing.T) {
	if _, err := exec.LookPath("curl"); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("curl is not installed")
		}
		t.Skip("curl is not installed")
	}
	script := block(t, "docs/nodeid-broker.md", "## Try it locally", "sh")
	const build = "go build -o nodeid-broker ./cmd/nodeid-broker\n"
	if !strings.HasPrefix(script, build) {
		t.Fatalf("the snippet no longer starts with %q:\n%s", build, script)
	}
	script = "cp " + strconv.Quote(command("nodeid-broker")) + " nodeid-broker\n" + script[len(build):]
	var pairs []string
	for _, p := range []string{"9000", "8081", "8082", "7946", "7947"} {
		if !strings.Contains(script, p) {
			t.Fatalf("the snippet no longer uses port %s:\n%s", p, script)
		}
		pairs = append(pairs, p, freePort(t))
	}
	script = strings.NewReplacer(pairs...).Replace(script)

	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, "bash", "-e", "-c", script)
	cmd.Dir = t.TempDir()
	cmd.Env = append(os.Environ(), "HOME="+cmd.Dir)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	// A snippet that ends early (bash -e stops at a failed command) leaves its
	// background processes holding the output pipe: stop waiting for it then,
	// so that the failure is reported (the cleanup kills the group).
	cmd.WaitDelay = 5 * time.Second
	t.Cleanup(func() {
		if cmd.Process != nil {
			_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		}
	})
	out, err := cmd.CombinedOutput()
	text := string(out)
	if err != nil {
		t.Fatalf("the snippet failed: %v\n%s", err, text)
	}
	ids := regexp.MustCompile(`\{"nodeId":\d+,"version":\d+,"ids":\["\d+","\d+","\d+"\]\}`)
	for _, want := range []*regexp.Regexp{ids, regexp.MustCompile(`"state":"held"`), regexp.MustCompile(`(?m)^healthy: \{"status":"ok"\}\n0$`)} {
		if !want.MatchString(text) {
			t.Errorf("the snippet's output has no %s:\n%s", want, text)
		}
	}
	for _, bad := range []string{`"status":"unavailable"`, "exiting after"} {
		if strings.Contains(text, bad) {
			t.Errorf("the snippet's output has %q:\n%s", bad, text)
		}
	}
}
