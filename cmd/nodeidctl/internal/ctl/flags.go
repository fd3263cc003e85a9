package ctl

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"strings"
	"time"

	"github.com/nodeid/nodeid/cmd/internal/azblobflag"
	"github.com/nodeid/nodeid/cmd/internal/envflag"
	"github.com/nodeid/nodeid/cmd/internal/etcdflag"
	"github.com/nodeid/nodeid/cmd/internal/gcsflag"
	"github.com/nodeid/nodeid/cmd/internal/k8sflag"
	"github.com/nodeid/nodeid/cmd/internal/storeflag"
	"github.com/nodeid/nodeid/lease"
	"github.com/nodeid/nodeid/nodeid"
	"github.com/nodeid/nodeid/s3store"
)

// flagSet is a subcommand's flags: an [envflag.Set] that prints the command's
// help. Some flags may also be set from the environment (Bind); a flag on
// the command line wins over its variable. Flags that decide what to write to
// whom (--id, --floor, --force, --yes, resize's --cluster-size) are
// command-line only, so that a variable left in a shell can never aim a write.
type flagSet struct {
	*envflag.Set
	a   *app
	cmd *command
}

// newFlagSet returns an empty flag set for cmd. Parse errors are reported by
// app.exit, the help by printHelp.
func (a *app) newFlagSet(cmd *command) *flagSet {
	return &flagSet{Set: envflag.New("nodeidctl "+cmd.name, a.env.LookupEnv), a: a, cmd: cmd}
}

// parse parses args, then fills the bound flags left unset from the
// environment. It returns flag.ErrHelp (after printing the help on stdout) for
// -h and --help, and an error wrapping ErrUsage for anything wrong, naming the
// flag or variable.
func (f *flagSet) parse(args []string) error {
	err := f.Parse(args)
	if errors.Is(err, flag.ErrHelp) {
		f.printHelp()
	}
	return err
}

// printHelp prints the command's help and flags on stdout.
func (f *flagSet) printHelp() {
	w := f.a.stdout
	fmt.Fprintf(w, "Usage: nodeidctl %s %s\n\n%s\n\nFlags:\n", f.cmd.name, f.cmd.synopsis, strings.TrimSpace(f.cmd.help))
	f.PrintDefaultsTo(w)
}

// commonFlags are the flags every command takes: where the bucket is, and the
// two expiry settings that must match the provider's configuration.
type commonFlags struct {
	bucket, prefix, region, endpoint string
	pathStyle                        bool
	clockMargin, maxLease            time.Duration
	store                            string // --store: s3, etcd, azblob or gcs
	etcd                             etcdflag.Flags
	azblob                           azblobflag.Flags
	gcs                              gcsflag.Flags
	k8s                              k8sflag.Flags
}

// register adds the common flags to f, each bound to its environment variable.
func (c *commonFlags) register(f *flagSet) {
	def := nodeid.DefaultConfig()
	f.StringVar(&c.bucket, "bucket", "", "S3 bucket that holds the lease objects (required)")
	f.StringVar(&c.prefix, "prefix", s3store.DefaultPrefix, "key prefix of the manifest and lease objects: ends with \"/\", or empty for the root of the bucket")
	f.StringVar(&c.region, "region", "", "AWS region of the bucket (default: AWS_REGION or the shared config; us-east-1 with --s3-endpoint)")
	f.StringVar(&c.endpoint, "s3-endpoint", "", "base URL of an S3-compatible server (empty: AWS S3)")
	f.BoolVar(&c.pathStyle, "s3-path-style", false, "address the bucket in the URL path (MinIO, versitygw, gofakes3)")
	f.DurationVar(&c.clockMargin, "clock-margin", def.ClockMargin,
		"extra margin of the expiry rule (the provider's ClockMargin): a held lease is expired when Date - Last-Modified > lease + 1s + margin")
	f.DurationVar(&c.maxLease, "max-lease-duration", def.MaxLeaseDuration,
		"longest lease a record may state (the provider's MaxLeaseDuration); a record stating more is reported corrupt")
	f.StringVar(&c.store, "store", etcdflag.StoreS3, "lease store: s3 (a bucket: --bucket, --s3-*), etcd (--etcd-endpoints, --etcd-*), azblob (Azure Blob Storage: --azblob-*) gcs (Google Cloud Storage: --gcs-*) or k8s (Kubernetes Leases: --k8s-*, --kubeconfig)")
	c.etcd.Bind(f.Set)
	c.azblob.Bind(f.Set)
	c.gcs.Bind(f.Set)
	c.k8s.Bind(f.Set)
	f.Bind("bucket", "prefix", "region", "s3-endpoint", "s3-path-style", "clock-margin", "max-lease-duration", "store")
	f.Bind(etcdflag.Names...)
	f.Bind(azblobflag.Names...)
	f.Bind(gcsflag.Names...)
	f.Bind(k8sflag.Names...)
}

// validate checks the common flags after parsing.
func (c *commonFlags) validate(f *flagSet) error {
	if err := etcdflag.CheckPrefix(f.Source("prefix"), c.prefix); err != nil {
		return err
	}
	s3 := storeflag.Family{Store: etcdflag.StoreS3, Flags: "the S3 flags (--bucket, --s3-endpoint)", Given: c.bucket != "" || c.endpoint != ""}
	if err := storeflag.Check(f.Source("store"), c.store, s3, c.etcd.Family(c.prefix), c.azblob.Family(c.prefix), c.gcs.Family(c.prefix), c.k8s.Family(c.prefix)); err != nil {
		return err
	}
	switch {
	case c.bucket == "" && c.store == etcdflag.StoreS3:
		return usagef("--bucket (or %s) is required", envflag.Name("bucket"))
	case c.clockMargin < 0:
		return usagef("%s %v is negative", f.Source("clock-margin"), c.clockMargin)
	case c.maxLease <= 0 || c.maxLease > lease.MaxLeaseMillis*time.Millisecond:
		return usagef("%s %v is outside (0, 24h]", f.Source("max-lease-duration"), c.maxLease)
	}
	if err := c.storeConfig().Validate(); err != nil && c.store == etcdflag.StoreS3 {
		return etcdflag.S3ConfigError(err, f.Source)
	}
	return nil
}

// where names where the flags point, for messages: in bucket B under prefix
// "P", at the root of bucket B (prefix ""), in etcd under prefix "P", in
// Azure Blob container C under prefix "P", or in Cloud Storage bucket B
// under prefix "P".
func (c *commonFlags) where() string {
	switch {
	case c.store == etcdflag.StoreEtcd:
		return fmt.Sprintf("in etcd under prefix %q", c.prefix)
	case c.store == azblobflag.Store:
		return fmt.Sprintf("in Azure Blob container %s under prefix %q", c.azblob.Container, c.prefix)
	case c.store == gcsflag.Store:
		return fmt.Sprintf("in Cloud Storage bucket %s under prefix %q", c.gcs.Bucket, c.prefix)
	case c.store == k8sflag.Store:
		return fmt.Sprintf("in %s under prefix %q", c.k8s.Where(), c.prefix)
	case c.prefix == "":
		return fmt.Sprintf("at the root of bucket %s (prefix \"\")", c.bucket)
	}
	return fmt.Sprintf("in bucket %s under prefix %q", c.bucket, c.prefix)
}

// aimedBy names the flags, or the variables that set them (f.Source), that
// say where the flags point: "--prefix and --bucket", "NODEID_PREFIX
// (--prefix) and --bucket", on etcd "--prefix and --etcd-endpoints", on
// Azure Blob "--prefix, --azblob-account-url and --azblob-container", on
// Cloud Storage "--prefix and --gcs-bucket".
func (c *commonFlags) aimedBy(f *flagSet) string {
	switch c.store {
	case etcdflag.StoreEtcd:
		return f.Source("prefix") + " and " + f.Source("etcd-endpoints")
	case azblobflag.Store:
		return f.Source("prefix") + ", " + f.Source("azblob-account-url") + " and " + f.Source("azblob-container")
	case gcsflag.Store:
		return f.Source("prefix") + " and " + f.Source("gcs-bucket")
	case k8sflag.Store:
		return f.Source("prefix") + ", " + f.Source("k8s-namespace") + " and " + f.Source("kubeconfig")
	}
	return f.Source("prefix") + " and " + f.Source("bucket")
}

// storeConfig returns the S3 store configuration the flags describe.
func (c *commonFlags) storeConfig() s3store.Config {
	cfg := s3store.DefaultConfig()
	cfg.Bucket, cfg.Prefix, cfg.Region = c.bucket, c.prefix, c.region
	cfg.Endpoint, cfg.UsePathStyle = c.endpoint, c.pathStyle
	return cfg
}

// rules returns the rules that classify lease objects under these flags.
func (c *commonFlags) rules() judgeRules {
	return judgeRules{clockMargin: c.clockMargin, maxLease: c.maxLease}
}

// setup parses args into f (which has the common flags of c registered),
// validates the common flags, runs check (the command's own validation, if
// any) and then opens the store: a usage error never costs a request.
func (a *app) setup(ctx context.Context, f *flagSet, c *commonFlags, args []string, check func() error) (lease.Store, error) {
	if err := f.parse(args); err != nil {
		return nil, err
	}
	if err := c.validate(f); err != nil {
		return nil, err
	}
	if check != nil {
		if err := check(); err != nil {
			return nil, err
		}
	}
	return a.open(ctx, c)
}

// open opens the store the common flags describe.
func (a *app) open(ctx context.Context, c *commonFlags) (lease.Store, error) {
	open := func() (lease.Store, error) { return a.env.OpenStore(ctx, c.storeConfig()) }
	switch c.store {
	case etcdflag.StoreEtcd:
		open = func() (lease.Store, error) { return a.env.OpenEtcd(ctx, c.etcd.Config(c.prefix)) }
	case azblobflag.Store:
		open = func() (lease.Store, error) {
			cfg, err := c.azblob.StoreConfig(c.prefix, a.env.AzureCredential)
			if err != nil {
				return nil, err
			}
			return a.env.OpenAzblob(ctx, cfg)
		}
	case gcsflag.Store:
		open = func() (lease.Store, error) { return a.env.OpenGCS(ctx, c.gcs.Config(c.prefix)) }
	case k8sflag.Store:
		open = func() (lease.Store, error) {
			cfg, err := c.k8s.Config(c.prefix)
			if err != nil {
				return nil, err
			}
			return a.env.OpenK8s(ctx, cfg)
		}
	}
	st, err := open()
	if err != nil {
		return nil, fmt.Errorf("open the store: %w", storeflag.OpenError(err))
	}
	return st, nil
}
