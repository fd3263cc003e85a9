package node

import (
	"context"
	"errors"
	"net"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nodeid/nodeid/etcdstore"
	"github.com/nodeid/nodeid/lease"
	"github.com/nodeid/nodeid/lease/storetest"
	"github.com/nodeid/nodeid/s3store"
)

// silentEndpoint listens on 127.0.0.1, accepts every connection and never
// answers on it (nor closes it) until the test ends. It returns the address
// and the number of connections accepted so far.
func silentEndpoint(t *testing.T) (string, func() int) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var (
		mu    sync.Mutex
		conns []net.Conn
		wg    sync.WaitGroup
	)
	wg.Go(func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			conns = append(conns, c) // held open, never read or written
			mu.Unlock()
		}
	})
	t.Cleanup(func() {
		_ = ln.Close()
		wg.Wait()
		for _, c := range conns {
			_ = c.Close()
		}
	})
	return ln.Addr().String(), func() int { mu.Lock(); defer mu.Unlock(); return len(conns) }
}

// silentS3 returns an s3store.Store on a silent endpoint; set changes its
// configuration first (nil: the defaults).
func silentS3(t *testing.T, addr string, set func(*s3store.Config)) *s3store.Store {
	t.Helper()
	sc := s3store.DefaultConfig()
	sc.Bucket, sc.Endpoint, sc.UsePathStyle, sc.Region = "lease-bucket", "http://"+addr, true, "us-east-1"
	sc.AccessKeyID, sc.SecretAccessKey = "key", "secret"
	if set != nil {
		set(&sc)
	}
	st, err := s3store.New(context.Background(), sc)
	if err != nil {
		t.Fatal(err)
	}
	return st
}

// startOnSilentStore starts a node on store, whose endpoint accepts
// connections and never answers, with Provider.AcquireTimeout an hour (so
// that only the store's request timeout can end Start before the test's own
// bound of 20 s), and returns Start's error, after checking what every such
// start must show: the test's bound did not end it, the probe never ran,
// the check's deadline ended it, and /health names the failure.
func startOnSilentStore(t *testing.T, store lease.Store, cfg Config, accepted func() int) error {
	t.Helper()
	cfg.Provider.AcquireTimeout = time.Hour
	n, err := New(store, cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second) // a guard, not the bound under test
	defer cancel()
	err = n.Start(ctx)
	switch {
	case err == nil:
		t.Fatal("Start succeeded on a store that never answers")
	case ctx.Err() != nil:
		t.Fatalf("Start ended by the test's own 20 s guard, not by the store's request timeout: %v", err)
	case !errors.Is(err, context.DeadlineExceeded):
		t.Fatalf("Start: %v, want the check's deadline (context.DeadlineExceeded)", err)
	case errors.Is(err, lease.ErrProbeInconclusive) || n.probeStatus() != nil:
		t.Fatalf("Start: %v: the probe ran (%+v), want the check to end Start first", err, n.probeStatus())
	case !strings.HasPrefix(err.Error(), "store check: "):
		t.Fatalf("Start: %v, want it to say the store check failed", err)
	case accepted() == 0:
		t.Fatal("the silent endpoint accepted no connection: the store did not reach it")
	}
	if code, body := get(n.Handler(), "/health"); code != http.StatusServiceUnavailable || !strings.Contains(body, "store check") {
		t.Errorf("/health after the failed start: %d %s, want 503 with the reason", code, body)
	}
	_ = n.Close(closeCtx(t))
	t.Log(err)
	return err
}

// TestStartFailsOnSilentS3Endpoint: an S3 endpoint that accepts connections
// and never answers ends Start when the store's request timeout ends its
// check (here 300 ms), not after the probe retried until AcquireTimeout; the
// error names the endpoint and the bucket, and the bound.
func TestStartFailsOnSilentS3Endpoint(t *testing.T) {
	addr, accepted := silentEndpoint(t)
	st := silentS3(t, addr, func(c *s3store.Config) { c.RequestTimeout = 300 * time.Millisecond })
	err := startOnSilentStore(t, st, testConfig("a", 2), accepted)
	want := `no answer from http://` + addr + ` (bucket "lease-bucket") within 300ms`
	if !strings.Contains(err.Error(), want) || errors.Is(err, lease.ErrMisconfigured) {
		t.Fatalf("Start: %v, want %q (not matching lease.ErrMisconfigured)", err, want)
	}
}

// TestStartFailsOnSilentS3EndpointByDefault: with the default configurations
// of the store and the node (node.DefaultConfig: AcquireTimeout 30 s), the
// bound is s3store.DefaultRequestTimeout, 5 s, as nodeid-broker's.
func TestStartFailsOnSilentS3EndpointByDefault(t *testing.T) {
	if s3store.DefaultRequestTimeout != 5*time.Second {
		t.Fatalf("s3store.DefaultRequestTimeout %v: the documented default is 5s", s3store.DefaultRequestTimeout)
	}
	addr, accepted := silentEndpoint(t)
	cfg := DefaultConfig()
	cfg.Provider.TaskID = "a"
	err := startOnSilentStore(t, silentS3(t, addr, nil), cfg, accepted)
	want := `no answer from http://` + addr + ` (bucket "lease-bucket") within 5s`
	if !strings.Contains(err.Error(), want) {
		t.Fatalf("Start: %v, want %q", err, want)
	}
}

// TestStartFailsOnSilentEtcdEndpoint: the same for etcd, the error naming
// the endpoints.
func TestStartFailsOnSilentEtcdEndpoint(t *testing.T) {
	addr, accepted := silentEndpoint(t)
	st, err := etcdstore.New(etcdstore.Config{Endpoints: []string{addr}, Prefix: "nodeid/", RequestTimeout: 300 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	err = startOnSilentStore(t, st, testConfig("a", 2), accepted)
	want := "etcdstore: check [" + addr + "]: no answer within 300ms"
	if !strings.Contains(err.Error(), want) {
		t.Fatalf("Start: %v, want %q", err, want)
	}
}

// checkedStore is a store with a Check of the test's.
type checkedStore struct {
	lease.Store
	check func(ctx context.Context) error
}

func (s checkedStore) Check(ctx context.Context) error { return s.check(ctx) }
func (s checkedStore) Describe() string                { return "the test's store" }

// TestStartChecksTheStoreFirst: Start runs the store's Check once, before
// any other request, through the node's own wrapper of the store; a failed
// check ends Start with no other request sent, and the probe's errors name
// the store (lease.Describer).
func TestStartChecksTheStoreFirst(t *testing.T) {
	fs := storetest.NewFaultStore(storetest.NewMemStore())
	var requests, checks atomic.Int64
	fs.SetInjector(func(storetest.Op, string) storetest.Fault { requests.Add(1); return storetest.Fault{} })
	refused := errors.New("s3store: check: access denied")
	store := checkedStore{Store: fs, check: func(context.Context) error {
		checks.Add(1)
		if requests.Load() != 0 {
			t.Errorf("%d requests before the check", requests.Load())
		}
		return refused
	}}
	n, err := New(store, testConfig("a", 2))
	if err != nil {
		t.Fatal(err)
	}
	if err := n.Start(context.Background()); !errors.Is(err, refused) || err.Error() != "store check: "+refused.Error() {
		t.Fatalf("Start: %v, want the check's error", err)
	}
	if c, r := checks.Load(), requests.Load(); c != 1 || r != 0 {
		t.Fatalf("%d checks and %d other requests, want 1 and 0", c, r)
	}
	_ = n.Close(closeCtx(t))

	// A passing check: Start goes on; a probe that cannot tell names the store.
	store.check = func(context.Context) error { checks.Add(1); return nil }
	fs.SetInjector(func(op storetest.Op, key string) storetest.Fault {
		if op == storetest.OpCreate {
			return storetest.Fault{Err: storetest.Unknown(op, key)}
		}
		return storetest.Fault{}
	})
	cfg := testConfig("b", 2)
	cfg.Provider.AcquireTimeout = 200 * time.Millisecond // the probe retries this long, then gives up
	n, err = New(store, cfg)
	if err != nil {
		t.Fatal(err)
	}
	err = n.Start(context.Background())
	if !errors.Is(err, lease.ErrProbeInconclusive) || !strings.HasPrefix(err.Error(), "store probe of the test's store: ") {
		t.Fatalf("Start: %v, want an inconclusive probe naming the store", err)
	}
	if c := checks.Load(); c != 2 {
		t.Errorf("%d checks, want 1 more", c-1)
	}
	_ = n.Close(closeCtx(t))
}
