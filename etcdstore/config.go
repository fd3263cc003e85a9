package etcdstore

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"os"
	"strings"
	"time"
)

// LiveSuffix ends the key that carries an object's liveness: <key>.live.
const LiveSuffix = ".live"

// DefaultPageSize is how many keys one page of a listing reads.
const DefaultPageSize = 500

// Config says how to reach etcd.
type Config struct {
	// Endpoints are the etcd client URLs or host:port pairs. Required.
	Endpoints []string
	// Prefix is prepended to every key, for example "nodeid/". Default "".
	Prefix string
	// DialTimeout bounds the first connection. Default 5 s.
	DialTimeout time.Duration
	// Username and Password authenticate with etcd's user/password auth;
	// empty: no auth.
	Username, Password string
	// CAFile is a PEM file of the CAs that sign etcd's server certificates;
	// setting it (or CertFile) turns TLS on. Empty with TLS on: the system
	// roots.
	CAFile string
	// CertFile and KeyFile are this client's certificate and key (PEM), for
	// etcd's client-certificate auth. Both or neither.
	CertFile, KeyFile string
	// InsecureSkipVerify turns TLS on without checking etcd's certificate:
	// for tests only.
	InsecureSkipVerify bool
	// PageSize is how many keys one listing page reads. Default
	// DefaultPageSize.
	PageSize int
	// RequestTimeout bounds each request (a listing page, a read, a grant, a
	// transaction): while etcd is unreachable the client waits for it, and a
	// write cut short this way has an unknown outcome. Default 5 s.
	RequestTimeout time.Duration
}

// withDefaults returns c with its zero fields set to their defaults.
func (c Config) withDefaults() Config {
	if c.DialTimeout == 0 {
		c.DialTimeout = 5 * time.Second
	}
	if c.PageSize == 0 {
		c.PageSize = DefaultPageSize
	}
	if c.RequestTimeout == 0 {
		c.RequestTimeout = 5 * time.Second
	}
	return c
}

// Validate checks the configuration.
func (c Config) Validate() error {
	var errs []error
	if len(c.Endpoints) == 0 {
		errs = append(errs, errors.New("etcdstore: no endpoints"))
	}
	for _, e := range c.Endpoints {
		if strings.TrimSpace(e) == "" {
			errs = append(errs, errors.New("etcdstore: an empty endpoint"))
		}
	}
	if (c.CertFile == "") != (c.KeyFile == "") {
		errs = append(errs, errors.New("etcdstore: CertFile and KeyFile go together"))
	}
	if c.DialTimeout < 0 || c.PageSize < 0 || c.RequestTimeout < 0 {
		errs = append(errs, errors.New("etcdstore: negative DialTimeout, PageSize or RequestTimeout"))
	}
	if strings.HasSuffix(c.Prefix, LiveSuffix) {
		errs = append(errs, fmt.Errorf("etcdstore: prefix %q ends in the reserved %s", c.Prefix, LiveSuffix))
	}
	return errors.Join(errs...)
}

// tlsConfig returns the TLS configuration, nil when TLS is off.
func (c Config) tlsConfig() (*tls.Config, error) {
	if c.CAFile == "" && c.CertFile == "" && !c.InsecureSkipVerify {
		return nil, nil
	}
	tc := &tls.Config{MinVersion: tls.VersionTLS12, InsecureSkipVerify: c.InsecureSkipVerify} //nolint:gosec // tests only, documented
	if c.CAFile != "" {
		pem, err := os.ReadFile(c.CAFile)
		if err != nil {
			return nil, fmt.Errorf("etcdstore: read CA file: %w", err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("etcdstore: no certificate in CA file %s", c.CAFile)
		}
		tc.RootCAs = pool
	}
	if c.CertFile != "" {
		cert, err := tls.LoadX509KeyPair(c.CertFile, c.KeyFile)
		if err != nil {
			return nil, fmt.Errorf("etcdstore: load client certificate: %w", err)
		}
		tc.Certificates = []tls.Certificate{cert}
	}
	return tc, nil
}
