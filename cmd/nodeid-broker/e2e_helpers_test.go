package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/nodeid/nodeid/internal/testkit/brokerproc"
	"github.com/nodeid/nodeid/node"
	"github.com/nodeid/nodeid/s3store/s3fake"
)

// The exit codes docs/nodeid-broker.md documents, as the tests expect them.
const (
	exitOK        = 0
	exitLeaseLost = 3
)

// brokerEnv returns the environment of a broker process: no AWS configuration
// of the machine's, the static credentials any gofakes3 accepts, and extra.
func brokerEnv(t *testing.T, extra ...string) []string {
	home := t.TempDir()
	env := []string{
		"HOME=" + home,
		"AWS_CONFIG_FILE=" + filepath.Join(home, "none"),
		"AWS_SHARED_CREDENTIALS_FILE=" + filepath.Join(home, "none"),
		"AWS_EC2_METADATA_DISABLED=true",
		"AWS_ACCESS_KEY_ID=" + s3fake.AccessKeyID,
		"AWS_SECRET_ACCESS_KEY=" + s3fake.SecretAccessKey,
	}
	return append(env, extra...)
}

// proc is one nodeid-broker process (brokerproc, with the test's name and
// failure handling).
type proc struct {
	*brokerproc.Proc
	t        *testing.T
	name     string
	exited   <-chan struct{}
	httpAddr string // bound address of the HTTP server, from its log
}

// startBroker starts nodeid-broker serve with args (and --http-addr on a free
// loopback port), waits until its HTTP server listens, and kills it at the
// end of the test.
func startBroker(t *testing.T, name string, env []string, args ...string) *proc {
	t.Helper()
	args = append([]string{"serve", "--http-addr", "127.0.0.1:0"}, args...)
	p := start(t, name, env, args...)
	p.httpAddr = p.waitLog("http listening", 15*time.Second)["addr"].(string)
	return p
}

// start starts the binary with args.
func start(t *testing.T, name string, env []string, args ...string) *proc {
	t.Helper()
	return startProc(t, name, brokerproc.Config{Bin: brokerBin, Args: args, Env: env})
}

// startProc starts the process cfg describes (the broker binary, or a
// program that execs it) and kills it at the end of the test.
func startProc(t *testing.T, name string, cfg brokerproc.Config) *proc {
	t.Helper()
	bp, err := brokerproc.Start(cfg)
	if err != nil {
		t.Fatal(err)
	}
	p := &proc{Proc: bp, t: t, name: name, exited: bp.Exited()}
	t.Cleanup(func() {
		p.Kill()
		log := p.Log()
		if strings.Contains(log, "WARNING: DATA RACE") {
			t.Errorf("broker %s: data race:\n%s", name, log)
		} else if t.Failed() {
			t.Logf("broker %s stderr:\n%s", name, log)
		}
	})
	return p
}

// log returns everything the process wrote on stderr so far.
func (p *proc) log() string { return p.Log() }

// findLog returns the first JSON log line whose msg is msg, or nil.
func (p *proc) findLog(msg string) map[string]any { return p.Find(msg) }

// logTime returns the time of a log line from findLog, or the zero time.
func logTime(line map[string]any) time.Time {
	s, _ := line["time"].(string)
	t, _ := time.Parse(time.RFC3339Nano, s)
	return t
}

// waitLog waits for a JSON log line whose msg is msg and returns it.
func (p *proc) waitLog(msg string, timeout time.Duration) map[string]any {
	p.t.Helper()
	m, err := p.WaitLog(msg, timeout)
	if err != nil {
		p.t.Fatalf("broker %s: %v:\n%s", p.name, err, p.Log())
	}
	return m
}

// url returns the URL of path on the broker.
func (p *proc) url(path string) string { return "http://" + p.httpAddr + path }

var httpClient = &http.Client{Timeout: 5 * time.Second}

// get returns the status code and body of GET path.
func (p *proc) get(path string) (int, []byte, error) {
	resp, err := httpClient.Get(p.url(path))
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	return resp.StatusCode, body, err
}

// getJSON decodes GET path into v and returns the status code.
func (p *proc) getJSON(path string, v any) (int, error) {
	code, body, err := p.get(path)
	if err != nil {
		return code, err
	}
	if err := json.Unmarshal(body, v); err != nil {
		return code, fmt.Errorf("GET %s: %w: %s", path, err, body)
	}
	return code, nil
}

// status returns GET /status.
func (p *proc) status() (node.StatusResponse, error) {
	var s node.StatusResponse
	code, err := p.getJSON("/status", &s)
	if err == nil && code != http.StatusOK {
		err = fmt.Errorf("GET /status: HTTP %d", code)
	}
	return s, err
}

// waitHeld waits until the broker's state is held and returns its status.
func (p *proc) waitHeld(timeout time.Duration) node.StatusResponse {
	p.t.Helper()
	var s node.StatusResponse
	waitFor(p.t, timeout, "broker "+p.name+" to hold a node ID", func() (bool, string) {
		select {
		case <-p.exited:
			p.t.Fatalf("broker %s exited (code %d) before holding a node ID:\n%s", p.name, p.ExitCode(), p.log())
		default:
		}
		var err error
		s, err = p.status()
		if err != nil {
			return false, err.Error()
		}
		return s.State == node.StateHeld, fmt.Sprintf("%+v", s)
	})
	return s
}

// waitTakeover waits until the broker holds prev's node ID at the next
// version, taken from state from ("free": released; "expired"), and returns
// its status.
func (p *proc) waitTakeover(prev node.StatusResponse, from string, timeout time.Duration) node.StatusResponse {
	p.t.Helper()
	s := p.waitHeld(timeout)
	if s.NodeID != prev.NodeID || s.Version != prev.Version+1 {
		p.t.Fatalf("%s holds node %d version %d; want node %d with version %d", p.name, s.NodeID, s.Version, prev.NodeID, prev.Version+1)
	}
	if got := p.waitLog("acquired node ID", time.Second)["from"]; got != from {
		p.t.Errorf("%s took node %d from state %v, want %s", p.name, s.NodeID, got, from)
	}
	return s
}

// signal sends sig to the process.
func (p *proc) signal(sig syscall.Signal) {
	p.t.Helper()
	if err := p.Signal(sig); err != nil {
		p.t.Fatalf("signal %v to broker %s: %v", sig, p.name, err)
	}
}

// waitExit waits for the process to exit and returns its exit code.
func (p *proc) waitExit(timeout time.Duration) int {
	p.t.Helper()
	select {
	case <-p.exited:
		return p.ExitCode()
	case <-time.After(timeout):
		p.t.Fatalf("broker %s did not exit within %v:\n%s", p.name, timeout, p.log())
		return 0
	}
}

// waitFor polls cond every 25 ms until it holds, failing the test after
// timeout with the last detail cond gave.
func waitFor(t *testing.T, timeout time.Duration, what string, cond func() (bool, string)) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		ok, detail := cond()
		if ok {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %v waiting for %s; last: %s", timeout, what, detail)
		}
		time.Sleep(25 * time.Millisecond)
	}
}

// runBin runs the broker binary to completion and returns its exit code,
// stdout and stderr.
func runBin(t *testing.T, env []string, args ...string) (int, string, string) {
	t.Helper()
	return runProgram(t, brokerBin, env, args...)
}

// runCtl runs nodeidctl as runBin runs the broker.
func runCtl(t *testing.T, env []string, args ...string) (int, string, string) {
	t.Helper()
	return runProgram(t, ctlBin, env, args...)
}

// runProgram runs bin to completion and returns its exit code, stdout and
// stderr.
func runProgram(t *testing.T, bin string, env []string, args ...string) (int, string, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Env = env
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	var ee *exec.ExitError
	switch {
	case err == nil:
		return 0, out.String(), errb.String()
	case errors.As(err, &ee):
		return ee.ExitCode(), out.String(), errb.String()
	}
	t.Fatalf("run %v: %v", args, err)
	return 0, "", ""
}

// cutProxy is a TCP proxy to an S3 server that the test can cut: Cut closes
// every open connection and black-holes new ones (accepted, never answered).
type cutProxy struct {
	ln     net.Listener
	target string

	mu    sync.Mutex
	cut   bool
	conns []net.Conn
}

func newCutProxy(t *testing.T, target string) *cutProxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &cutProxy{ln: ln, target: target}
	go p.serve()
	t.Cleanup(func() {
		_ = ln.Close()
		p.closeAll()
	})
	return p
}

// URL returns the proxy's endpoint.
func (p *cutProxy) URL() string { return "http://" + p.ln.Addr().String() }

func (p *cutProxy) serve() {
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		p.mu.Lock()
		p.conns = append(p.conns, c)
		cut := p.cut
		p.mu.Unlock()
		if cut {
			go func() { _, _ = io.Copy(io.Discard, c) }() // black hole
			continue
		}
		go p.pipe(c)
	}
}

func (p *cutProxy) pipe(c net.Conn) {
	up, err := net.Dial("tcp", p.target)
	if err != nil {
		_ = c.Close()
		return
	}
	p.mu.Lock()
	p.conns = append(p.conns, up)
	p.mu.Unlock()
	go func() { _, _ = io.Copy(up, c); _ = up.Close() }()
	_, _ = io.Copy(c, up)
	_ = c.Close()
}

// Cut cuts the broker off its S3.
func (p *cutProxy) Cut() {
	p.mu.Lock()
	p.cut = true
	p.mu.Unlock()
	p.closeAll()
}

func (p *cutProxy) closeAll() {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, c := range p.conns {
		_ = c.Close()
	}
	p.conns = nil
}

// fileExists reports whether path exists.
func fileExists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}

// startFakeS3 starts an embedded S3 (gofakes3) on 127.0.0.1 for the test and
// closes it at the end.
func startFakeS3(t *testing.T) *s3fake.Server {
	t.Helper()
	srv, err := s3fake.Start(s3fake.Config{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = srv.Close() })
	return srv
}

// exitLine returns the error of the log line a broker that failed exits with
// (the one JSON line with exitCode and err), and how many lines of stderr
// repeat it: 1 when it is printed once.
func exitLine(stderr string) (string, int) {
	var msg string
	for _, line := range strings.Split(stderr, "\n") {
		var m map[string]any
		if json.Unmarshal([]byte(line), &m) != nil || m["exitCode"] == nil {
			continue
		}
		if s, ok := m["err"].(string); ok {
			msg = s
		}
	}
	if msg == "" {
		return "", 0
	}
	n := 0
	for _, line := range strings.Split(stderr, "\n") {
		var m map[string]any
		if json.Unmarshal([]byte(line), &m) == nil && m["err"] == msg || strings.Contains(line, msg) {
			n++
		}
	}
	return msg, n
}
