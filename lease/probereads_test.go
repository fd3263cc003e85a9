package lease_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/nodeid/nodeid/lease"
	"github.com/nodeid/nodeid/lease/storetest"
)

// rewriting is a store whose conditional reads are rewritten by fn, as a
// broken server or proxy would answer them.
type rewriting struct {
	*storetest.MemStore
	fn func(key, etag string, body []byte, m lease.Meta, err error) ([]byte, lease.Meta, error)
}

func (s rewriting) GetIfChanged(ctx context.Context, key, etag string) ([]byte, lease.Meta, error) {
	body, m, err := s.MemStore.GetIfChanged(ctx, key, etag)
	return s.fn(key, etag, body, m, err)
}

// staleGets is a store whose plain GETs of the probe object are served from
// a cache filled by the first one (a cache in front of the store).
type staleGets struct {
	rewriting
	body *[]byte
	meta *lease.Meta
}

func (s staleGets) Get(ctx context.Context, key string) ([]byte, lease.Meta, error) {
	if key == lease.ProbeKey && *s.body != nil {
		return *s.body, *s.meta, nil
	}
	b, m, err := s.rewriting.Get(ctx, key)
	if err == nil && key == lease.ProbeKey {
		*s.body, *s.meta = b, m
	}
	return b, m, err
}

func TestProbeReads(t *testing.T) {
	ctx := context.Background()
	t.Run("a store that shows every write", func(t *testing.T) {
		mem := storetest.NewMemStore()
		r, err := lease.ProbeReads(ctx, mem, mem.WithPrefix(""))
		if err != nil || !r.NotModifiedSeen || !r.DateSeen {
			t.Fatalf("ProbeReads = %+v, %v; want it to pass with 304s and Dates", r, err)
		}
		if n := mem.Count(storetest.OpGetIfChanged); n != 3*lease.ProbeReadsRounds {
			t.Errorf("%d conditional reads, want %d", n, 3*lease.ProbeReadsRounds)
		}
	})
	t.Run("a stale cache in front of the store", func(t *testing.T) {
		mem := storetest.NewMemStore(storetest.StaleConditionalReads())
		_, err := lease.ProbeReads(ctx, mem, mem.WithPrefix(""))
		var se *lease.StaleReadError
		if !errors.Is(err, lease.ErrStaleReads) || !errors.As(err, &se) || !errors.Is(err, lease.ErrNotModified) {
			t.Fatalf("ProbeReads error = %v, want a StaleReadError with the 304", err)
		}
		if se.Reader != "the holder's store" || !strings.Contains(se.Seen, "304") || se.Replaced == se.Written {
			t.Errorf("StaleReadError = %+v", se)
		}
		t.Log(err)
	})
	t.Run("a store that ignores If-None-Match on reads", func(t *testing.T) {
		mem := storetest.NewMemStore()
		full := rewriting{mem, func(key, _ string, body []byte, m lease.Meta, err error) ([]byte, lease.Meta, error) {
			if errors.Is(err, lease.ErrNotModified) {
				return mem.Get(ctx, key)
			}
			return body, m, err
		}}
		if r, err := lease.ProbeReads(ctx, full, full); err != nil || r.NotModifiedSeen {
			t.Fatalf("ProbeReads = %+v, %v; want it to pass, with no 304 seen", r, err)
		}
	})
	t.Run("a 304 without an ETag", func(t *testing.T) {
		mem := storetest.NewMemStore()
		noETag := rewriting{mem, func(key, etag string, body []byte, m lease.Meta, err error) ([]byte, lease.Meta, error) {
			if errors.Is(err, lease.ErrNotModified) {
				return nil, lease.Meta{}, lease.NotModifiedUnproven(key, etag, "")
			}
			return body, m, err
		}}
		r, err := lease.ProbeReads(ctx, noETag, noETag)
		if err != nil || !r.PlainReads || r.NotModifiedSeen {
			t.Fatalf("ProbeReads = %+v, %v; want it to pass with plain reads", r, err)
		}
		if n := mem.Count(storetest.OpGetIfChanged); n != 1 {
			t.Errorf("%d conditional reads, want the first only (then plain GETs)", n)
		}
	})
	t.Run("a 304 without an ETag, and plain reads stale", func(t *testing.T) {
		mem := storetest.NewMemStore()
		var cached []byte
		var cachedMeta lease.Meta
		stale := staleGets{rewriting{mem, func(key, etag string, body []byte, m lease.Meta, err error) ([]byte, lease.Meta, error) {
			if errors.Is(err, lease.ErrNotModified) {
				return nil, lease.Meta{}, lease.NotModifiedUnproven(key, etag, "")
			}
			return body, m, err
		}}, &cached, &cachedMeta}
		_, err := lease.ProbeReads(ctx, stale, mem.WithPrefix(""))
		var se *lease.StaleReadError
		if !errors.Is(err, lease.ErrStaleReads) || !errors.As(err, &se) || !strings.Contains(se.Seen, "200 with ETag") {
			t.Fatalf("ProbeReads error = %v, want a StaleReadError on a plain read", err)
		}
	})
	t.Run("a wrapper that hides the conditional read", func(t *testing.T) {
		mem := storetest.NewMemStore()
		hidden := struct{ lease.Store }{mem}
		if _, err := lease.ProbeReads(ctx, hidden, mem); !errors.Is(err, lease.ErrNoConditionalRead) {
			t.Fatalf("ProbeReads error = %v, want ErrNoConditionalRead", err)
		}
		if _, err := lease.ProbeReads(ctx, mem, hidden); !errors.Is(err, lease.ErrNoConditionalRead) {
			t.Fatalf("ProbeReads error = %v, want ErrNoConditionalRead", err)
		}
	})
	t.Run("a scoped store forwards it", func(t *testing.T) {
		mem := storetest.NewMemStore()
		scoped := lease.Scope(struct{ lease.Store }{mem}, "sub/") // no Scoper: the filtered wrapper
		if _, err := lease.ProbeReads(ctx, scoped, scoped); !errors.Is(err, lease.ErrNoConditionalRead) {
			t.Fatalf("ProbeReads through a wrapper of a hidden reader = %v, want ErrNoConditionalRead", err)
		}
		f := storetest.NewFaultStore(mem) // not a Scoper either: Scope wraps it
		scoped = lease.Scope(f, "sub/")
		if _, err := lease.ProbeReads(ctx, scoped, scoped); err != nil {
			t.Fatalf("ProbeReads through Scope and a FaultStore: %v", err)
		}
		if _, _, err := mem.Get(ctx, "sub/"+lease.ProbeKey); err != nil {
			t.Fatalf("the probe object is not under the scope: %v", err)
		}
	})
}
