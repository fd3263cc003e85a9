//go:build faults

package faults

import (
	"net/url"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/nodeid/nodeid/internal/testkit/k8stest"
	"github.com/nodeid/nodeid/k8sstore"
	"github.com/nodeid/nodeid/lease"
)

// needK8s builds the binaries and starts a kube-apiserver (on an etcd of
// its own) for t as a storeBackend; without the binaries the scenario
// skips, or fails with CI=true.
func needK8s(t *testing.T) (*suite, storeBackend) {
	t.Helper()
	s := needBinaries(t)
	srv := k8stest.Start(t)
	u, err := url.Parse(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	return s, &kubeAPI{srv: srv, host: u.Host, dir: t.TempDir()}
}

// kubeAPI is Kubernetes Leases on a real kube-apiserver, as a storeBackend
// that can be restarted: a namespace per run, the least-privilege user (a
// Role on Leases), a kubeconfig per broker naming its proxy.
type kubeAPI struct {
	srv  *k8stest.Server
	host string // the apiserver's host:port
	dir  string // kubeconfig files
}

func (k *kubeAPI) Name() string { return "Kubernetes Leases on kube-apiserver at " + k.srv.URL }

func (k *kubeAPI) Open(t *testing.T, name, prefix string) lease.Store {
	t.Helper()
	k.srv.Namespace(t, name)
	cfg := k8sstore.DefaultConfig()
	cfg.REST, cfg.Namespace, cfg.Prefix, cfg.RequestTimeout = k.srv.Config(k8stest.User), name, prefix, 2*time.Second
	st, err := k8sstore.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return st
}

func (k *kubeAPI) Target() string { return k.host }

func (k *kubeAPI) BrokerArgs(name, addr string) []string {
	f, err := os.CreateTemp(k.dir, "kubeconfig-")
	if err != nil {
		panic(err) // the test's own folder
	}
	_ = f.Close()
	if err := k.srv.WriteKubeconfig(f.Name(), "https://"+addr, k8stest.User, name); err != nil {
		panic(err)
	}
	return []string{"--store", "k8s", "--kubeconfig", filepath.Clean(f.Name())}
}

func (k *kubeAPI) BrokerEnv() []string { return nil }

// Restart implements storeRestarter: kube-apiserver killed and restarted
// after down on the same port and etcd (the Leases survive); it returns
// once /readyz answers.
func (k *kubeAPI) Restart(sig syscall.Signal, down time.Duration) error {
	return k.srv.Restart(sig, down)
}

// TestPartitionK8s: ScenarioPartitionK8s, the partition script on
// Kubernetes Leases (kube-apiserver on its etcd), through a TCP proxy per
// broker: a holder partitioned past the grace (it exits 3, the spare takes
// its ID over expired), one within it and every broker's store black-holed
// within it (each recovers), and the apiserver killed and restarted (each
// recovers when it is back within the bound); with the real broker
// (partition-k8s-control: every check must pass) and with the nofence
// mutant (the checks must find the partitioned holder serving after the
// spare took its ID over). See testPartitionStore.
func TestPartitionK8s(t *testing.T) {
	s, k := needK8s(t)
	forEachSeed(t, ScenarioPartitionK8s, func(t *testing.T, seed uint64) {
		t.Run("partition-k8s-control", func(t *testing.T) { testPartitionStore(t, s, k, ScenarioPartitionK8s, seed, "") })
		t.Run("nofence", func(t *testing.T) { testPartitionStore(t, s, k, ScenarioPartitionK8s, seed, "nofence") })
	})
}
