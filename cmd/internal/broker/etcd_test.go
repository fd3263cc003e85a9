package broker

import (
	"errors"
	"io"
	"strings"
	"testing"

	"github.com/nodeid/nodeid/cmd/internal/envflag"
	"github.com/nodeid/nodeid/cmd/internal/etcdflag"
)

func TestParseServeFlagsEtcd(t *testing.T) {
	c, err := parseServeFlags("nodeid-broker", []string{"--store", "etcd", "--gossip-addr", "127.0.0.1:0"}, env(
		"NODEID_ETCD_ENDPOINTS", "127.0.0.1:2379, 127.0.0.2:2379",
		"NODEID_ETCD_USERNAME", "nodeid",
		"NODEID_ETCD_PASSWORD", "secret",
	), io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	ec := c.etcd.Config(c.prefix)
	if c.store != etcdflag.StoreEtcd || strings.Join(ec.Endpoints, " ") != "127.0.0.1:2379 127.0.0.2:2379" || ec.Username != "nodeid" ||
		ec.Password != "secret" || ec.Prefix != "nodeid/" {
		t.Errorf("%+v", ec)
	}
	if got := c.node.Gossip.Cluster; got != "etcd://127.0.0.1:2379,127.0.0.2:2379/nodeid/" {
		t.Errorf("gossip cluster %q", got)
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--store", "etcd"}, "no endpoints"},
		{[]string{"--store", "etcd", "--etcd-endpoints", "h:1", "--bucket", "b"}, "the S3 flags (--bucket, --s3-endpoint, --embedded-s3) need --store s3"},
		{[]string{"--store", "etcd", "--etcd-endpoints", "h:1", "--etcd-cert-file", "c"}, "go together"},
		{[]string{"--store", "zk"}, `"zk": want s3, etcd, azblob, gcs or k8s`},
		{[]string{"--bucket", "b", "--etcd-endpoints", "h:1"}, "the --etcd-* flags need --store etcd"},
	} {
		_, err := parseServeFlags("nodeid-broker", tc.args, env(), io.Discard)
		if !errors.Is(err, envflag.ErrUsage) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v: %v, want a usage error with %q", tc.args, err, tc.want)
		}
	}
}
