package broker

import (
	"fmt"
	"strings"
	"time"

	"github.com/nodeid/nodeid/azblobstore"
	"github.com/nodeid/nodeid/cmd/internal/envflag"
	"github.com/nodeid/nodeid/lease"
)

// storeAzblob is the --store value of Azure Blob Storage (azblobstore).
const storeAzblob = "azblob"

// azblobFlags are the values of the --azblob-* flags, each also a NODEID_
// variable through envflag.
type azblobFlags struct {
	accountURL, container string
	accountName           string
	accountKey            string
	sas                   string
	requestTimeout        time.Duration
}

// bind declares the flags on f.
func (a *azblobFlags) bind(f *envflag.Set) {
	f.StringVar(&a.accountURL, "azblob-account-url", "", "with --store azblob: the storage account's blob endpoint, https://ACCOUNT.blob.core.windows.net (Azurite: http://127.0.0.1:10000/devstoreaccount1)")
	f.StringVar(&a.container, "azblob-container", "", "with --store azblob: the container that holds the lease blobs (it must exist)")
	f.StringVar(&a.accountName, "azblob-account-name", "", "with --store azblob: account name of shared key auth, with --azblob-account-key")
	f.StringVar(&a.accountKey, "azblob-account-key", "", "with --store azblob: account key of shared key auth (prefer the variable to the flag)")
	f.StringVar(&a.sas, "azblob-sas", "", "with --store azblob: a SAS for the container (read, add, create, write, list), instead of an account key (prefer the variable to the flag)")
	f.DurationVar(&a.requestTimeout, "azblob-request-timeout", azblobstore.DefaultRequestTimeout, "with --store azblob: bound on each Azure Blob request")
}

// set reports whether any --azblob-* flag that names the store was given.
func (a *azblobFlags) set() bool {
	return a.accountURL != "" || a.container != "" || a.accountName != "" || a.accountKey != "" || a.sas != ""
}

// config returns the store's configuration under prefix. The broker has no
// Entra ID credential (azidentity is not linked in): it authenticates with
// shared key or a SAS.
func (a *azblobFlags) config(prefix string) azblobstore.Config {
	c := azblobstore.DefaultConfig()
	c.AccountURL, c.Container, c.Prefix = a.accountURL, a.container, prefix
	c.AccountName, c.AccountKey, c.SAS = a.accountName, a.accountKey, a.sas
	c.RequestTimeout = a.requestTimeout
	return c
}

// check checks the --azblob-* flags for --store azblob; s3Set and etcdSet
// say whether S3 or etcd flags were given.
func (a *azblobFlags) check(s3Set, etcdSet bool, prefix string) error {
	switch {
	case s3Set:
		return envflag.Usagef("--store azblob excludes the S3 flags (--bucket, --s3-endpoint, --embedded-s3)")
	case etcdSet:
		return envflag.Usagef("--store azblob excludes --etcd-endpoints")
	}
	if err := a.config(prefix).Validate(); err != nil {
		msg := strings.TrimPrefix(err.Error(), "azblobstore: invalid config: ")
		return envflag.Usagef("%s (flags --azblob-account-url, --azblob-container, --azblob-account-name with --azblob-account-key, or --azblob-sas)", msg)
	}
	return nil
}

// openAzblob returns the Azure Blob store; it holds no connection to close.
func (b *broker) openAzblob() (lease.Store, func(), error) {
	c := b.cfg.azblob.config(b.cfg.prefix)
	c.Logger = b.log.With("component", "azblobstore")
	st, err := azblobstore.New(c)
	if err != nil {
		return nil, nil, err
	}
	return st, func() {}, nil
}

// azblobName names the store in logs and gossip's default cluster identity.
func (a *azblobFlags) name(prefix string) string {
	return fmt.Sprintf("azblob://%s/%s/%s", strings.TrimSuffix(a.accountURL, "/"), a.container, prefix)
}
