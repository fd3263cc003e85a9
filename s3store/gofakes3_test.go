package s3store_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nodeid/nodeid/lease"
	"github.com/nodeid/nodeid/lease/storetest"
	"github.com/nodeid/nodeid/s3store"
	"github.com/nodeid/nodeid/s3store/s3fake"
)

// fakeTarget runs the conformance suite on gofakes3: one server per suite run,
// one bucket per test (the suite's namespace), the prefix as given.
// startFake starts gofakes3 with cfg for the test and closes it at the end.
func startFake(t *testing.T, cfg s3fake.Config) *s3fake.Server {
	t.Helper()
	srv, err := s3fake.Start(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = srv.Close() })
	return srv
}

func fakeTarget(t *testing.T, cfg s3fake.Config) storetest.Target {
	srv := startFake(t, cfg)
	var (
		mu      sync.Mutex
		buckets = map[string]string{}
	)
	return storetest.Target{
		Open: func(t *testing.T, prefix string) lease.Store {
			mu.Lock()
			b, ok := buckets[t.Name()]
			if !ok {
				b = fmt.Sprintf("t%03d", len(buckets))
				buckets[t.Name()] = b
				if err := srv.CreateBucket(b); err != nil {
					mu.Unlock()
					t.Fatal(err)
				}
			}
			mu.Unlock()
			c := srv.StoreConfig(prefix)
			c.Bucket = b
			s, err := s3store.New(context.Background(), c)
			if err != nil {
				t.Fatal(err)
			}
			return s
		},
	}
}

func TestConformanceGofakes3(t *testing.T) {
	storetest.Run(t, fakeTarget(t, s3fake.Config{}))
}

func TestConformanceGofakes3FakeClock(t *testing.T) {
	clk := s3fake.NewClock(time.Now().UTC().Truncate(time.Second).Add(400 * time.Millisecond))
	tg := fakeTarget(t, s3fake.Config{Now: clk.Now})
	tg.Wait = clk.Advance
	storetest.Run(t, tg)
}

func TestCheckGofakes3(t *testing.T) {
	srv := startFake(t, s3fake.Config{})
	ok, err := s3store.New(context.Background(), srv.StoreConfig("nodeid/"))
	if err != nil {
		t.Fatal(err)
	}
	if err := ok.Check(context.Background()); err != nil {
		t.Fatalf("Check on an existing bucket: %v", err)
	}
	c := srv.StoreConfig("nodeid/")
	c.Bucket = "no-such-bucket"
	missing, err := s3store.New(context.Background(), c)
	if err != nil {
		t.Fatal(err)
	}
	if err := missing.Check(context.Background()); err == nil || !strings.Contains(err.Error(), `bucket "no-such-bucket" does not exist at `+srv.URL()) {
		t.Fatalf("Check on a missing bucket error = %v", err)
	}
	// Without path style the SDK puts the bucket in the host name, which does
	// not resolve: the error says so.
	c = srv.StoreConfig("nodeid/")
	c.UsePathStyle = false
	c.Endpoint = strings.Replace(srv.URL(), "127.0.0.1", "localhost", 1)
	vhost, err := s3store.New(context.Background(), c)
	if err != nil {
		t.Fatal(err)
	}
	if err := vhost.Check(context.Background()); err == nil {
		t.Logf("virtual-hosted addressing on localhost resolved (nss resolves *.localhost here)")
	} else {
		t.Logf("virtual-hosted addressing: %v", err)
	}
}

// TestTenClientsRace races ten stores, each with its own S3 client and
// connections, to create one key and then to update it from one ETag: exactly
// one wins each race (litestream's TestLeaser_ConcurrentAcquisition).
func TestTenClientsRace(t *testing.T) {
	srv := startFake(t, s3fake.Config{})
	stores := make([]*s3store.Store, 10)
	for i := range stores {
		var err error
		if stores[i], err = s3store.New(context.Background(), srv.StoreConfig("race/")); err != nil {
			t.Fatal(err)
		}
	}
	race := func(op func(i int, s *s3store.Store) (lease.Meta, error)) (winner lease.Meta) {
		var (
			wg   sync.WaitGroup
			mu   sync.Mutex
			wins int
		)
		for i, s := range stores {
			wg.Go(func() {
				m, err := op(i, s)
				mu.Lock()
				defer mu.Unlock()
				switch {
				case err == nil:
					wins++
					winner = m
				case !errors.Is(err, lease.ErrPreconditionFailed):
					t.Errorf("client %d: %v", i, err)
				}
			})
		}
		wg.Wait()
		if wins != 1 {
			t.Fatalf("%d of %d clients won, want exactly 1", wins, len(stores))
		}
		return winner
	}
	ctx := context.Background()
	created := race(func(i int, s *s3store.Store) (lease.Meta, error) {
		return s.Create(ctx, "0.json", fmt.Appendf(nil, "create %d", i))
	})
	race(func(i int, s *s3store.Store) (lease.Meta, error) {
		return s.Update(ctx, "0.json", fmt.Appendf(nil, "update %d", i), created.ETag)
	})
}

// Static credentials (a local or embedded S3) must not depend on the
// environment's AWS set-up: a stray AWS_PROFILE naming no profile once broke
// every local run.
func TestStaticCredentialsIgnoreSharedConfig(t *testing.T) {
	t.Setenv("AWS_PROFILE", "no-such-profile")
	t.Setenv("AWS_CONFIG_FILE", "/nonexistent/config")
	srv := startFake(t, s3fake.Config{})
	s, err := s3store.New(context.Background(), srv.StoreConfig("p/"))
	if err != nil {
		t.Fatalf("New with static credentials and AWS_PROFILE=no-such-profile: %v", err)
	}
	if _, err := s.Create(context.Background(), "k", []byte("v")); err != nil {
		t.Fatalf("Create: %v", err)
	}
}
