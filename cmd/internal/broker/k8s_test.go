package broker

import (
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/nodeid/nodeid/cmd/internal/envflag"
	"github.com/nodeid/nodeid/cmd/internal/k8sflag"
)

func TestParseServeFlagsK8s(t *testing.T) {
	kc := filepath.Join(t.TempDir(), "kubeconfig")
	if err := os.WriteFile(kc, []byte("apiVersion: v1\nkind: Config\nclusters:\n- name: c\n  cluster: {server: \"https://10.0.0.1:6443\"}\n"+
		"users:\n- name: u\n  user: {token: t}\ncontexts:\n- name: x\n  context: {cluster: c, user: u}\ncurrent-context: x\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	c, err := parseServeFlags("nodeid-broker", []string{"--store", "k8s", "--gossip-addr", "127.0.0.1:0"},
		env("NODEID_KUBECONFIG", kc, "NODEID_K8S_NAMESPACE", "ids"), io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if c.store != k8sflag.Store || c.k8s.Kubeconfig != kc || c.k8s.Namespace != "ids" {
		t.Errorf("%+v", c.k8s)
	}
	if got := c.node.Gossip.Cluster; got != "k8s://10.0.0.1:6443/ids/nodeid/" {
		t.Errorf("gossip cluster %q", got)
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--store", "k8s", "--kubeconfig", kc, "--k8s-namespace", "ids", "--bucket", "b"}, "the S3 flags (--bucket, --s3-endpoint, --embedded-s3) need --store s3"},
		{[]string{"--bucket", "b", "--k8s-namespace", "ids"}, "the --k8s-* flags and --kubeconfig need --store k8s"},
	} {
		_, err := parseServeFlags("nodeid-broker", tc.args, env(), io.Discard)
		if !errors.Is(err, envflag.ErrUsage) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v: %v, want a usage error with %q", tc.args, err, tc.want)
		}
	}
}
