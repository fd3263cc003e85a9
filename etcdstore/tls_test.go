package etcdstore_test

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/nodeid/nodeid/etcdstore"
	"github.com/nodeid/nodeid/internal/testkit/etcdtest"
	"github.com/nodeid/nodeid/lease"
)

// testPKI is a CA and the certificates it signed, as PEM files in dir.
type testPKI struct {
	ca                    *x509.Certificate
	caKey                 *ecdsa.PrivateKey
	dir                   string
	caFile                string
	serverCert, serverKey string
	clientCert, clientKey string
}

func newTestPKI(t *testing.T) *testPKI {
	t.Helper()
	p := &testPKI{dir: t.TempDir()}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "nodeid test CA"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IsCA: true, KeyUsage: x509.KeyUsageCertSign, BasicConstraintsValid: true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	p.ca, _ = x509.ParseCertificate(der)
	p.caKey = key
	p.caFile = p.write(t, "ca.pem", "CERTIFICATE", der)
	p.serverCert, p.serverKey = p.issue(t, "server", 2, x509.ExtKeyUsageServerAuth)
	p.clientCert, p.clientKey = p.issue(t, "client", 3, x509.ExtKeyUsageClientAuth)
	return p
}

func (p *testPKI) write(t *testing.T, name, typ string, der []byte) string {
	t.Helper()
	f := filepath.Join(p.dir, name)
	if err := os.WriteFile(f, pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
	return f
}

// issue signs a certificate for 127.0.0.1 and returns its cert and key files.
func (p *testPKI) issue(t *testing.T, name string, serial int64, usage x509.ExtKeyUsage) (string, string) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(serial), Subject: pkix.Name{CommonName: name},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{usage},
		IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, p.ca, &key.PublicKey, p.caKey)
	if err != nil {
		t.Fatal(err)
	}
	kder, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	return p.write(t, name+".pem", "CERTIFICATE", der), p.write(t, name+"-key.pem", "EC PRIVATE KEY", kder)
}

// TestTLSClientCertificates: etcd serving TLS and requiring client
// certificates; the store connects with the CA, certificate and key files
// (Config.CAFile, CertFile, KeyFile) and works; without a client certificate
// it is refused.
func TestTLSClientCertificates(t *testing.T) {
	p := newTestPKI(t)
	roots := x509.NewCertPool()
	roots.AddCert(p.ca)
	client, err := tls.LoadX509KeyPair(p.clientCert, p.clientKey)
	if err != nil {
		t.Fatal(err)
	}
	srv := etcdtest.StartTLS(t, &etcdtest.TLS{CertFile: p.serverCert, KeyFile: p.serverKey, ClientCAFile: p.caFile,
		Client: &tls.Config{RootCAs: roots, Certificates: []tls.Certificate{client}, MinVersion: tls.VersionTLS12}})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()

	cfg := etcdstore.Config{Endpoints: []string{srv.Endpoint}, Prefix: "nodeid/", CAFile: p.caFile, CertFile: p.clientCert, KeyFile: p.clientKey}
	st, err := etcdstore.New(cfg)
	if err != nil {
		t.Fatalf("New over TLS: %v", err)
	}
	defer st.Close()
	if err := st.Check(ctx); err != nil {
		t.Fatalf("Check over TLS: %v", err)
	}
	m, err := lease.CreateLive(ctx, st, "3.json", []byte("held"), 2*time.Second)
	if err != nil {
		t.Fatalf("CreateLive over TLS: %v", err)
	}
	if _, gm, err := st.Get(ctx, "3.json"); err != nil || gm.ETag != m.ETag || gm.Liveness != lease.LivenessLive {
		t.Fatalf("Get over TLS: %+v %v", gm, err)
	}

	noCert := cfg
	noCert.CertFile, noCert.KeyFile, noCert.DialTimeout, noCert.RequestTimeout = "", "", 2*time.Second, 2*time.Second
	if st, err := etcdstore.New(noCert); err == nil {
		err = st.Check(ctx)
		_ = st.Close()
		if err == nil {
			t.Fatalf("a client without a certificate was accepted")
		}
	}
}
