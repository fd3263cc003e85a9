// Package k8sflag is the one copy of the --k8s-* flags (and --kubeconfig)
// that nodeid-broker and nodeidctl share with --store k8s (each also a
// NODEID_ variable through envflag: NODEID_K8S_NAMESPACE, NODEID_KUBECONFIG),
// and of their checks, shaped like gcsflag.
package k8sflag

import (
	"errors"
	"fmt"
	"os"
	"strings"
	"time"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/nodeid/nodeid/cmd/internal/envflag"
	"github.com/nodeid/nodeid/cmd/internal/storeflag"
	"github.com/nodeid/nodeid/k8sstore"
)

// Store is the --store value of Kubernetes Leases (k8sstore).
const Store = "k8s"

// Names are the flags Bind declares, for envflag.Set.Bind.
var Names = []string{"k8s-namespace", "kubeconfig", "k8s-request-timeout"}

// NamespaceFile is where a pod finds its own namespace, the default of
// --k8s-namespace.
const NamespaceFile = "/var/run/secrets/kubernetes.io/serviceaccount/namespace"

// Flags are the values of the --k8s-* flags.
type Flags struct {
	Namespace      string
	Kubeconfig     string
	RequestTimeout time.Duration
	// namespaceFile is NamespaceFile; tests point it elsewhere.
	namespaceFile string
}

// Bind declares the flags on f.
func (g *Flags) Bind(f *envflag.Set) {
	f.StringVar(&g.Namespace, "k8s-namespace", "", "with --store k8s: the namespace of the Leases (empty: the pod's own, from "+NamespaceFile+", else the kubeconfig context's)")
	f.StringVar(&g.Kubeconfig, "kubeconfig", "", "with --store k8s: a kubeconfig file (empty: the in-cluster service account in a pod, else $KUBECONFIG or ~/.kube/config)")
	f.DurationVar(&g.RequestTimeout, "k8s-request-timeout", k8sstore.DefaultRequestTimeout, "with --store k8s: bound on each apiserver request")
}

// Set reports whether any --k8s-* flag that names the store was given.
func (g *Flags) Set() bool { return g.Namespace != "" || g.Kubeconfig != "" }

// Config returns the store's configuration under prefix: the client
// configuration in-cluster (no --kubeconfig, in a pod), else from the
// kubeconfig (--kubeconfig, else $KUBECONFIG's rules), and the namespace.
func (g *Flags) Config(prefix string) (k8sstore.Config, error) {
	c := k8sstore.DefaultConfig()
	c.Prefix, c.RequestTimeout = prefix, g.RequestTimeout
	var ns string
	if g.Kubeconfig == "" {
		if rc, err := rest.InClusterConfig(); err == nil {
			c.REST = rc
		} else if !errors.Is(err, rest.ErrNotInCluster) {
			return c, fmt.Errorf("--store k8s: in-cluster config: %w", err)
		}
	}
	if c.REST == nil {
		rules := clientcmd.NewDefaultClientConfigLoadingRules()
		rules.ExplicitPath = g.Kubeconfig
		cc := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, &clientcmd.ConfigOverrides{})
		rc, err := cc.ClientConfig()
		if err != nil {
			return c, fmt.Errorf("--store k8s: no in-cluster config and no usable kubeconfig (set --kubeconfig): %w", err)
		}
		c.REST = rc
		if n, _, err := cc.Namespace(); err == nil {
			ns = n
		}
	}
	c.Namespace = g.Namespace
	if c.Namespace == "" {
		file := g.namespaceFile
		if file == "" {
			file = NamespaceFile
		}
		if b, err := os.ReadFile(file); err == nil {
			c.Namespace = strings.TrimSpace(string(b))
		} else {
			c.Namespace = ns
		}
	}
	return c, nil
}

// Check checks the --k8s-* flags for --store k8s, under prefix
// (storeflag.Check has made sure no other store's flags were given). It
// reads the kubeconfig, not the apiserver.
func (g *Flags) Check(prefix string) error {
	c, err := g.Config(prefix)
	if err != nil {
		return envflag.Usagef("%v", err)
	}
	if c.Namespace == "" {
		return envflag.Usagef("--store k8s: set --k8s-namespace (no %s: not in a pod)", NamespaceFile)
	}
	if err := c.Validate(); err != nil {
		return envflag.Usagef("%s", strings.NewReplacer("k8sstore: invalid config: ", "", "Namespace ", "--k8s-namespace ",
			"RequestTimeout ", "--k8s-request-timeout ", "Prefix ", "--prefix ", "shorten the prefix", "shorten --prefix").Replace(err.Error()))
	}
	return nil
}

// Family is the store as storeflag.Check sees it, under prefix.
func (g *Flags) Family(prefix string) storeflag.Family {
	return storeflag.Family{Store: Store, Flags: "the --k8s-* flags and --kubeconfig", Given: g.Set(), Check: func() error { return g.Check(prefix) }}
}

// Name names the store in logs and gossip's default cluster identity:
// k8s://SERVER/NAMESPACE/PREFIX (SERVER the apiserver's host).
func (g *Flags) Name(prefix string) string {
	c, err := g.Config(prefix)
	if err != nil || c.REST == nil {
		return fmt.Sprintf("k8s://?/%s/%s", g.Namespace, prefix)
	}
	host := strings.TrimPrefix(strings.TrimPrefix(c.REST.Host, "https://"), "http://")
	return fmt.Sprintf("k8s://%s/%s/%s", strings.TrimSuffix(host, "/"), c.Namespace, prefix)
}

// Where names the store for messages.
func (g *Flags) Where() string {
	c, err := g.Config("")
	if err != nil || c.REST == nil {
		return "Kubernetes Leases"
	}
	return fmt.Sprintf("Kubernetes Leases in namespace %s at %s", c.Namespace, c.REST.Host)
}
