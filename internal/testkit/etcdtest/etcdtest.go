// Package etcdtest starts a real etcd server, the pinned one that
// test/etcd/install.sh builds, on 127.0.0.1 for a test: a single member on
// free ports and a throwaway data folder, stopped when the test ends; or a
// cluster of several members (Cluster) whose members can be killed,
// restarted and partitioned from their clients.
//
// The binary is NODEID_ETCD_BIN, else <NODEID_SERVER_CACHE or
// ~/.cache/nodeid-servers>/bin/etcd, else etcd on PATH. Without one the test
// is skipped, unless CI=true: then it fails.
package etcdtest

import (
	"context"
	"crypto/tls"
	"fmt"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/nodeid/nodeid/internal/testkit/serverproc"
)

// Binary returns the etcd binary to run, or "" when there is none.
func Binary() string { return serverproc.Binary("NODEID_ETCD_BIN", "etcd") }

// Server is one etcd member on 127.0.0.1.
type Server struct {
	bin, dir string
	// Endpoint is the client address, host:port.
	Endpoint           string
	clientURL, peerURL string
	name               string // member name
	initialCluster     string // --initial-cluster: name=peerURL,...
	tls                *TLS

	// Proc runs the member's process: Stop stops it with a signal and
	// waits for it to exit (its data stays), Log returns its log so far.
	serverproc.Proc
}

// Start starts etcd for t, or skips t when no binary is found outside CI. It
// is stopped when t ends.
func Start(t testing.TB) *Server { t.Helper(); return StartTLS(t, nil) }

// StartTLS is Start, serving clients over TLS when tc is not nil.
func StartTLS(t testing.TB, tc *TLS) *Server {
	t.Helper()
	bin := Binary()
	if bin == "" {
		if os.Getenv("CI") == "true" {
			t.Fatal("no etcd binary (CI=true): run test/etcd/install.sh, or set NODEID_ETCD_BIN")
		}
		t.Skip("no etcd binary: run test/etcd/install.sh, or set NODEID_ETCD_BIN")
	}
	s, err := LaunchTLS(bin, t.TempDir(), tc)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Stop(syscall.SIGKILL) })
	return s
}

// TLS makes the member serve its clients over TLS: its certificate and key
// (PEM files), and when ClientCAFile is set, client certificates signed by
// that CA are required. Health is checked with Client (which must trust the
// server, and carry a client certificate when one is required).
type TLS struct {
	CertFile, KeyFile string
	ClientCAFile      string
	Client            *tls.Config
}

// Launch starts the etcd binary bin as a single member on free ports of
// 127.0.0.1, its data and log in dir, and waits until it is healthy. Stop it
// when done.
func Launch(bin, dir string) (*Server, error) { return LaunchTLS(bin, dir, nil) }

// LaunchTLS is Launch, serving clients over TLS when t is not nil.
func LaunchTLS(bin, dir string, t *TLS) (*Server, error) {
	s, err := newServer(bin, dir, "default", t)
	if err != nil {
		return nil, err
	}
	s.initialCluster = s.name + "=" + s.peerURL
	return s, s.start()
}

// newServer returns member name on free ports, not started.
func newServer(bin, dir, name string, t *TLS) (*Server, error) {
	s := &Server{bin: bin, dir: dir, tls: t, name: name, Proc: serverproc.Proc{LogPath: filepath.Join(dir, "etcd.log")}}
	cport, err := freePort()
	if err != nil {
		return nil, err
	}
	pport, err := freePort()
	if err != nil {
		return nil, err
	}
	s.Endpoint = "127.0.0.1:" + cport
	scheme := "http://"
	if t != nil {
		scheme = "https://"
	}
	s.clientURL, s.peerURL = scheme+s.Endpoint, "http://127.0.0.1:"+pport
	return s, nil
}

// freePort returns a port of 127.0.0.1 that is free now, below the kernel's
// ephemeral range: a member restarted on its port must find it free, and
// while it is down, a port of the ephemeral range may be taken by any
// outgoing connection (seen: "bind: address already in use" on a restart,
// with clients and peers dialing the member meanwhile).
func freePort() (string, error) {
	lo := ephemeralLow()
	for range 100 {
		port := freePortFloor + rand.IntN(lo-freePortFloor)
		l, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", port))
		if err != nil {
			continue
		}
		l.Close()
		return fmt.Sprint(port), nil
	}
	return "", fmt.Errorf("free port: none free in [%d, %d) after 100 tries", freePortFloor, lo)
}

// freePortFloor is the lowest port freePort draws.
const freePortFloor = 10000

// ephemeralLow returns the first port of the kernel's ephemeral range
// (Linux's ip_local_port_range; 32768, its default, elsewhere).
func ephemeralLow() int {
	b, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range")
	if err != nil {
		return 32768
	}
	f := strings.Fields(string(b))
	if len(f) == 0 {
		return 32768
	}
	lo, err := strconv.Atoi(f[0])
	if err != nil || lo <= freePortFloor+1000 {
		return 32768
	}
	return lo
}

// start runs the member and waits until it answers /health.
func (s *Server) start() error {
	if err := s.spawn(); err != nil {
		return err
	}
	return s.waitHealthy(60 * time.Second)
}

// spawn runs the member's process.
func (s *Server) spawn() error {
	args := []string{"--name", s.name, "--data-dir", filepath.Join(s.dir, "data"),
		"--listen-client-urls", s.clientURL, "--advertise-client-urls", s.clientURL,
		"--listen-peer-urls", s.peerURL, "--initial-advertise-peer-urls", s.peerURL,
		"--initial-cluster", s.initialCluster, "--log-level", "warn"}
	if t := s.tls; t != nil {
		args = append(args, "--cert-file", t.CertFile, "--key-file", t.KeyFile)
		if t.ClientCAFile != "" {
			args = append(args, "--client-cert-auth", "--trusted-ca-file", t.ClientCAFile)
		}
	}
	return s.Spawn("etcd", s.bin, args...)
}

// waitHealthy waits until the spawned member answers /health (a member of a
// cluster does once the cluster has a leader), killing it after timeout.
func (s *Server) waitHealthy(timeout time.Duration) error {
	if err := s.WaitReady(s.healthy, 50*time.Millisecond, timeout); err != nil {
		return fmt.Errorf("etcd %s %w:\n%s", s.name, err, s.Log())
	}
	return nil
}

func (s *Server) healthy() bool {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	client := http.DefaultClient
	if s.tls != nil {
		client = &http.Client{Transport: &http.Transport{TLSClientConfig: s.tls.Client}}
		defer client.CloseIdleConnections()
	}
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, s.clientURL+"/health", nil)
	resp, err := client.Do(req)
	if err != nil {
		return false
	}
	defer resp.Body.Close()
	return resp.StatusCode == http.StatusOK
}

// Restart stops the member with sig, leaves it down for down, and starts it
// again on the same ports and data: its keys and leases survive.
func (s *Server) Restart(sig syscall.Signal, down time.Duration) error {
	s.Stop(sig)
	time.Sleep(down)
	return s.start()
}
