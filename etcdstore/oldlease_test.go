package etcdstore_test

// Behaviour the design relies on (docs/evidence/design.md section 5: an old etcd lease
// is never revoked, and is harmless).

import (
	"context"
	"testing"
	"time"

	"github.com/nodeid/nodeid/internal/testkit/etcdtest"
	"github.com/nodeid/nodeid/lease"
)

// A previous holder's etcd lease, never revoked, must not end a later
// holder's liveness when it runs out: the later write re-attaches <key>.live
// to its own lease. And a short ttl is rounded up (etcd's minimum TTL).
func TestOldLeaseDoesNotExpireNewLiveness(t *testing.T) {
	srv := etcdtest.Start(t)
	s := open(t, srv, "review/")
	ctx := context.Background()
	m, err := s.CreateLive(ctx, "0.json", []byte(`a`), time.Second) // lease L1: 1 s (etcd: at least its minimum)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.UpdateLive(ctx, "0.json", []byte(`b`), m.ETag, 20*time.Second); err != nil { // lease L2: 20 s
		t.Fatal(err)
	}
	time.Sleep(4 * time.Second) // L1 has run out and been revoked
	_, got, err := s.Get(ctx, "0.json")
	if err != nil {
		t.Fatal(err)
	}
	if got.Liveness != lease.LivenessLive {
		t.Fatalf("liveness %v after the previous holder's lease ran out, want live (the new one runs 20 s)", got.Liveness)
	}
	// And the liveness does end: a write with a 1 s lease reads expired a few seconds later.
	m2, err := s.UpdateLive(ctx, "0.json", []byte(`c`), got.ETag, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(4 * time.Second)
	_, got, err = s.Get(ctx, "0.json")
	if err != nil || got.Liveness != lease.LivenessExpired || got.ETag != m2.ETag {
		t.Fatalf("after the 1 s liveness: %+v, %v; want expired with the object unchanged (etag %s)", got, err, m2.ETag)
	}
}
