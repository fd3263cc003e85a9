package doccheck

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/nodeid/nodeid/internal/testkit/brokerproc"
)

// readmeBlock is a fenced block of the README and how its claim is checked:
// run here (run), compiled here (imports and wrap, for Go), or by the test
// named in coveredBy, or not at all for the reason in notRunnable.
type readmeBlock struct {
	first       string // the block's first line starts with this
	run         func(t *testing.T, text string)
	imports     []string                 // Go: the packages the block uses
	wrap        func(body string) string // Go: a function around the block, with what it assumes declared
	coveredBy   string                   // the test that runs the claim
	notRunnable string                   // why it is not run by any test
}

// readmeBlocks lists every fenced block of the README, in order.
var readmeBlocks = []readmeBlock{
	{first: "go run ./cmd/demo-broker", run: runDemo},
	{first: "nodeid-broker serve --bucket my-bucket", run: runServeAndIDs},
	{first: "from nodeid_client import HttpGenerator", coveredBy: "clients/conformance TestREADMEQuickStart/python (pip install, then these lines, against a broker)"},
	{first: "import { HttpGenerator } from 'nodeid-client';", coveredBy: "clients/conformance TestREADMEQuickStart/node (npm install, then these lines, against a broker)"},
	{first: "nodeid-broker run --bucket my-bucket", coveredBy: "cmd/nodeid-broker TestRunChildExitStatus, TestRunChildEnvironment; clients/conformance (every client as run's child)"},
	{first: "store, err := s3store.New(", imports: []string{"context", "errors", "log/slog", "net/http", "os",
		"github.com/prometheus/client_golang/prometheus", "github.com/nodeid/nodeid/node", "github.com/nodeid/nodeid/nodeid",
		"github.com/nodeid/nodeid/s3store"},
		wrap: func(body string) string {
			return "func embed(ctx context.Context, logger *slog.Logger, registry *prometheus.Registry, startWork func(*node.Node)) {\n" +
				body + "_ = err\n_ = errors.Is\n}\n"
		}},
}

// TestREADMEBlocks checks every runnable claim of the README: each fenced
// block is listed in readmeBlocks, and is run, compiled, or names the test
// that covers it (or why nothing can). A new block fails the test until it
// is listed.
func TestREADMEBlocks(t *testing.T) {
	blocks := regexp.MustCompile("(?s)```(\\w*)\n(.*?)```").FindAllStringSubmatch(read(t, "README.md"), -1)
	if len(blocks) != len(readmeBlocks) {
		t.Errorf("the README has %d fenced blocks, readmeBlocks lists %d: list each with how it is checked", len(blocks), len(readmeBlocks))
	}
	var goFiles []string
	for i, b := range blocks {
		if i >= len(readmeBlocks) {
			t.Errorf("README block %d is not listed:\n%s", i+1, b[2])
			continue
		}
		rb := readmeBlocks[i]
		if !strings.HasPrefix(b[2], rb.first) {
			t.Errorf("README block %d starts %q, want %q: update readmeBlocks", i+1, firstLine(b[2]), rb.first)
			continue
		}
		switch {
		case rb.run != nil:
			t.Run(rb.first, func(t *testing.T) { rb.run(t, b[2]) })
		case rb.wrap != nil:
			goFiles = append(goFiles, goFile(rb.imports, rb.wrap(b[2])))
		case rb.coveredBy == "" && rb.notRunnable == "":
			t.Errorf("README block %d (%q): say how it is checked", i+1, rb.first)
		}
	}
	t.Run("go blocks compile", func(t *testing.T) { compile(t, goFiles) })
}

func firstLine(s string) string { l, _, _ := strings.Cut(s, "\n"); return l }

// goFile returns a Go file of package main with imports and body.
func goFile(imports []string, body string) string {
	var b strings.Builder
	b.WriteString("package main\n\nimport (\n")
	for _, imp := range imports {
		b.WriteString("\t\"" + imp + "\"\n")
	}
	b.WriteString(")\n\n" + body)
	return b.String()
}

// compile builds files as a module of their own that uses this checkout, as
// examples/embed does (its go.mod and go.sum, the replace pointing here).
func compile(t *testing.T, files []string) {
	t.Helper()
	if len(files) == 0 {
		t.Fatal("no Go block to compile")
	}
	dir := t.TempDir()
	abs, err := filepath.Abs(root)
	if err != nil {
		t.Fatal(err)
	}
	mod := strings.Replace(read(t, "examples/embed/go.mod"), "module example.com/embed", "module example.com/readme", 1)
	mod = strings.Replace(mod, "=> ../..", "=> "+abs, 1)
	write := func(name, text string) {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("go.mod", mod)
	write("go.sum", read(t, "examples/embed/go.sum"))
	write("main.go", "package main\n\nfunc main() {}\n")
	for i, f := range files {
		write("block"+string(rune('a'+i))+".go", f)
	}
	cmd := exec.Command("go", "vet", ".")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GOFLAGS=-mod=mod")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("the README's Go blocks do not compile: %v\n%s\n%s", err, out, strings.Join(files, "\n"))
	}
}

// runDemo runs the demo as the README's first block does (go run
// ./cmd/demo-broker is the built binary, no arguments): it exits 0 with every
// ID unique.
func runDemo(t *testing.T, text string) {
	if !strings.Contains(text, "bash test/all.sh") {
		t.Errorf("the block no longer names the test command:\n%s", text)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	out, err := exec.CommandContext(ctx, command("demo-broker")).CombinedOutput()
	if err != nil || !regexp.MustCompile(`issued [\d,]+ IDs on \d+ brokers; none repeat`).Match(out) {
		t.Fatalf("demo-broker: %v\n%s", err, out)
	}
}

// runServeAndIDs runs the README's serve command on a local S3 (the bucket
// my-bucket, no AWS) with free ports for its fixed ones and no peer to
// join, and checks /ids?n=3 answers as the README shows.
func runServeAndIDs(t *testing.T, text string) {
	serve := strings.ReplaceAll(strings.TrimSpace(strings.SplitN(text, "curl", 2)[0]), "\\\n", " ")
	args := strings.Fields(serve)[1:]
	if !strings.Contains(text, `curl -s 'localhost:8080/ids?n=3'`) || args[0] != "serve" {
		t.Fatalf("the block changed:\n%s", text)
	}
	for i := 0; i < len(args)-1; i++ {
		switch args[i] {
		case "--http-addr", "--gossip-addr":
			args[i+1] = "127.0.0.1:0"
		case "--join":
			args = append(args[:i], args[i+2:]...) // no peer runs here
			i--
		}
	}
	env := append(os.Environ(), "AWS_ACCESS_KEY_ID=any", "AWS_SECRET_ACCESS_KEY=any", "AWS_EC2_METADATA_DISABLED=true")
	s3, err := brokerproc.Start(brokerproc.Config{Bin: command("nodeid-broker"), Env: env, SysProcAttr: &syscall.SysProcAttr{Setpgid: true},
		Args: []string{"local-s3", "--addr", "127.0.0.1:0", "--bucket", "my-bucket"}})
	if err != nil {
		t.Fatal(err)
	}
	defer s3.Kill()
	addr, err := s3.WaitAddr("local S3 listening", 15*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	args = append(args, "--s3-endpoint", "http://"+addr, "--s3-path-style")
	p, err := brokerproc.Start(brokerproc.Config{Bin: command("nodeid-broker"), Env: env, Args: args})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Kill()
	httpAddr, err := p.WaitAddr("http listening", 15*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.WaitLog("serving IDs", 30*time.Second); err != nil {
		t.Fatalf("%v:\n%s", err, p.Log())
	}
	resp, err := http.Get("http://" + httpAddr + "/ids?n=3")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	var ids struct {
		NodeID  *int     `json:"nodeId"`
		Version int64    `json:"version"`
		IDs     []string `json:"ids"`
	}
	if err := json.Unmarshal(body, &ids); err != nil || resp.StatusCode != 200 || ids.NodeID == nil || ids.Version < 1 || len(ids.IDs) != 3 {
		t.Fatalf("/ids?n=3: %d %s (%v)", resp.StatusCode, body, err)
	}
	if code, _ := p.Stop(30 * time.Second); code != 0 {
		t.Errorf("serve exited %d after SIGTERM:\n%s", code, p.Log())
	}
}
