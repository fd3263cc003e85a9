// Package gcsflag is the one copy of the --gcs-* flags that nodeid-broker
// and nodeidctl share with --store gcs (each also a NODEID_ variable through
// envflag), and of their checks, shaped like etcdflag and azblobflag.
package gcsflag

import (
	"fmt"
	"strings"
	"time"

	"github.com/nodeid/nodeid/cmd/internal/envflag"
	"github.com/nodeid/nodeid/cmd/internal/storeflag"
	"github.com/nodeid/nodeid/gcsstore"
)

// Store is the --store value of Google Cloud Storage (gcsstore).
const Store = "gcs"

// Names are the flags Bind declares, for envflag.Set.Bind.
var Names = []string{"gcs-bucket", "gcs-endpoint", "gcs-no-auth", "gcs-request-timeout"}

// Flags are the values of the --gcs-* flags.
type Flags struct {
	Bucket         string
	Endpoint       string
	NoAuth         bool
	RequestTimeout time.Duration
}

// Bind declares the flags on f.
func (g *Flags) Bind(f *envflag.Set) {
	f.StringVar(&g.Bucket, "gcs-bucket", "", "with --store gcs: the Cloud Storage bucket that holds the lease objects (it must exist); credentials are Application Default Credentials (the service account on Cloud Run, GKE, Compute Engine)")
	f.StringVar(&g.Endpoint, "gcs-endpoint", "", "with --store gcs: the JSON API endpoint of an emulator, for example http://127.0.0.1:4443/storage/v1/ (empty: Google Cloud Storage)")
	f.BoolVar(&g.NoAuth, "gcs-no-auth", false, "with --store gcs: send no credentials (an emulator at --gcs-endpoint)")
	f.DurationVar(&g.RequestTimeout, "gcs-request-timeout", gcsstore.DefaultRequestTimeout, "with --store gcs: bound on each Cloud Storage request")
}

// Set reports whether any --gcs-* flag that names the store was given.
func (g *Flags) Set() bool { return g.Bucket != "" || g.Endpoint != "" || g.NoAuth }

// Config returns the store's configuration under prefix.
func (g *Flags) Config(prefix string) gcsstore.Config {
	c := gcsstore.DefaultConfig()
	c.Bucket, c.Prefix, c.Endpoint, c.NoAuth = g.Bucket, prefix, g.Endpoint, g.NoAuth
	c.RequestTimeout = g.RequestTimeout
	return c
}

// Check checks the --gcs-* flags for --store gcs, under prefix
// (storeflag.Check has made sure no other store's flags were given).
func (g *Flags) Check(prefix string) error {
	if err := g.Config(prefix).Validate(); err != nil {
		return envflag.Usagef("%s", strings.NewReplacer("gcsstore: invalid config: ", "", "Bucket ", "--gcs-bucket ", "Endpoint ", "--gcs-endpoint ",
			"NoAuth ", "--gcs-no-auth ", "set Endpoint", "set --gcs-endpoint", "goes in Prefix", "goes in --prefix", "Prefix ", "--prefix ").Replace(err.Error()))
	}
	return nil
}

// Family is the store as storeflag.Check sees it, under prefix.
func (g *Flags) Family(prefix string) storeflag.Family {
	return storeflag.Family{Store: Store, Flags: "the --gcs-* flags", Given: g.Set(), Check: func() error { return g.Check(prefix) }}
}

// Name names the store in logs and gossip's default cluster identity:
// gs://BUCKET/PREFIX, or ENDPOINT/b/BUCKET/PREFIX on an emulator.
func (g *Flags) Name(prefix string) string {
	if g.Endpoint != "" {
		return fmt.Sprintf("%s/b/%s/%s", strings.TrimSuffix(g.Endpoint, "/"), g.Bucket, prefix)
	}
	return fmt.Sprintf("gs://%s/%s", g.Bucket, prefix)
}

// Where names the store for messages: "Cloud Storage bucket B", with the
// endpoint of an emulator.
func (g *Flags) Where() string {
	if g.Endpoint != "" {
		return fmt.Sprintf("Cloud Storage bucket %s at --gcs-endpoint %s", g.Bucket, g.Endpoint)
	}
	return "Cloud Storage bucket " + g.Bucket
}
