package doccheck

import (
	"bufio"
	"context"
	"go/format"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/nodeid/nodeid/s3store/s3fake"
)

// embedMarker precedes the README's embed snippet, a whole Go program.
const embedMarker = "<!-- snippet: embed -->\n```go\n"

// TestREADMEEmbedSnippet builds the README's embed snippet as printed, as a
// program in a module of its own that requires nodeid (replaced by this
// checkout), and runs it on an embedded S3 (gofakes3, as nodeid-broker
// local-s3 serves it) at the address the snippet names, with a free port for
// its HTTP address: it must issue an ID, log through the logger it sets, and
// exit 0 on SIGTERM (the ID released).
func TestREADMEEmbedSnippet(t *testing.T) {
	text := read(t, "README.md")
	i := strings.Index(text, embedMarker)
	if i < 0 {
		t.Fatalf("README.md has no %q", embedMarker)
	}
	src, _, ok := strings.Cut(text[i+len(embedMarker):], "```")
	if !ok {
		t.Fatal("the README's embed snippet has no closing fence")
	}
	if f, err := format.Source([]byte(src)); err != nil || string(f) != src {
		t.Fatalf("the README's embed snippet is not gofmt-formatted (%v):\n%s", err, src)
	}
	const s3Addr, httpAddr = `"http://127.0.0.1:9000"`, `":8080"`
	for _, s := range []string{s3Addr, httpAddr} {
		if !strings.Contains(src, s) {
			t.Fatalf("the snippet no longer has %s:\n%s", s, src)
		}
	}
	srv, err := s3fake.Start(s3fake.Config{}) // the bucket "nodeid", as local-s3's default
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = srv.Close() })
	src = strings.NewReplacer(s3Addr, `"`+srv.URL()+`"`, httpAddr, `"127.0.0.1:`+freePort(t)+`"`).Replace(src)

	dir := module(t)
	writeFile(t, dir, "main.go", src)
	build := exec.Command("go", "build", "-o", "app", ".")
	build.Dir = dir
	build.Env = append(os.Environ(), "GOFLAGS=-mod=mod")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("the README's embed snippet does not build as printed: %v\n%s\n%s", err, out, src)
	}

	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, filepath.Join(dir, "app"))
	cmd.Env = append(os.Environ(), "AWS_EC2_METADATA_DISABLED=true")
	var logs strings.Builder
	cmd.Stderr = &logs
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill() })
	issued := regexp.MustCompile(`^node \d+ issued \d+ <nil>$`)
	sc := bufio.NewScanner(stdout)
	var lines []string
	for sc.Scan() && !issued.MatchString(sc.Text()) {
		lines = append(lines, sc.Text())
	}
	if !issued.MatchString(sc.Text()) {
		_ = cmd.Process.Kill()
		err := cmd.Wait()
		t.Fatalf("the snippet issued no ID (%v); stdout:\n%s\nstderr:\n%s", err, strings.Join(lines, "\n"), logs.String())
	}
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	for sc.Scan() {
	}
	if err := cmd.Wait(); err != nil {
		t.Fatalf("the snippet after SIGTERM: %v, want exit 0\n%s", err, logs.String())
	}
	for _, want := range []string{`"msg":"serving IDs"`, `"msg":"stopping: fencing and releasing the node ID"`} {
		if !strings.Contains(logs.String(), want) {
			t.Errorf("the snippet's log has no %s: its logger is not the library's\n%s", want, logs.String())
		}
	}
}
