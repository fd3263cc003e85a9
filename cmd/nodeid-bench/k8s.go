package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"syscall"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/nodeid/nodeid/internal/testkit/etcdtest"
	"github.com/nodeid/nodeid/internal/testkit/k8stest"
	"github.com/nodeid/nodeid/k8sstore"
	"github.com/nodeid/nodeid/lease"
)

// k8sBackend is the Kubernetes side of a backend: the pinned kube-apiserver
// (test/k8s/install.sh) on the pinned etcd, started for the run on a fresh
// folder, a namespace, and one client shared by every task (the latency
// comes from the meter, as on etcd).
type k8sBackend struct {
	store  *k8sstore.Store
	etcd   *etcdtest.Server
	server *k8stest.Server
	dir    string
}

// benchNamespace holds the run's Leases.
const benchNamespace = "nodeid-bench"

// startK8s starts etcd and kube-apiserver and opens the store.
func startK8s(ctx context.Context) (*k8sBackend, error) {
	bin, ebin := k8stest.Binary(), etcdtest.Binary()
	if bin == "" || ebin == "" {
		return nil, errors.New("--store k8s needs the pinned kube-apiserver and etcd: bash test/k8s/install.sh; bash test/etcd/install.sh")
	}
	dir, err := os.MkdirTemp("", "nodeid-bench-k8s-")
	if err != nil {
		return nil, err
	}
	k := &k8sBackend{dir: dir}
	if k.etcd, err = etcdtest.Launch(ebin, dir); err != nil {
		k.close()
		return nil, err
	}
	if k.server, err = k8stest.Launch(bin, filepath.Join(dir, "apiserver"), k.etcd); err != nil {
		k.close()
		return nil, err
	}
	cs, err := kubernetes.NewForConfig(k.server.Config(k8stest.Admin))
	if err == nil {
		_, err = cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: benchNamespace}}, metav1.CreateOptions{})
	}
	if err != nil {
		k.close()
		return nil, fmt.Errorf("create namespace %s: %w", benchNamespace, err)
	}
	cfg := k8sstore.DefaultConfig()
	cfg.REST, cfg.Namespace, cfg.Prefix = k.server.Config(k8stest.Admin), benchNamespace, ""
	if k.store, err = k8sstore.New(cfg); err != nil {
		k.close()
		return nil, err
	}
	return k, nil
}

// scoped returns the store under prefix.
func (k *k8sBackend) scoped(prefix string) lease.Store { return k.store.Scope(prefix) }

func (k *k8sBackend) close() {
	if k.server != nil {
		k.server.Stop(syscall.SIGTERM)
	}
	if k.etcd != nil {
		k.etcd.Stop(syscall.SIGTERM)
	}
	_ = os.RemoveAll(k.dir)
}

func (k *k8sBackend) name() string {
	return "Kubernetes Leases (kube-apiserver on a single etcd member on 127.0.0.1, the pinned servers of test/k8s/install.sh and test/etcd/install.sh)"
}
