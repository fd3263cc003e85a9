// Package etcdflag is the one copy of the store flags' checks that
// nodeid-broker and nodeidctl share: --store, the --etcd-* flags they take
// with --store etcd (each also a NODEID_ variable through envflag), and the
// shape of --prefix.
package etcdflag

import (
	"strings"
	"time"

	"github.com/nodeid/nodeid/cmd/internal/envflag"
	"github.com/nodeid/nodeid/cmd/internal/storeflag"
	"github.com/nodeid/nodeid/etcdstore"
)

// Stores that --store names.
const (
	StoreS3   = "s3"
	StoreEtcd = "etcd"
)

// Names are the flags Bind declares, for envflag.Set.Bind.
var Names = []string{"etcd-endpoints", "etcd-username", "etcd-password", "etcd-ca-file", "etcd-cert-file", "etcd-key-file",
	"etcd-dial-timeout", "etcd-request-timeout"}

// Flags are the values of the --etcd-* flags.
type Flags struct {
	Endpoints                 string
	Username, Password        string
	CAFile, CertFile, KeyFile string
	DialTimeout               time.Duration
	RequestTimeout            time.Duration
}

// Bind declares the flags on f.
func (e *Flags) Bind(f *envflag.Set) {
	f.StringVar(&e.Endpoints, "etcd-endpoints", "", "with --store etcd: comma-separated etcd client endpoints, host:port or URLs (https:// or --etcd-ca-file for TLS)")
	f.StringVar(&e.Username, "etcd-username", "", "with --store etcd: user of etcd's user/password authentication (empty: none)")
	f.StringVar(&e.Password, "etcd-password", "", "with --store etcd: password of --etcd-username (prefer the variable to the flag)")
	f.StringVar(&e.CAFile, "etcd-ca-file", "", "with --store etcd: PEM file of the CAs that sign etcd's server certificates (turns TLS on)")
	f.StringVar(&e.CertFile, "etcd-cert-file", "", "with --store etcd: client certificate (PEM), for etcd's client-certificate auth")
	f.StringVar(&e.KeyFile, "etcd-key-file", "", "with --store etcd: the key of --etcd-cert-file (PEM)")
	f.DurationVar(&e.DialTimeout, "etcd-dial-timeout", 5*time.Second, "with --store etcd: bound on the first connection to etcd")
	f.DurationVar(&e.RequestTimeout, "etcd-request-timeout", 5*time.Second, "with --store etcd: bound on each etcd request")
}

// Config returns the etcd store's configuration under prefix.
func (e *Flags) Config(prefix string) etcdstore.Config {
	var eps []string
	for _, ep := range strings.Split(e.Endpoints, ",") {
		if ep = strings.TrimSpace(ep); ep != "" {
			eps = append(eps, ep)
		}
	}
	return etcdstore.Config{
		Endpoints: eps, Prefix: prefix, Username: e.Username, Password: e.Password,
		CAFile: e.CAFile, CertFile: e.CertFile, KeyFile: e.KeyFile,
		DialTimeout: e.DialTimeout, RequestTimeout: e.RequestTimeout,
	}
}

// CheckPrefix refuses a --prefix (named src in messages) that is neither
// empty nor ends with "/": the keys are the prefix and the name run
// together, so "nodeid" would make nodeidcluster.json, miss the objects
// under nodeid/ and call them foreign.
func CheckPrefix(src, prefix string) error {
	if prefix == "" || strings.HasSuffix(prefix, "/") {
		return nil
	}
	return envflag.Usagef("%s %q does not end with \"/\": the keys would be %scluster.json, %s0.json, ...; give %q (or \"\" for the root of the bucket)",
		src, prefix, prefix, prefix, prefix+"/")
}

// S3ConfigError turns an error of s3store.Config.Validate into a usage error
// that names the flags (src names one, with its variable when that set it)
// instead of the Config's fields.
func S3ConfigError(err error, src func(flag string) string) error {
	return envflag.Usagef("%s", strings.NewReplacer("s3store: invalid config: ", "", "Bucket ", src("bucket")+" ", "Prefix ", src("prefix")+" ",
		"Region ", src("region")+" ", "Endpoint ", src("s3-endpoint")+" ", "goes in Prefix", "goes in "+src("prefix")).Replace(err.Error()))
}

// Check checks the --etcd-* flags for --store etcd, under prefix
// (storeflag.Check has made sure no other store's flags were given).
func (e *Flags) Check(prefix string) error {
	if err := e.Config(prefix).Validate(); err != nil {
		return envflag.Usagef("%v (flags --etcd-endpoints and --etcd-*)", err)
	}
	return nil
}

// Family is the store as storeflag.Check sees it, under prefix.
func (e *Flags) Family(prefix string) storeflag.Family {
	return storeflag.Family{Store: StoreEtcd, Flags: "the --etcd-* flags", Given: e.Endpoints != "", Check: func() error { return e.Check(prefix) }}
}
