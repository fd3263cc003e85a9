package s3store_test

import (
	"context"
	"errors"
	"testing"

	"github.com/nodeid/nodeid/internal/testkit/stalecache"
	"github.com/nodeid/nodeid/lease"
	"github.com/nodeid/nodeid/s3store"
	"github.com/nodeid/nodeid/s3store/s3fake"
)

// TestProbeReadsGofakes3 runs the read mode's probe on gofakes3, directly
// (it passes: gofakes3 answers If-None-Match on a GET with a 304 that
// carries the ETag) and through a caching proxy that answers conditional
// reads from the last 200 it saw, a stale CDN: refused.
func TestProbeReadsGofakes3(t *testing.T) {
	srv := startFake(t, s3fake.Config{})
	ctx := context.Background()
	open := func(endpoint string) lease.Store {
		c := srv.StoreConfig("reads/")
		c.Endpoint = endpoint
		s, err := s3store.New(ctx, c)
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	r, err := lease.ProbeReads(ctx, open(srv.URL()), open(srv.URL()))
	if err != nil || !r.NotModifiedSeen || !r.DateSeen {
		t.Fatalf("ProbeReads on gofakes3 = %+v, %v; want it to pass with 304s and Dates", r, err)
	}
	proxy, err := stalecache.Start(srv.URL())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(proxy.Close)
	_, err = lease.ProbeReads(ctx, open(proxy.URL()), open(proxy.URL()))
	var se *lease.StaleReadError
	if !errors.Is(err, lease.ErrStaleReads) || !errors.As(err, &se) {
		t.Fatalf("ProbeReads through a stale cache = %v, want ErrStaleReads", err)
	}
	if proxy.Hits() == 0 {
		t.Fatal("the proxy answered nothing from its cache")
	}
	t.Logf("refused: %v", err)
}
