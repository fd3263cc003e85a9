package lease_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/nodeid/nodeid/lease"
	"github.com/nodeid/nodeid/lease/storetest"
)

// plainWrapper is the wrapper a user writes to log or meter store calls: it
// embeds lease.Store, which hides an optional lease.LiveWriter.
type plainWrapper struct{ lease.Store }

// forwardingWrapper forwards LiveWriter as a wrapper must.
type forwardingWrapper struct{ lease.Store }

func (w forwardingWrapper) CreateLive(ctx context.Context, key string, body []byte, ttl time.Duration) (lease.Meta, error) {
	return lease.CreateLive(ctx, w.Store, key, body, ttl)
}

func (w forwardingWrapper) UpdateLive(ctx context.Context, key string, body []byte, etag string, ttl time.Duration) (lease.Meta, error) {
	return lease.UpdateLive(ctx, w.Store, key, body, etag, ttl)
}

// TestLivenessCannotBeLostByWrapping: on a store that judges expiry itself, a
// held write (ttl > 0) through a wrapper that hides LiveWriter is applied
// without its liveness, and says so (ErrLivenessUnbound) instead of
// succeeding; the probe refuses such a wrapper before anything is taken. A
// wrapper that forwards LiveWriter, a free write (ttl 0) and any write on a
// store that reports its clock are unaffected.
func TestLivenessCannotBeLostByWrapping(t *testing.T) {
	ctx := context.Background()
	judged := func() lease.Store { return storetest.NewMemStore(storetest.WithJudgedExpiry()) }
	for _, tt := range []struct {
		name    string
		store   lease.Store
		ttl     time.Duration
		unbound bool // the writes say ErrLivenessUnbound
		refused bool // the probe says ErrLivenessUnbound
	}{
		{"judging store, plain wrapper", plainWrapper{judged()}, time.Minute, true, true},
		{"judging store, plain wrapper, free record", plainWrapper{judged()}, 0, false, true},
		{"judging store, forwarding wrapper", forwardingWrapper{judged()}, time.Minute, false, false},
		{"judging store", judged(), time.Minute, false, false},
		{"store clock, plain wrapper", plainWrapper{storetest.NewMemStore()}, time.Minute, false, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			m, err := lease.CreateLive(ctx, tt.store, "0.json", []byte("a"), tt.ttl)
			if got := errors.Is(err, lease.ErrLivenessUnbound); got != tt.unbound {
				t.Fatalf("CreateLive: %v; want ErrLivenessUnbound %v", err, tt.unbound)
			}
			_, err = lease.UpdateLive(ctx, tt.store, "0.json", []byte("b"), m.ETag, tt.ttl)
			if got := errors.Is(err, lease.ErrLivenessUnbound); got != tt.unbound {
				t.Fatalf("UpdateLive: %v; want ErrLivenessUnbound %v", err, tt.unbound)
			}
			_, err = lease.Probe(ctx, tt.store)
			if got := errors.Is(err, lease.ErrLivenessUnbound); got != tt.refused {
				t.Fatalf("Probe: %v; want ErrLivenessUnbound %v", err, tt.refused)
			}
		})
	}
}
