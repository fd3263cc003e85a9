package azblobstore

import (
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"strings"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"
)

// DefaultPrefix is the blob name prefix of [DefaultConfig].
const DefaultPrefix = "nodeid/"

// DefaultRequestTimeout is the RequestTimeout used when Config.RequestTimeout is
// zero.
const DefaultRequestTimeout = 5 * time.Second

// AzuriteAccountName and AzuriteAccountKey are the well-known development
// account of the Azurite emulator (public, documented by Microsoft). Never use
// them against Azure itself.
const (
	AzuriteAccountName = "devstoreaccount1"
	AzuriteAccountKey  = "Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw=="
)

// Config configures a [Store] made by [New]. Start from [DefaultConfig] and set
// at least AccountURL, Container and a credential.
type Config struct {
	// AccountURL is the blob service endpoint of the storage account, for
	// example "https://myaccount.blob.core.windows.net", or
	// "http://127.0.0.1:10000/devstoreaccount1" for Azurite (whose URLs carry
	// the account name in the path). Required.
	AccountURL string

	// Container is the blob container that holds the lease blobs. Required; it
	// must exist: nodeid never creates containers.
	Container string

	// Prefix is prepended to every key: the lease blob of node 7 is
	// Prefix+"7.json". DefaultConfig sets "nodeid/". It is used as given, so
	// the empty string means the whole container, and it normally ends with
	// "/" (New logs a warning otherwise).
	Prefix string

	// AccountName and AccountKey set shared key credentials (Azurite, tests,
	// or an account whose keys you manage). Leave them empty in production and
	// set Credential instead.
	AccountName string
	AccountKey  string

	// SAS is a shared access signature for the container (the query string,
	// with or without its leading "?"), used instead of a key or a token
	// credential: it needs the read, write and list permissions.
	SAS string

	// Credential is a Microsoft Entra ID token credential, used when
	// AccountKey is empty. This package does not import azidentity; the
	// production setup (a managed identity, workload identity or the
	// environment) is:
	//
	//	cred, err := azidentity.NewDefaultAzureCredential(nil)
	//	cfg.Credential = cred
	//
	// The identity needs the "Storage Blob Data Contributor" role on the
	// container (read, list and write; never delete).
	Credential azcore.TokenCredential

	// RequestTimeout bounds each call the store makes: one write, one read
	// including the SDK's retries, one page of a listing. Zero means
	// DefaultRequestTimeout. Keep it well below the lease renewal interval: a
	// write that times out has an unknown outcome and must be read back before
	// the renew deadline.
	RequestTimeout time.Duration

	// Transport sends the requests; *http.Client satisfies it. Nil means the
	// SDK's default. Tests use it to put a proxy in the way.
	Transport policy.Transporter

	// Logger receives debug lines about writes and warnings about unknown
	// outcomes. Nil discards them.
	Logger *slog.Logger
}

// DefaultConfig returns a Config with the default prefix and request timeout.
// Set AccountURL, Container and a credential before use.
func DefaultConfig() Config {
	return Config{
		Prefix:         DefaultPrefix,
		RequestTimeout: DefaultRequestTimeout,
	}
}

// Validate reports the problems with c, or nil. [New] calls it.
func (c Config) Validate() error {
	var errs []string
	if c.AccountURL == "" {
		errs = append(errs, "AccountURL is required (https://ACCOUNT.blob.core.windows.net, or http://127.0.0.1:10000/devstoreaccount1 for Azurite)")
	} else if u, err := url.Parse(c.AccountURL); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.RawQuery != "" {
		errs = append(errs, fmt.Sprintf("AccountURL %q is not an http:// or https:// URL with a host and no query", c.AccountURL))
	}
	if err := validContainer(c.Container); err != "" {
		errs = append(errs, err)
	}
	if strings.HasPrefix(c.Prefix, "/") {
		errs = append(errs, fmt.Sprintf("Prefix %q must not start with a slash", c.Prefix))
	}
	if len(c.Prefix) > 900 {
		errs = append(errs, fmt.Sprintf("Prefix is %d bytes, want at most 900 (blob names are at most 1024 characters)", len(c.Prefix)))
	}
	if c.RequestTimeout < 0 {
		errs = append(errs, fmt.Sprintf("RequestTimeout %v is negative", c.RequestTimeout))
	}
	creds := 0
	for _, set := range []bool{c.AccountKey != "", c.SAS != "", c.Credential != nil} {
		if set {
			creds++
		}
	}
	switch {
	case (c.AccountName == "") != (c.AccountKey == ""):
		errs = append(errs, "AccountName and AccountKey must be set together")
	case creds > 1:
		errs = append(errs, "set one credential: AccountKey (shared key), SAS or Credential (Entra ID)")
	case creds == 0:
		errs = append(errs, "no credential: set Credential (for example azidentity.NewDefaultAzureCredential), SAS, or AccountName and AccountKey")
	}
	if len(errs) > 0 {
		return errors.New("azblobstore: invalid config: " + strings.Join(errs, "; "))
	}
	return nil
}

// validContainer returns what is wrong with a container name, or "".
func validContainer(name string) string {
	switch {
	case name == "":
		return "Container is required"
	case len(name) < 3 || len(name) > 63 || strings.Trim(name, "abcdefghijklmnopqrstuvwxyz0123456789-") != "" ||
		strings.HasPrefix(name, "-") || strings.HasSuffix(name, "-") || strings.Contains(name, "--"):
		return fmt.Sprintf("Container %q is not a container name (3 to 63 lowercase letters, digits and single hyphens; a prefix goes in Prefix)", name)
	}
	return ""
}
