package k8sstore_test

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"k8s.io/client-go/rest"

	"github.com/nodeid/nodeid/internal/testkit/k8stest"
	"github.com/nodeid/nodeid/k8sstore"
	"github.com/nodeid/nodeid/lease"
)

// rvStrip is a reverse proxy in front of the apiserver that, when strip is
// set, takes the resourceVersion precondition out of every PUT: it replaces
// metadata.resourceVersion in the JSON body with the Lease's current one,
// read just before, so the PUT lands whatever version the client named (a
// last-write-wins intermediary). Deleting the field would not do:
// kube-apiserver v1.37 refuses a Lease update without one (422 "must be
// specified for an update"). It counts what it replaced.
func rvStrip(t *testing.T, srv *k8stest.Server, strip bool) (*rest.Config, *atomic.Int32) {
	t.Helper()
	target, err := url.Parse(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(srv.CAData)
	var stripped atomic.Int32
	tr := &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}
	current := func(in *http.Request) any {
		req, _ := http.NewRequestWithContext(in.Context(), http.MethodGet, srv.URL+in.URL.Path, nil)
		req.Header.Set("Authorization", in.Header.Get("Authorization"))
		resp, err := tr.RoundTrip(req)
		if err != nil {
			return nil
		}
		defer resp.Body.Close()
		var l struct {
			Metadata struct {
				ResourceVersion string `json:"resourceVersion"`
			} `json:"metadata"`
		}
		if json.NewDecoder(resp.Body).Decode(&l) != nil || l.Metadata.ResourceVersion == "" {
			return nil
		}
		return l.Metadata.ResourceVersion
	}
	rp := &httputil.ReverseProxy{
		Transport: tr,
		Rewrite: func(r *httputil.ProxyRequest) {
			r.SetURL(target)
			if !strip || r.In.Method != http.MethodPut {
				return
			}
			body, err := io.ReadAll(r.Out.Body)
			if err != nil {
				t.Errorf("proxy: read body: %v", err)
				return
			}
			var obj map[string]any
			if err := json.Unmarshal(body, &obj); err != nil {
				t.Errorf("proxy: a PUT body that is not JSON (%s): %v", r.In.Header.Get("Content-Type"), err)
			} else if md, ok := obj["metadata"].(map[string]any); ok && md["resourceVersion"] != nil {
				if rv := current(r.In); rv != nil {
					md["resourceVersion"] = rv
					stripped.Add(1)
					body, _ = json.Marshal(obj)
				}
			}
			r.Out.Body = io.NopCloser(bytes.NewReader(body))
			r.Out.ContentLength = int64(len(body))
		},
	}
	ps := httptest.NewServer(rp)
	t.Cleanup(ps.Close)
	cfg := srv.Config(k8stest.User)
	cfg.Host, cfg.TLSClientConfig = ps.URL, rest.TLSClientConfig{}
	return cfg, &stripped
}

// TestProbeRefusesStrippedResourceVersion: the store probe passes on the
// apiserver through a proxy that forwards every PUT as it is, and refuses it
// with lease.ErrConditionIgnored when the proxy deletes the
// resourceVersion, the update's precondition, from PUT bodies.
func TestProbeRefusesStrippedResourceVersion(t *testing.T) {
	srv := k8stest.Start(t)
	srv.Namespace(t, "probe")
	ctx := context.Background()
	for _, strip := range []bool{false, true} {
		cfg, stripped := rvStrip(t, srv, strip)
		c := k8sstore.DefaultConfig()
		c.REST, c.Namespace = cfg, "probe"
		c.Prefix = map[bool]string{false: "plain.", true: "stripped."}[strip]
		s, err := k8sstore.New(c)
		if err != nil {
			t.Fatal(err)
		}
		_, err = lease.Probe(ctx, s)
		switch {
		case !strip && err != nil:
			t.Fatalf("probe through a proxy that forwards every PUT: %v", err)
		case strip && !errors.Is(err, lease.ErrConditionIgnored):
			t.Fatalf("probe through a proxy that strips resourceVersion from PUTs = %v, want lease.ErrConditionIgnored", err)
		case strip && stripped.Load() == 0:
			t.Fatal("the proxy stripped nothing: the test proves nothing")
		}
		t.Logf("strip=%v: %v (resourceVersions stripped: %d)", strip, err, stripped.Load())
	}
}

// TestPermissions: a user without a Role on Leases gets a one-line error
// that names the verbs to grant and matches lease.ErrMisconfigured, from
// Check and from each operation; a missing namespace says so.
func TestPermissions(t *testing.T) {
	srv := k8stest.Start(t)
	srv.Namespace(t, "perm")
	ctx := context.Background()
	s := open(t, srv, k8stest.Nobody, "perm", "nodeid.")
	errs := map[string]error{"check": s.Check(ctx)}
	_, _, errs["get"] = s.Get(ctx, "1.json")
	_, errs["list"] = s.List(ctx)
	_, errs["create"] = s.Create(ctx, "1.json", []byte("{}"))
	for op, err := range errs {
		if !errors.Is(err, lease.ErrMisconfigured) || !strings.Contains(err.Error(), "get, list, create and update on leases") || strings.Contains(err.Error(), "\n") {
			t.Errorf("%s as a user without a Role: %v, want one line naming the verbs, matching lease.ErrMisconfigured", op, err)
		}
	}
	t.Logf("create: %v", errs["create"])
	if err := open(t, srv, k8stest.User, "perm", "nodeid.").Check(ctx); err != nil {
		t.Errorf("check as the least-privilege user: %v", err)
	}
	err := open(t, srv, k8stest.Admin, "absent", "nodeid.").Check(ctx)
	_, cerr := open(t, srv, k8stest.Admin, "absent", "nodeid.").Create(ctx, "1.json", []byte("{}"))
	for _, err := range []error{err, cerr} {
		if err != nil && (!errors.Is(err, lease.ErrMisconfigured) || !strings.Contains(err.Error(), `namespace "absent" does not exist`)) {
			t.Errorf("a missing namespace: %v, want it named", err)
		}
	}
	if cerr == nil {
		t.Error("a create in a missing namespace succeeded")
	}
}

// TestLastModifiedIsTheWrite proves the store's clock on the real
// apiserver: every write's LastModified (the managedFields time) lies
// between the Date of an answer received before the write was sent and the
// Date of the write's own answer, in whole seconds; so every write renews
// it, and a write a second after another carries a later one.
func TestLastModifiedIsTheWrite(t *testing.T) {
	srv := k8stest.Start(t)
	srv.Namespace(t, "clock")
	ctx := context.Background()
	s := open(t, srv, k8stest.User, "clock", "nodeid.")
	m, err := s.Create(ctx, "t.json", []byte(`{"n":0}`))
	if err != nil {
		t.Fatal(err)
	}
	var last time.Time
	for i := range 4 {
		_, before, err := s.Get(ctx, "t.json")
		if err != nil {
			t.Fatal(err)
		}
		if i > 0 && !before.Date.After(last) {
			// Wait for the apiserver's clock to pass the last write's second.
			for !before.Date.After(last) {
				time.Sleep(100 * time.Millisecond)
				if _, before, err = s.Get(ctx, "t.json"); err != nil {
					t.Fatal(err)
				}
			}
		}
		if m, err = s.Update(ctx, "t.json", []byte(`{"n":1}`), before.ETag); err != nil {
			t.Fatal(err)
		}
		if m.LastModified.Before(before.Date.Truncate(time.Second)) || m.LastModified.After(m.Date) {
			t.Fatalf("write %d: LastModified %v, want within [%v, %v] (the Dates before and after it)", i, m.LastModified, before.Date, m.Date)
		}
		if !m.LastModified.After(last) {
			t.Fatalf("write %d, sent after Date %v: LastModified %v did not pass the previous %v", i, before.Date, m.LastModified, last)
		}
		_, got, err := s.Get(ctx, "t.json")
		if err != nil || !got.LastModified.Equal(m.LastModified) || got.ETag != m.ETag {
			t.Fatalf("read back: %+v, %v; want the write's %+v", got, err, m)
		}
		last = m.LastModified
	}
}
