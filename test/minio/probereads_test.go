package minio_test

import (
	"context"
	"errors"
	"testing"

	"github.com/nodeid/nodeid/internal/testkit/stalecache"
	"github.com/nodeid/nodeid/lease"
	"github.com/nodeid/nodeid/s3store"
)

// TestProbeReads runs the read mode's probe (lease.ProbeReads) on each real
// server, directly and through a caching proxy that answers conditional
// reads from the last 200 it saw (a stale CDN). MinIO passes directly;
// versitygw 1.8.0 passes with plain reads, its 304s carrying no ETag;
// through the proxy both are refused.
func TestProbeReads(t *testing.T) {
	for _, srv := range []server{minio, versitygw} {
		t.Run(srv.name, func(t *testing.T) {
			ns := srv.open(t)
			ctx := context.Background()
			open := func(endpoint string) lease.Store {
				c := srv.config(ns.bucket, ns.root+"reads/")
				if endpoint != "" {
					c.Endpoint = endpoint
				}
				st, err := s3store.New(ctx, c)
				if err != nil {
					t.Fatal(err)
				}
				return st
			}
			r, err := lease.ProbeReads(ctx, open(""), open(""))
			switch {
			case srv.notModifiedWithoutETag && (err != nil || !r.PlainReads):
				t.Fatalf("ProbeReads = %+v, %v; want a pass with plain reads, the 304s carrying no ETag", r, err)
			case !srv.notModifiedWithoutETag && (err != nil || !r.NotModifiedSeen || !r.DateSeen):
				t.Fatalf("ProbeReads = %+v, %v; want it to pass with 304s and Dates", r, err)
			}
			t.Logf("direct: %+v, %v", r, err)
			proxy, err := stalecache.Start(srv.env("ENDPOINT"))
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(proxy.Close)
			_, err = lease.ProbeReads(ctx, open(proxy.URL()), open(proxy.URL()))
			if !errors.Is(err, lease.ErrStaleReads) || proxy.Hits() == 0 {
				t.Fatalf("ProbeReads through a stale cache = %v (%d answers from the cache), want ErrStaleReads", err, proxy.Hits())
			}
			t.Logf("through a stale cache: %v", err)
		})
	}
}
