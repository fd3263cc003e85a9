package k8sflag

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

const kubeconfig = `apiVersion: v1
kind: Config
clusters:
- name: c
  cluster: {server: "https://10.0.0.1:6443"}
users:
- name: u
  user: {token: t}
contexts:
- name: x
  context: {cluster: c, user: u, namespace: from-context}
current-context: x
`

// TestConfigFromFlags: --kubeconfig names the server; the namespace is
// --k8s-namespace, else the pod's, else the kubeconfig context's.
func TestConfigFromFlags(t *testing.T) {
	dir := t.TempDir()
	kc := filepath.Join(dir, "kubeconfig")
	if err := os.WriteFile(kc, []byte(kubeconfig), 0o600); err != nil {
		t.Fatal(err)
	}
	nsFile := filepath.Join(dir, "namespace")
	f := Flags{Kubeconfig: kc, namespaceFile: nsFile}
	c, err := f.Config("nodeid/")
	if err != nil || c.REST.Host != "https://10.0.0.1:6443" || c.Namespace != "from-context" || c.Prefix != "nodeid/" {
		t.Fatalf("Config = %+v, %v", c, err)
	}
	if got, want := f.Name("nodeid/"), "k8s://10.0.0.1:6443/from-context/nodeid/"; got != want {
		t.Errorf("Name = %q, want %q", got, want)
	}
	if err := os.WriteFile(nsFile, []byte("from-pod\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if c, _ := f.Config("nodeid/"); c.Namespace != "from-pod" {
		t.Errorf("namespace %q, want the pod's", c.Namespace)
	}
	f.Namespace = "given"
	if c, _ := f.Config("nodeid/"); c.Namespace != "given" {
		t.Errorf("namespace %q, want --k8s-namespace's", c.Namespace)
	}
	if err := f.Check("nodeid/"); err != nil {
		t.Errorf("Check: %v", err)
	}
	for _, tc := range []struct {
		flags  Flags
		prefix string
		want   string
	}{
		{Flags{Kubeconfig: kc, Namespace: "Bad_NS", namespaceFile: nsFile}, "nodeid/", `--k8s-namespace "Bad_NS" is not a namespace name`},
		{Flags{Kubeconfig: kc, Namespace: "ok", namespaceFile: nsFile}, "-x/", `--prefix "-x/"`},
		{Flags{Kubeconfig: filepath.Join(dir, "absent"), namespaceFile: nsFile}, "nodeid/", "set --kubeconfig"},
	} {
		err := tc.flags.Check(tc.prefix)
		if err == nil || !strings.Contains(err.Error(), tc.want) || strings.Contains(err.Error(), "k8sstore:") {
			t.Errorf("Check(%+v, %q) = %v, want a usage error containing %q", tc.flags, tc.prefix, err, tc.want)
		}
	}
}
