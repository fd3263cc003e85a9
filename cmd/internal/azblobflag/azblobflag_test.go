package azblobflag

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"
	"github.com/Azure/azure-sdk-for-go/sdk/azidentity"

	"github.com/nodeid/nodeid/azblobstore"
	"github.com/nodeid/nodeid/cmd/internal/envflag"
)

// fakeCredential answers GetToken with its token, or its error, and records
// the scopes asked for.
type fakeCredential struct {
	token  string
	err    error
	calls  atomic.Int32
	scopes atomic.Value // []string
}

func (f *fakeCredential) GetToken(_ context.Context, opts policy.TokenRequestOptions) (azcore.AccessToken, error) {
	f.calls.Add(1)
	f.scopes.Store(opts.Scopes)
	if f.err != nil {
		return azcore.AccessToken{}, f.err
	}
	return azcore.AccessToken{Token: f.token, ExpiresOn: time.Now().Add(time.Hour)}, nil
}

func flags(accountURL string) Flags {
	return Flags{AccountURL: accountURL, Container: "leases", RequestTimeout: 5 * time.Second}
}

// TestCredentialSelection: a key selects shared key, a SAS the SAS, neither
// the token credential NewCredential makes; a chain that cannot be made is
// an error that says why it was used.
func TestCredentialSelection(t *testing.T) {
	fake := &fakeCredential{token: "t"}
	made := 0
	newCred := func() (azcore.TokenCredential, error) { made++; return fake, nil }

	key := flags("https://a.blob.core.windows.net")
	key.AccountName, key.AccountKey = "a", "a2V5"
	sas := flags("https://a.blob.core.windows.net")
	sas.SAS = "sv=1&sig=x"
	for _, f := range []Flags{key, sas} {
		c, err := f.StoreConfig("nodeid/", newCred)
		if err != nil || f.EntraID() || c.Credential != nil || c.AccountKey != f.AccountKey || c.SAS != f.SAS || made != 0 {
			t.Errorf("%+v: config %+v, %v; made %d credentials", f, c, err, made)
		}
	}

	entra := flags("https://a.blob.core.windows.net")
	c, err := entra.StoreConfig("nodeid/", newCred)
	if err != nil || !entra.EntraID() || c.Credential == nil || c.AccountKey != "" || c.SAS != "" || made != 1 {
		t.Fatalf("no key, no SAS: config %+v, %v; made %d credentials", c, err, made)
	}
	if err := c.Validate(); err != nil {
		t.Error(err)
	}
	if tok, err := c.Credential.GetToken(context.Background(), policy.TokenRequestOptions{}); err != nil || tok.Token != "t" {
		t.Errorf("the credential's token: %v, %v", tok, err)
	}

	_, err = entra.StoreConfig("nodeid/", func() (azcore.TokenCredential, error) { return nil, errors.New("bad AZURE_TOKEN_CREDENTIALS") })
	if err == nil || !strings.Contains(err.Error(), "without --azblob-account-key or --azblob-sas") || !strings.Contains(err.Error(), "bad AZURE_TOKEN_CREDENTIALS") {
		t.Errorf("a chain that cannot be made: %v", err)
	}
}

// TestCheck: with neither a key nor a SAS the flags are valid (Entra ID);
// a half shared key, or two credentials, are usage errors.
func TestCheck(t *testing.T) {
	for _, tc := range []struct {
		f    func(*Flags)
		want string // "" for valid
	}{
		{func(*Flags) {}, ""},
		{func(f *Flags) { f.SAS = "sv=1" }, ""},
		{func(f *Flags) { f.AccountName, f.AccountKey = "a", "k" }, ""},
		{func(f *Flags) { f.AccountName = "a" }, "AccountName and AccountKey must be set together"},
		{func(f *Flags) { f.AccountName, f.AccountKey, f.SAS = "a", "k", "sv=1" }, "set one credential"},
		{func(f *Flags) { f.AccountURL = "" }, "AccountURL is required"},
		{func(f *Flags) { f.AccountURL = "http://127.0.0.1:10000/devstoreaccount1" }, "tokens (no --azblob-account-key or --azblob-sas) are sent over https only"},
		{func(f *Flags) { f.AccountURL, f.SAS = "http://127.0.0.1:10000/devstoreaccount1", "sv=1" }, ""},
	} {
		f := flags("https://a.blob.core.windows.net")
		tc.f(&f)
		err := f.Check("nodeid/")
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("%+v: %v", f, err)
		case tc.want != "" && (!errors.Is(err, envflag.ErrUsage) || !strings.Contains(err.Error(), tc.want)):
			t.Errorf("%+v: %v, want a usage error with %q", f, err, tc.want)
		}
	}
}

// TestToken: the store sends the token credential's token as a bearer token
// for Azure Storage's scope; a chain that gets no token fails the store's
// check, before any request, with a message that says why the chain was used
// and what it tried.
func TestToken(t *testing.T) {
	var auth atomic.Value
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		auth.Store(r.Header.Get("Authorization"))
		w.Header().Set("x-ms-error-code", "AuthorizationPermissionMismatch")
		w.WriteHeader(http.StatusForbidden)
	}))
	defer srv.Close()
	f := flags(srv.URL + "/account")
	check := func(cred *fakeCredential) error {
		t.Helper()
		c, err := f.StoreConfig("nodeid/", func() (azcore.TokenCredential, error) { return cred, nil })
		if err != nil {
			t.Fatal(err)
		}
		c.Transport = srv.Client()
		st, err := azblobstore.New(c)
		if err != nil {
			t.Fatal(err)
		}
		return st.Check(context.Background())
	}

	ok := &fakeCredential{token: "fake-token"}
	if err := check(ok); err == nil || !strings.Contains(err.Error(), "access denied") {
		t.Errorf("check with a token, answered 403: %v", err)
	}
	if got := auth.Load(); got != "Bearer fake-token" {
		t.Errorf("Authorization %q, want the bearer token", got)
	}
	if s, _ := ok.scopes.Load().([]string); len(s) != 1 || s[0] != "https://storage.azure.com/.default" {
		t.Errorf("scopes %v", s)
	}

	auth.Store("")
	failing := &fakeCredential{err: azidentity.NewCredentialUnavailableError("ManagedIdentityCredential: no managed identity endpoint")}
	err := check(failing)
	t.Logf("a failing chain: %v", err)
	for _, want := range []string{"without --azblob-account-key or --azblob-sas authenticates with Microsoft Entra ID",
		"managed identity", "got no token", "no managed identity endpoint", `container "leases"`, srv.URL} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("check with a failing chain: %v; want %q in it", err, want)
		}
	}
	if got := auth.Load(); got != "" {
		t.Errorf("a request was sent (Authorization %q)", got)
	}
}

// TestDefaultCredentialFails: azidentity's own chain, narrowed by
// AZURE_TOKEN_CREDENTIALS to the environment's service principal with none
// configured, fails the check without a request, offline, and the message
// names what it tried.
func TestDefaultCredentialFails(t *testing.T) {
	t.Setenv("AZURE_TOKEN_CREDENTIALS", "EnvironmentCredential")
	for _, v := range []string{"AZURE_CLIENT_ID", "AZURE_TENANT_ID", "AZURE_CLIENT_SECRET", "AZURE_CLIENT_CERTIFICATE_PATH", "AZURE_USERNAME"} {
		t.Setenv(v, "")
	}
	f := flags("https://127.0.0.1:1/account")
	c, err := f.StoreConfig("nodeid/", nil)
	if err != nil {
		t.Fatal(err)
	}
	st, err := azblobstore.New(c)
	if err != nil {
		t.Fatal(err)
	}
	err = st.Check(context.Background())
	t.Logf("DefaultAzureCredential, nothing configured: %v", err)
	for _, want := range []string{"got no token", "EnvironmentCredential", "AZURE_TENANT_ID"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("check: %v; want %q in it", err, want)
		}
	}
}
