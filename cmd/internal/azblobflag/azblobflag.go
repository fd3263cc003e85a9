// Package azblobflag is the one copy of the --azblob-* flags that
// nodeid-broker and nodeidctl share with --store azblob (each also a NODEID_
// variable through envflag), and of their checks, shaped like etcdflag.
//
// The flags select the credential: shared key (--azblob-account-name and
// --azblob-account-key), a SAS (--azblob-sas), or, with neither a key nor a
// SAS, a Microsoft Entra ID token from azidentity's DefaultAzureCredential
// (a service principal in the environment, workload identity, managed
// identity, then the developer tools; AZURE_TOKEN_CREDENTIALS narrows the
// chain, "prod" to the first three).
package azblobflag

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"
	"github.com/Azure/azure-sdk-for-go/sdk/azidentity"

	"github.com/nodeid/nodeid/azblobstore"
	"github.com/nodeid/nodeid/cmd/internal/envflag"
	"github.com/nodeid/nodeid/cmd/internal/storeflag"
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
	f.StringVar(&a.AccountKey, "azblob-account-key", "", "with --store azblob: account key of shared key auth (prefer the variable to the flag; empty, and no --azblob-sas: Microsoft Entra ID, azidentity's DefaultAzureCredential: AZURE_* service principal, workload identity, managed identity)")
	f.StringVar(&a.SAS, "azblob-sas", "", "with --store azblob: a SAS for the container (read, add, create, write, list), instead of an account key (prefer the variable to the flag)")
	f.DurationVar(&a.RequestTimeout, "azblob-request-timeout", azblobstore.DefaultRequestTimeout, "with --store azblob: bound on each Azure Blob request")
}

// Set reports whether any --azblob-* flag that names the store was given.
func (a *Flags) Set() bool {
	return a.AccountURL != "" || a.Container != "" || a.AccountName != "" || a.AccountKey != "" || a.SAS != ""
}

// EntraID reports whether the flags select Microsoft Entra ID: neither an
// account key nor a SAS. The store then authenticates with a token
// credential (StoreConfig).
func (a *Flags) EntraID() bool { return a.AccountKey == "" && a.SAS == "" }

// Config returns the store's configuration under prefix, with shared key or
// a SAS as the flags say, and no token credential: StoreConfig adds it.
func (a *Flags) Config(prefix string) azblobstore.Config {
	c := azblobstore.DefaultConfig()
	c.AccountURL, c.Container, c.Prefix = a.AccountURL, a.Container, prefix
	c.AccountName, c.AccountKey, c.SAS = a.AccountName, a.AccountKey, a.SAS
	c.RequestTimeout = a.RequestTimeout
	return c
}

// Check checks the --azblob-* flags for --store azblob, under prefix
// (storeflag.Check has made sure no other store's flags were given).
func (a *Flags) Check(prefix string) error {
	c := a.Config(prefix)
	if a.EntraID() {
		c.Credential = unset{} // StoreConfig's, made only to open the store
	}
	if err := c.Validate(); err != nil {
		msg := strings.TrimPrefix(err.Error(), "azblobstore: invalid config: ")
		return envflag.Usagef("%s (flags --azblob-account-url, --azblob-container, --azblob-account-name with --azblob-account-key, or --azblob-sas, or neither for Microsoft Entra ID)", msg)
	}
	if a.EntraID() && strings.HasPrefix(a.AccountURL, "http://") {
		// The SDK refuses to send a token over plain HTTP, on every request.
		return envflag.Usagef("--azblob-account-url %s is http://: Microsoft Entra ID tokens (no --azblob-account-key or --azblob-sas) are sent over https only", a.AccountURL)
	}
	return nil
}

// NewCredential makes the token credential of the flags that select
// Microsoft Entra ID (EntraID). DefaultCredential is the commands'; tests
// pass a fake.
type NewCredential func() (azcore.TokenCredential, error)

// DefaultCredential returns azidentity's DefaultAzureCredential. It sends
// nothing until the first token is asked for: that is where a chain in
// which no credential works fails (the store's Check, at start).
func DefaultCredential() (azcore.TokenCredential, error) {
	return azidentity.NewDefaultAzureCredential(nil)
}

// StoreConfig returns the store's configuration under prefix with its
// credential: shared key or a SAS as the flags say, otherwise the token
// credential newCred makes (nil: DefaultCredential), whose errors say why
// that chain was used.
func (a *Flags) StoreConfig(prefix string, newCred NewCredential) (azblobstore.Config, error) {
	c := a.Config(prefix)
	if !a.EntraID() {
		return c, nil
	}
	if newCred == nil {
		newCred = DefaultCredential
	}
	cred, err := newCred()
	if err != nil {
		return c, fmt.Errorf("%s: %w", chainWhy, err)
	}
	c.Credential = explained{cred}
	return c, nil
}

// chainWhy heads the errors of the token credential.
const chainWhy = "--store azblob without --azblob-account-key or --azblob-sas authenticates with Microsoft Entra ID " +
	"(azidentity's DefaultAzureCredential: AZURE_CLIENT_ID with AZURE_TENANT_ID and a secret or certificate, workload identity, " +
	"managed identity, then the developer tools; AZURE_TOKEN_CREDENTIALS narrows it), and got no token"

// explained is a token credential whose errors say why it was used and
// what it tried.
type explained struct{ azcore.TokenCredential }

// GetToken implements azcore.TokenCredential.
func (e explained) GetToken(ctx context.Context, opts policy.TokenRequestOptions) (azcore.AccessToken, error) {
	tok, err := e.TokenCredential.GetToken(ctx, opts)
	if err != nil {
		return tok, fmt.Errorf("%s: %w", chainWhy, err)
	}
	return tok, nil
}

// unset stands in for the token credential while the flags are checked.
type unset struct{}

// GetToken implements azcore.TokenCredential; it is never called.
func (unset) GetToken(context.Context, policy.TokenRequestOptions) (azcore.AccessToken, error) {
	return azcore.AccessToken{}, fmt.Errorf("azblobflag: no credential made")
}

// Family is the store as storeflag.Check sees it, under prefix.
func (a *Flags) Family(prefix string) storeflag.Family {
	return storeflag.Family{Store: Store, Flags: "the --azblob-* flags", Given: a.Set(), Check: func() error { return a.Check(prefix) }}
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
