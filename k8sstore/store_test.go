package k8sstore_test

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/nodeid/nodeid/internal/testkit/k8stest"
	"github.com/nodeid/nodeid/k8sstore"
	"github.com/nodeid/nodeid/lease"
	"github.com/nodeid/nodeid/lease/storetest"
)

// open returns a store on srv as user, in namespace ns, under prefix, with
// a small page size, so that listings paginate with a few hundred Leases.
func open(t testing.TB, srv *k8stest.Server, user, ns, prefix string) *k8sstore.Store {
	t.Helper()
	cfg := k8sstore.DefaultConfig()
	cfg.REST, cfg.Namespace, cfg.Prefix, cfg.PageSize = srv.Config(user), ns, prefix, 100
	s, err := k8sstore.New(cfg)
	if err != nil {
		t.Fatalf("k8sstore.New: %v", err)
	}
	return s
}

// TestConformance runs lease/storetest on a real kube-apiserver (the pinned
// binary of test/k8s/install.sh) as the least-privilege user.
func TestConformance(t *testing.T) {
	srv := k8stest.Start(t)
	srv.Namespace(t, "conf")
	run := fmt.Sprintf("run%d/", rand.Int64())
	began := time.Now()
	storetest.Run(t, storetest.Target{
		Open: func(t *testing.T, prefix string) lease.Store {
			return open(t, srv, k8stest.User, "conf", run+strings.ToLower(t.Name())+"/"+prefix)
		},
		ListObjects: 250,
	})
	t.Logf("conformance suite: %v (the apiserver started in %v)", time.Since(began).Round(time.Millisecond), srv.StartTime.Round(time.Millisecond))
}
