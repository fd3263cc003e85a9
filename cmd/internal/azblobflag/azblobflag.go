// Package azblobflag is the one copy of the --azblob-* flags that
// nodeid-broker and nodeidctl share with --store azblob (each also a NODEID_
// variable through envflag), and of their checks, shaped like etcdflag.
package azblobflag

import (
	"fmt"
	"strings"
	"time"

	"github.com/nodeid/nodeid/azblobstore"
	"github.com/nodeid/nodeid/cmd/internal/envflag"
)

// Store is the --store value of Azure Blob Storage (azblobstore).
const Store = "azblob"

// Names are the flags Bind declares, for envflag.Set.Bind.
var Names = []string{"azblob-account-url", "azblob-container", "azblob-account-name", "azblob-account-key", "azblob-sas",
	"azblob-request-timeout"}

// Flags are the values of the --azblob-* flags.
type Flags struct {
	AccountURL, Container string
	AccountName           string
	AccountKey            string
	SAS                   string
	RequestTimeout        time.Duration
}

// Bind declares the flags on f.
func (a *Flags) Bind(f *envflag.Set) {
	f.StringVar(&a.AccountURL, "azblob-account-url", "", "with --store azblob: the storage account's blob endpoint, https://ACCOUNT.blob.core.windows.net (Azurite: http://127.0.0.1:10000/devstoreaccount1)")
	f.StringVar(&a.Container, "azblob-container", "", "with --store azblob: the container that holds the lease blobs (it must exist)")
	f.StringVar(&a.AccountName, "azblob-account-name", "", "with --store azblob: account name of shared key auth, with --azblob-account-key")
	f.StringVar(&a.AccountKey, "azblob-account-key", "", "with --store azblob: account key of shared key auth (prefer the variable to the flag)")
	f.StringVar(&a.SAS, "azblob-sas", "", "with --store azblob: a SAS for the container (read, add, create, write, list), instead of an account key (prefer the variable to the flag)")
	f.DurationVar(&a.RequestTimeout, "azblob-request-timeout", azblobstore.DefaultRequestTimeout, "with --store azblob: bound on each Azure Blob request")
}

// Set reports whether any --azblob-* flag that names the store was given.
func (a *Flags) Set() bool {
	return a.AccountURL != "" || a.Container != "" || a.AccountName != "" || a.AccountKey != "" || a.SAS != ""
}

// Config returns the store's configuration under prefix, with shared key or
// a SAS as the flags say.
func (a *Flags) Config(prefix string) azblobstore.Config {
	c := azblobstore.DefaultConfig()
	c.AccountURL, c.Container, c.Prefix = a.AccountURL, a.Container, prefix
	c.AccountName, c.AccountKey, c.SAS = a.AccountName, a.AccountKey, a.SAS
	c.RequestTimeout = a.RequestTimeout
	return c
}

// Check checks the --azblob-* flags for --store azblob; s3Set and etcdSet
// say whether S3 or etcd flags were given.
func (a *Flags) Check(s3Set, etcdSet bool, prefix string) error {
	switch {
	case s3Set:
		return envflag.Usagef("--store azblob excludes the S3 flags (--bucket, --s3-endpoint, --embedded-s3)")
	case etcdSet:
		return envflag.Usagef("--store azblob excludes --etcd-endpoints")
	}
	if err := a.Config(prefix).Validate(); err != nil {
		msg := strings.TrimPrefix(err.Error(), "azblobstore: invalid config: ")
		return envflag.Usagef("%s (flags --azblob-account-url, --azblob-container, --azblob-account-name with --azblob-account-key, or --azblob-sas)", msg)
	}
	return nil
}

// Name names the store in logs and gossip's default cluster identity:
// azblob://ACCOUNT-URL/CONTAINER/PREFIX.
func (a *Flags) Name(prefix string) string {
	return fmt.Sprintf("azblob://%s/%s/%s", strings.TrimSuffix(a.AccountURL, "/"), a.Container, prefix)
}

// Where names the store for messages: "Azure Blob container C at
// --azblob-account-url URL".
func (a *Flags) Where() string {
	return fmt.Sprintf("Azure Blob container %s at --azblob-account-url %s", a.Container, a.AccountURL)
}
