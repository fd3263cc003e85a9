package minio_test

import (
	"fmt"
	"sync"
	"testing"

	"github.com/nodeid/nodeid/lease"
	"github.com/nodeid/nodeid/lease/storetest"
)

func TestConformanceMinIO(t *testing.T)     { runConformance(t, minio) }
func TestConformanceVersitygw(t *testing.T) { runConformance(t, versitygw) }

// TestConformanceS3 runs the suite on an endpoint of your own (AWS S3 or any
// S3-compatible server) when NODEID_TEST_S3_BUCKET or NODEID_TEST_S3_ENDPOINT is
// set; see docs/evidence/s3-testing.md. It is never required, not even in CI.
func TestConformanceS3(t *testing.T) { runConformance(t, ownS3) }

// runConformance runs storetest.Run on s3store against srv: one bucket for the
// whole run and a fresh root prefix per subtest (the suite's namespace).
func runConformance(t *testing.T, srv server) {
	ns := srv.open(t)
	t.Logf("%s: s3://%s/%s on %s", srv.name, ns.bucket, ns.root, srv.env("ENDPOINT"))
	var (
		mu    sync.Mutex
		roots = map[string]string{}
	)
	storetest.Run(t, storetest.Target{
		Open: func(t *testing.T, prefix string) lease.Store {
			mu.Lock()
			root, ok := roots[t.Name()]
			if !ok {
				root = fmt.Sprintf("%02d/", len(roots))
				roots[t.Name()] = root
			}
			mu.Unlock()
			return ns.store(t, root+prefix)
		},
		NotModifiedWithoutETag: srv.notModifiedWithoutETag,
		GetETagMayLag:          srv.getETagMayLag,
	})
}
