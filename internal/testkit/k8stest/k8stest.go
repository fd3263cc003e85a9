// Package k8stest starts a real kube-apiserver, the pinned one that
// test/k8s/install.sh builds, on 127.0.0.1 for a test: on a pinned etcd of
// its own (internal/testkit/etcdtest), on free ports, with certificates, a
// service-account key pair and a token file generated for the run, and
// RBAC authorization. No kubelet, no controller manager: the Lease API needs
// neither.
//
// The token file holds three users: [Admin] (in system:masters), [User] (no
// permissions until a test grants it some, for example with
// [Server.Namespace], which binds it a least-privilege Role on Leases) and
// [Nobody] (never granted anything).
//
// The binary is NODEID_KUBE_APISERVER_BIN, else <NODEID_SERVER_CACHE or
// ~/.cache/nodeid-servers>/bin/kube-apiserver, else kube-apiserver on PATH;
// etcd's is etcdtest's. Without either the test is skipped, unless CI=true:
// then it fails.
package k8stest

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/hex"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/nodeid/nodeid/internal/testkit/etcdtest"
	"github.com/nodeid/nodeid/internal/testkit/serverproc"
)

// The users of the token file.
const (
	// Admin is in system:masters: every permission.
	Admin = "nodeid-admin"
	// User has no permissions of its own; [Server.Namespace] grants it the
	// least privilege on Leases of one namespace.
	User = "nodeid-user"
	// Nobody is never granted anything.
	Nobody = "nodeid-nobody"
)

// Binary returns the kube-apiserver binary to run, or "" when there is none.
func Binary() string { return serverproc.Binary("NODEID_KUBE_APISERVER_BIN", "kube-apiserver") }

// Server is a kube-apiserver on 127.0.0.1 and the etcd under it.
type Server struct {
	// URL is the API's address, https://127.0.0.1:PORT.
	URL string
	// CAData is the PEM certificate of the CA that signed the serving
	// certificate.
	CAData []byte
	// StartTime is how long the first start took, from the process's start
	// to /readyz answering ok.
	StartTime time.Duration
	// Etcd is the etcd under the apiserver.
	Etcd *etcdtest.Server

	// Proc runs the apiserver's process: Stop stops it with a signal and
	// waits for it to exit (etcd runs on), Log returns its log so far.
	serverproc.Proc

	bin, dir string
	args     []string
	tokens   map[string]string // user -> bearer token
}

// Start starts etcd and kube-apiserver for t, or skips t when a binary is
// missing outside CI. Both are stopped when t ends.
func Start(t testing.TB) *Server {
	t.Helper()
	bin, ebin := Binary(), etcdtest.Binary()
	if bin == "" || ebin == "" {
		msg := "no kube-apiserver or etcd binary: run test/k8s/install.sh and test/etcd/install.sh, or set NODEID_KUBE_APISERVER_BIN and NODEID_ETCD_BIN"
		if os.Getenv("CI") == "true" {
			t.Fatal(msg + " (CI=true)")
		}
		t.Skip(msg)
	}
	dir := t.TempDir()
	etcd, err := etcdtest.Launch(ebin, dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { etcd.Stop(syscall.SIGKILL) })
	s, err := Launch(bin, filepath.Join(dir, "apiserver"), etcd)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Stop(syscall.SIGKILL) })
	t.Logf("k8stest: kube-apiserver at %s ready in %v", s.URL, s.StartTime.Round(time.Millisecond))
	return s
}

// Launch starts the kube-apiserver binary bin on etcd, its certificates,
// keys, token file and log in dir, and waits until /readyz answers ok. Stop
// it when done.
func Launch(bin, dir string, etcd *etcdtest.Server) (*Server, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	port, err := freePort()
	if err != nil {
		return nil, err
	}
	s := &Server{bin: bin, dir: dir, Etcd: etcd, Proc: serverproc.Proc{LogPath: filepath.Join(dir, "kube-apiserver.log")},
		URL: fmt.Sprintf("https://127.0.0.1:%d", port), tokens: map[string]string{}}
	if err := s.writeFiles(); err != nil {
		return nil, err
	}
	s.args = []string{
		"--etcd-servers=http://" + etcd.Endpoint,
		"--etcd-prefix=/registry-" + randHex(4),
		"--bind-address=127.0.0.1", "--advertise-address=127.0.0.1",
		"--endpoint-reconciler-type=none", // no kubernetes Service endpoints on loopback
		fmt.Sprintf("--secure-port=%d", port),
		"--tls-cert-file=" + filepath.Join(dir, "serving.crt"),
		"--tls-private-key-file=" + filepath.Join(dir, "serving.key"),
		"--service-account-key-file=" + filepath.Join(dir, "sa.pub"),
		"--service-account-signing-key-file=" + filepath.Join(dir, "sa.key"),
		"--service-account-issuer=https://kubernetes.default.svc",
		"--service-cluster-ip-range=10.0.0.0/24",
		"--token-auth-file=" + filepath.Join(dir, "tokens.csv"),
		"--authorization-mode=RBAC",
		"--anonymous-auth=false",
		"--profiling=false",
		"--v=0",
	}
	began := time.Now()
	if err := s.start(); err != nil {
		return nil, err
	}
	s.StartTime = time.Since(began)
	return s, nil
}

// writeFiles generates the CA, the serving certificate for 127.0.0.1, the
// service-account key pair and the token file.
func (s *Server) writeFiles() error {
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return err
	}
	now := time.Now()
	caTmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "k8stest CA"},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(24 * time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
	}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		return err
	}
	ca, err := x509.ParseCertificate(caDER)
	if err != nil {
		return err
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return err
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(2), Subject: pkix.Name{CommonName: "kube-apiserver"},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(24 * time.Hour),
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		IPAddresses: []net.IP{net.ParseIP("127.0.0.1")}, DNSNames: []string{"localhost"},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, &key.PublicKey, caKey)
	if err != nil {
		return err
	}
	s.CAData = pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: caDER})
	saKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return err
	}
	var tokens strings.Builder
	for _, u := range []struct{ name, groups string }{{Admin, "system:masters"}, {User, ""}, {Nobody, ""}} {
		tok := randHex(16)
		s.tokens[u.name] = tok
		fmt.Fprintf(&tokens, "%s,%s,%s,\"%s\"\n", tok, u.name, u.name, u.groups)
	}
	files := map[string][]byte{
		"serving.crt": pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}),
		"serving.key": mustPEMKey(key),
		"sa.key":      mustPEMKey(saKey),
		"sa.pub":      mustPEMPub(&saKey.PublicKey),
		"tokens.csv":  []byte(tokens.String()),
	}
	for name, b := range files {
		if err := os.WriteFile(filepath.Join(s.dir, name), b, 0o600); err != nil {
			return err
		}
	}
	return nil
}

func mustPEMKey(k *ecdsa.PrivateKey) []byte {
	der, err := x509.MarshalECPrivateKey(k)
	if err != nil {
		panic(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: der})
}

func mustPEMPub(k *ecdsa.PublicKey) []byte {
	der, err := x509.MarshalPKIXPublicKey(k)
	if err != nil {
		panic(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: der})
}

// freePort returns a port of 127.0.0.1 free now, below the kernel's
// ephemeral range (from 10000 to 32767), so that a restart finds it free
// again: while the apiserver is down, an outgoing connection may take any
// port of the ephemeral range.
func freePort() (int, error) {
	for range 100 {
		n, err := rand.Int(rand.Reader, big.NewInt(32768-10000))
		if err != nil {
			return 0, err
		}
		port := 10000 + int(n.Int64())
		l, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", port))
		if err != nil {
			continue
		}
		l.Close()
		return port, nil
	}
	return 0, fmt.Errorf("free port: none free in [10000, 32768) after 100 tries")
}

func randHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// Token returns user's bearer token.
func (s *Server) Token(user string) string { return s.tokens[user] }

// start runs the apiserver and waits until /readyz answers ok (at most
// two minutes).
func (s *Server) start() error {
	if err := s.Spawn("kube-apiserver", s.bin, s.args...); err != nil {
		return err
	}
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(s.CAData)
	client := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}, Timeout: 5 * time.Second}
	defer client.CloseIdleConnections()
	if err := s.WaitReady(func() bool { return s.ready(client) }, 100*time.Millisecond, 2*time.Minute); err != nil {
		return fmt.Errorf("kube-apiserver %w:\n%s", err, s.tail())
	}
	return nil
}

func (s *Server) ready(client *http.Client) bool {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, s.URL+"/readyz", nil)
	req.Header.Set("Authorization", "Bearer "+s.tokens[Admin])
	resp, err := client.Do(req)
	if err != nil {
		return false
	}
	resp.Body.Close()
	return resp.StatusCode == http.StatusOK
}

// Restart stops the apiserver with sig, leaves it down for down, and starts
// it again on the same port, etcd and files: every object survives.
func (s *Server) Restart(sig syscall.Signal, down time.Duration) error {
	s.Stop(sig)
	time.Sleep(down)
	return s.start()
}

// tail returns the last lines of the log, for an error.
func (s *Server) tail() string {
	lines := strings.Split(s.Log(), "\n")
	if len(lines) > 40 {
		lines = lines[len(lines)-40:]
	}
	return strings.Join(lines, "\n")
}
