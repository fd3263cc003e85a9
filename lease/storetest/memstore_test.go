package storetest_test

import (
	"sync"
	"testing"
	"time"

	"github.com/nodeid/nodeid/lease"
	"github.com/nodeid/nodeid/lease/storetest"
)

// fakeNow is a settable clock for the in-memory store.
type fakeNow struct {
	mu sync.Mutex
	t  time.Time
}

func (f *fakeNow) Now() time.Time { f.mu.Lock(); defer f.mu.Unlock(); return f.t }
func (f *fakeNow) Advance(d time.Duration) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.t = f.t.Add(d)
}

func TestMemStoreConformance(t *testing.T) {
	storetest.Run(t, storetest.Target{
		Open: func(t *testing.T, prefix string) lease.Store {
			return bucketFor(t).WithPrefix(prefix)
		},
	})
}

func TestMemStoreConformanceFakeClock(t *testing.T) {
	clk := &fakeNow{t: time.Date(2026, 11, 21, 12, 0, 0, 400e6, time.UTC)}
	var mu sync.Mutex
	buckets := map[string]*storetest.MemStore{}
	storetest.Run(t, storetest.Target{
		Open: func(t *testing.T, prefix string) lease.Store {
			mu.Lock()
			defer mu.Unlock()
			b, ok := buckets[t.Name()]
			if !ok {
				b = storetest.NewMemStore(storetest.WithClock(clk.Now))
				buckets[t.Name()] = b
			}
			return b.WithPrefix(prefix)
		},
		Wait: clk.Advance,
	})
}

var (
	bucketsMu sync.Mutex
	buckets   = map[string]*storetest.MemStore{}
)

func bucketFor(t *testing.T) *storetest.MemStore {
	bucketsMu.Lock()
	defer bucketsMu.Unlock()
	b, ok := buckets[t.Name()]
	if !ok {
		b = storetest.NewMemStore()
		buckets[t.Name()] = b
	}
	return b
}
