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
	storetest.Run(t, memTarget())
}

func TestMemStoreConformanceFakeClock(t *testing.T) {
	clk := &fakeNow{t: time.Date(2026, 11, 21, 12, 0, 0, 400e6, time.UTC)}
	target := memTarget(storetest.WithClock(clk.Now))
	target.Wait = clk.Advance
	storetest.Run(t, target)
}

// TestMemStoreConformanceJudged runs the suite on a MemStore that judges
// expiry itself, on a fake clock.
func TestMemStoreConformanceJudged(t *testing.T) {
	clk := &fakeNow{t: time.Date(2026, 11, 21, 12, 0, 0, 400e6, time.UTC)}
	target := memTarget(storetest.WithClock(clk.Now), storetest.WithJudgedExpiry())
	target.Wait, target.Now, target.Judged = clk.Advance, clk.Now, true
	storetest.Run(t, target)
}

// memTarget opens one fresh MemStore per subtest. The buckets belong to the
// returned target, so each run of a test has its own: with -count=N, a later
// run must not find an earlier run's objects under the same subtest name.
func memTarget(opts ...storetest.MemOption) storetest.Target {
	var mu sync.Mutex
	buckets := map[string]*storetest.MemStore{}
	return storetest.Target{
		Open: func(t *testing.T, prefix string) lease.Store {
			mu.Lock()
			defer mu.Unlock()
			b, ok := buckets[t.Name()]
			if !ok {
				b = storetest.NewMemStore(opts...)
				buckets[t.Name()] = b
			}
			return b.WithPrefix(prefix)
		},
	}
}
