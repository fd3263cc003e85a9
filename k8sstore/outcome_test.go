package k8sstore_test

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"

	"github.com/nodeid/nodeid/internal/testkit/k8stest"
	"github.com/nodeid/nodeid/k8sstore"
	"github.com/nodeid/nodeid/lease"
)

// TestUnknownOutcome: a write whose answer is lost after the apiserver
// applied it (a proxy forwards the PUT and then holds the answer past the
// store's timeout) is a *lease.UnknownOutcomeError, and a read shows it
// landed; a write to an address that refuses connections never left and
// is an ordinary error matching lease.ErrMisconfigured.
func TestUnknownOutcome(t *testing.T) {
	srv := k8stest.Start(t)
	srv.Namespace(t, "outcome")
	target, _ := url.Parse(srv.URL)
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(srv.CAData)
	rp := &httputil.ReverseProxy{
		Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}},
		Rewrite:   func(r *httputil.ProxyRequest) { r.SetURL(target) },
		ModifyResponse: func(resp *http.Response) error {
			if resp.Request.Method == http.MethodPut {
				<-resp.Request.Context().Done() // the client gave up: the answer is lost
			}
			return nil
		},
	}
	ps := httptest.NewServer(rp)
	t.Cleanup(ps.Close)
	cfg := k8sstore.DefaultConfig()
	cfg.REST, cfg.Namespace, cfg.RequestTimeout = srv.Config(k8stest.User), "outcome", time.Second
	cfg.REST.Host, cfg.REST.TLSClientConfig = ps.URL, rest.TLSClientConfig{}
	s, err := k8sstore.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	m, err := s.Create(ctx, "u.json", []byte(`{"n":0}`))
	if err != nil {
		t.Fatal(err)
	}
	_, err = s.Update(ctx, "u.json", []byte(`{"n":1}`), m.ETag)
	var uo *lease.UnknownOutcomeError
	if !errors.As(err, &uo) {
		t.Fatalf("an update whose answer was lost: %v, want a *lease.UnknownOutcomeError", err)
	}
	body, _, err := s.Get(ctx, "u.json")
	if err != nil || string(body) != `{"n":1}` {
		t.Fatalf("read back: %q, %v; want the update, which landed", body, err)
	}

	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	cfg.REST.Host = "http://" + addr
	refused, err := k8sstore.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	_, err = refused.Create(ctx, "v.json", []byte("{}"))
	if err == nil || errors.As(err, &uo) || !errors.Is(err, lease.ErrMisconfigured) {
		t.Fatalf("a create to a refused address: %v, want a definite error, not an unknown outcome", err)
	}
	t.Logf("refused: %v", err)
}

// TestUpdateOfDeletedLease: a renewal of a Lease someone deleted fails as a
// conditional write (lease.ErrPreconditionFailed) and does not recreate it,
// although the Lease API creates a missing object on a PUT: the update
// carries the Lease's UID.
func TestUpdateOfDeletedLease(t *testing.T) {
	srv := k8stest.Start(t)
	srv.Namespace(t, "deleted")
	s := open(t, srv, k8stest.User, "deleted", "nodeid.")
	ctx := context.Background()
	m, err := s.Create(ctx, "7.json", []byte(`{"v":1}`))
	if err != nil {
		t.Fatal(err)
	}
	if err := srv.Clientset(t).CoordinationV1().Leases("deleted").Delete(ctx, "nodeid.7.json", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Update(ctx, "7.json", []byte(`{"v":2}`), m.ETag); !errors.Is(err, lease.ErrPreconditionFailed) {
		t.Fatalf("update of a deleted Lease: %v, want lease.ErrPreconditionFailed", err)
	}
	if _, _, err := s.Get(ctx, "7.json"); !errors.Is(err, lease.ErrNotFound) {
		t.Fatalf("after the refused update, Get: %v, want lease.ErrNotFound (not recreated)", err)
	}
}
