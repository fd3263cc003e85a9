// Package etcdtest starts a real etcd server, the pinned one that
// test/etcd/install.sh builds, on 127.0.0.1 for a test: a single member on
// free ports and a throwaway data folder, stopped when the test ends.
//
// The binary is NODEID_ETCD_BIN, else <NODEID_SERVER_CACHE or
// ~/.cache/nodeid-servers>/bin/etcd, else etcd on PATH. Without one the test
// is skipped, unless CI=true: then it fails.
package etcdtest

import (
	"context"
	"fmt"
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
)

// Binary returns the etcd binary to run, or "" when there is none.
func Binary() string {
	if b := os.Getenv("NODEID_ETCD_BIN"); b != "" {
		return b
	}
	cache := os.Getenv("NODEID_SERVER_CACHE")
	if cache == "" {
		if home, err := os.UserHomeDir(); err == nil {
			cache = filepath.Join(home, ".cache", "nodeid-servers")
		}
	}
	if b := filepath.Join(cache, "bin", "etcd"); cache != "" && isExec(b) {
		return b
	}
	if b, err := exec.LookPath("etcd"); err == nil {
		return b
	}
	return ""
}

func isExec(p string) bool {
	fi, err := os.Stat(p)
	return err == nil && fi.Mode().IsRegular() && fi.Mode()&0o111 != 0
}

// Server is one etcd member on 127.0.0.1.
type Server struct {
	bin, dir string
	// Endpoint is the client address, host:port.
	Endpoint           string
	clientURL, peerURL string
	logPath            string

	mu     sync.Mutex
	cmd    *exec.Cmd
	exited chan struct{}
}

// Start starts etcd for t, or skips t when no binary is found outside CI. It
// is stopped when t ends.
func Start(t testing.TB) *Server {
	t.Helper()
	bin := Binary()
	if bin == "" {
		if os.Getenv("CI") == "true" {
			t.Fatal("no etcd binary (CI=true): run test/etcd/install.sh, or set NODEID_ETCD_BIN")
		}
		t.Skip("no etcd binary: run test/etcd/install.sh, or set NODEID_ETCD_BIN")
	}
	s, err := Launch(bin, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Stop(syscall.SIGKILL) })
	return s
}

// Launch starts the etcd binary bin as a single member on free ports of
// 127.0.0.1, its data and log in dir, and waits until it is healthy. Stop it
// when done.
func Launch(bin, dir string) (*Server, error) {
	s := &Server{bin: bin, dir: dir, logPath: filepath.Join(dir, "etcd.log")}
	cport, err := freePort()
	if err != nil {
		return nil, err
	}
	pport, err := freePort()
	if err != nil {
		return nil, err
	}
	s.Endpoint = "127.0.0.1:" + cport
	s.clientURL, s.peerURL = "http://"+s.Endpoint, "http://127.0.0.1:"+pport
	return s, s.start()
}

func freePort() (string, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", fmt.Errorf("free port: %w", err)
	}
	defer l.Close()
	return fmt.Sprint(l.Addr().(*net.TCPAddr).Port), nil
}

// start runs the member and waits until it answers /health.
func (s *Server) start() error {
	logf, err := os.OpenFile(s.logPath, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	if err != nil {
		return fmt.Errorf("etcd log: %w", err)
	}
	cmd := exec.Command(s.bin, "--name", "default", "--data-dir", filepath.Join(s.dir, "data"),
		"--listen-client-urls", s.clientURL, "--advertise-client-urls", s.clientURL,
		"--listen-peer-urls", s.peerURL, "--initial-advertise-peer-urls", s.peerURL,
		"--initial-cluster", "default="+s.peerURL, "--log-level", "warn")
	cmd.Stdout, cmd.Stderr = logf, logf
	if err := cmd.Start(); err != nil {
		logf.Close()
		return fmt.Errorf("start etcd %s: %w", s.bin, err)
	}
	exited := make(chan struct{})
	go func() { _ = cmd.Wait(); logf.Close(); close(exited) }()
	s.mu.Lock()
	s.cmd, s.exited = cmd, exited
	s.mu.Unlock()
	deadline := time.Now().Add(60 * time.Second)
	for {
		select {
		case <-exited:
			return fmt.Errorf("etcd exited at start:\n%s", s.Log())
		default:
		}
		if healthy(s.clientURL) {
			return nil
		}
		if time.Now().After(deadline) {
			s.Stop(syscall.SIGKILL)
			return fmt.Errorf("etcd not healthy after 60 s:\n%s", s.Log())
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func healthy(url string) bool {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, url+"/health", nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return false
	}
	defer resp.Body.Close()
	return resp.StatusCode == http.StatusOK
}

// Stop stops the member with sig and waits for it to exit. Its data stays.
func (s *Server) Stop(sig syscall.Signal) {
	s.mu.Lock()
	cmd, exited := s.cmd, s.exited
	s.cmd = nil
	s.mu.Unlock()
	if cmd == nil {
		return
	}
	_ = cmd.Process.Signal(sig)
	<-exited
}

// Restart stops the member with sig, leaves it down for down, and starts it
// again on the same ports and data: its keys and leases survive.
func (s *Server) Restart(sig syscall.Signal, down time.Duration) error {
	s.Stop(sig)
	time.Sleep(down)
	return s.start()
}

// Log returns the member's log so far.
func (s *Server) Log() string {
	b, _ := os.ReadFile(s.logPath)
	return strings.TrimSpace(string(b))
}
