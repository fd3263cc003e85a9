package broker

import (
	"errors"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/nodeid/nodeid/cmd/internal/azblobflag"
	"github.com/nodeid/nodeid/cmd/internal/envflag"
)

func TestParseServeFlagsAzblob(t *testing.T) {
	c, err := parseServeFlags("nodeid-broker", []string{"--store", "azblob", "--gossip-addr", "127.0.0.1:0",
		"--azblob-account-url", "http://127.0.0.1:10000/devstoreaccount1", "--azblob-container", "leases"}, env(
		"NODEID_AZBLOB_ACCOUNT_NAME", "devstoreaccount1",
		"NODEID_AZBLOB_ACCOUNT_KEY", "a2V5",
		"NODEID_AZBLOB_REQUEST_TIMEOUT", "2s",
	), io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	ac := c.azblob.Config(c.prefix)
	if c.store != azblobflag.Store || ac.AccountURL != "http://127.0.0.1:10000/devstoreaccount1" || ac.Container != "leases" ||
		ac.AccountName != "devstoreaccount1" || ac.AccountKey != "a2V5" || ac.Prefix != "nodeid/" || ac.RequestTimeout != 2*time.Second {
		t.Errorf("%+v", ac)
	}
	if got := c.node.Gossip.Cluster; got != "azblob://http://127.0.0.1:10000/devstoreaccount1/leases/nodeid/" {
		t.Errorf("gossip cluster %q", got)
	}
	base := []string{"--store", "azblob", "--azblob-account-url", "https://a.blob.core.windows.net", "--azblob-container", "leases"}
	// Neither a key nor a SAS: Microsoft Entra ID (azblobflag.DefaultCredential).
	c, err = parseServeFlags("nodeid-broker", base, env(), io.Discard)
	if err != nil || !c.azblob.EntraID() {
		t.Errorf("no key, no SAS: %v, Entra ID %v", err, c.azblob.EntraID())
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--store", "azblob"}, "AccountURL is required"},
		{append(base[:len(base):len(base)], "--azblob-account-name", "a"), "AccountName and AccountKey must be set together"},
		{[]string{"--store", "azblob", "--azblob-account-url", "http://127.0.0.1:10000/devstoreaccount1", "--azblob-container", "leases"}, "sent over https only"},
		{append(base[:len(base):len(base)], "--azblob-sas", "sv=1", "--bucket", "b"), "the S3 flags (--bucket, --s3-endpoint, --embedded-s3) need --store s3"},
		{append(base[:len(base):len(base)], "--azblob-sas", "sv=1", "--etcd-endpoints", "h:1"), "the --etcd-* flags need --store etcd"},
		{append(base[:len(base):len(base)], "--azblob-sas", "sv=1", "--azblob-account-name", "a", "--azblob-account-key", "k"), "one credential"},
		{[]string{"--bucket", "b", "--azblob-container", "leases"}, "need --store azblob"},
		{[]string{"--store", "zk"}, `"zk": want s3, etcd, azblob, gcs or k8s`},
	} {
		_, err := parseServeFlags("nodeid-broker", tc.args, env(), io.Discard)
		if !errors.Is(err, envflag.ErrUsage) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v: %v, want a usage error with %q", tc.args, err, tc.want)
		}
	}
}
