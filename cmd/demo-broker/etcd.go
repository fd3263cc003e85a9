package main

import (
	"context"
	"strings"
	"time"

	"github.com/nodeid/nodeid/etcdstore"
	"github.com/nodeid/nodeid/internal/envflag"
	"github.com/nodeid/nodeid/lease"
)

// The stores serve can lease from (--store).
const (
	storeS3   = "s3"
	storeEtcd = "etcd"
)

// etcdFlags are the --etcd-* flags of serve.
type etcdFlags struct {
	endpoints                  string
	username, password         string
	caFile, certFile, keyFile  string
	dialTimeout, requestTimout time.Duration
}

// bind declares the flags of the etcd store on f.
func (e *etcdFlags) bind(f *envflag.Set) {
	f.StringVar(&e.endpoints, "etcd-endpoints", "", "with --store etcd: comma-separated etcd client endpoints, host:port or URLs (https:// or --etcd-ca-file for TLS)")
	f.StringVar(&e.username, "etcd-username", "", "with --store etcd: user name of etcd's user/password authentication (empty: none)")
	f.StringVar(&e.password, "etcd-password", "", "with --store etcd: password of --etcd-username (prefer the variable to the flag)")
	f.StringVar(&e.caFile, "etcd-ca-file", "", "with --store etcd: PEM file of the CAs that sign etcd's server certificates (turns TLS on)")
	f.StringVar(&e.certFile, "etcd-cert-file", "", "with --store etcd: this broker's client certificate (PEM), for etcd's client-certificate auth")
	f.StringVar(&e.keyFile, "etcd-key-file", "", "with --store etcd: the key of --etcd-cert-file (PEM)")
	f.DurationVar(&e.dialTimeout, "etcd-dial-timeout", 5*time.Second, "with --store etcd: bound on the first connection to etcd")
	f.DurationVar(&e.requestTimout, "etcd-request-timeout", 5*time.Second, "with --store etcd: bound on each etcd request")
}

// config returns the etcd store's configuration under prefix.
func (e *etcdFlags) config(prefix string) etcdstore.Config {
	var eps []string
	for _, ep := range strings.Split(e.endpoints, ",") {
		if ep = strings.TrimSpace(ep); ep != "" {
			eps = append(eps, ep)
		}
	}
	return etcdstore.Config{
		Endpoints: eps, Prefix: prefix, Username: e.username, Password: e.password,
		CAFile: e.caFile, CertFile: e.certFile, KeyFile: e.keyFile,
		DialTimeout: e.dialTimeout, RequestTimeout: e.requestTimout,
	}
}

// checkStoreFlags checks --store and the flags of the store it names.
func (c *serveConfig) checkStoreFlags(f *envflag.Set) error {
	src := f.Source
	switch c.store {
	case storeS3:
		if c.etcd.endpoints != "" {
			return envflag.Usagef("%s needs --store etcd", src("etcd-endpoints"))
		}
		return nil
	case storeEtcd:
	default:
		return envflag.Usagef("%s %q: want s3 or etcd", src("store"), c.store)
	}
	if c.embeddedS3 != "" || c.s3Endpoint != "" || c.bucket != "" {
		return envflag.Usagef("--store etcd excludes the S3 flags --bucket, --s3-endpoint and --embedded-s3")
	}
	if err := c.etcd.config(c.prefix).Validate(); err != nil {
		return envflag.Usagef("%v (flags %s and --etcd-*)", err, src("etcd-endpoints"))
	}
	return nil
}

// storeName names the store in logs and gossip's default cluster identity:
// s3://BUCKET/PREFIX or etcd://ENDPOINTS/PREFIX.
func (c *serveConfig) storeName() string {
	if c.store == storeEtcd {
		return "etcd://" + strings.Join(c.etcd.config(c.prefix).Endpoints, ",") + "/" + c.prefix
	}
	return "s3://" + c.bucket + "/" + c.prefix
}

// checkedStore is a lease store that can check, before the node starts, that
// it is reachable and answers as the store it claims to be.
type checkedStore interface {
	lease.Store
	Check(ctx context.Context) error
}

// openEtcd connects to etcd; the returned function closes the connection.
func (b *broker) openEtcd() (checkedStore, func(), error) {
	st, err := etcdstore.New(b.cfg.etcd.config(b.cfg.prefix))
	if err != nil {
		return nil, nil, err
	}
	return st, func() { _ = st.Close() }, nil
}
