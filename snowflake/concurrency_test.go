package snowflake

import (
	"errors"
	"sync"
	"testing"
	"time"
)

// collect runs workers goroutines that each take perWorker IDs from g and
// returns each one's IDs in the order it got them.
func collect(t *testing.T, g *Generator, workers, perWorker int) [][]ID {
	t.Helper()
	out := make([][]ID, workers)
	errs := make(chan error, workers)
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			ids := make([]ID, 0, perWorker)
			for len(ids) < perWorker {
				if w%2 == 0 {
					id, err := g.Next()
					if err != nil {
						errs <- err
						return
					}
					ids = append(ids, id)
				} else {
					r, err := g.NextN(min(7, perWorker-len(ids)))
					if err != nil {
						errs <- err
						return
					}
					ids = r.AppendTo(ids)
				}
			}
			out[w] = ids
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatalf("worker: %v", err)
	}
	return out
}

// checkUnique fails unless all IDs are distinct and each worker's increase.
func checkUnique(t *testing.T, perWorker [][]ID) {
	t.Helper()
	seen := make(map[ID]int)
	for w, ids := range perWorker {
		for i, id := range ids {
			if i > 0 && id <= ids[i-1] {
				t.Fatalf("worker %d: ID %d after %d, not increasing", w, id, ids[i-1])
			}
			if other, dup := seen[id]; dup {
				t.Fatalf("ID %d issued to workers %d and %d", id, other, w)
			}
			seen[id] = w
		}
	}
}

// TestConcurrentNextSystemClock races many goroutines on one generator on
// the real clock; 40,960 IDs on the default layout take at least 10 ms, so
// they run through sequence exhaustion several times.
func TestConcurrentNextSystemClock(t *testing.T) {
	cfg := DefaultConfig()
	cfg.NodeID = 1
	g, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	checkUnique(t, collect(t, g, 16, 2560))
}

// TestConcurrentWaitHasOneWaiter races goroutines on a layout with 4 IDs per
// millisecond and a clock that moves only when the generator sleeps: every
// few IDs someone must wait, and at most one caller may be waiting on the
// clock at any time (the others block), so waiting never costs more than one
// core.
func TestConcurrentWaitHasOneWaiter(t *testing.T) {
	clk := newFakeClock(t0)
	clk.yield = true
	g := newGen(t, clk, withLayout(tiny))
	ids := collect(t, g, 16, 300)
	checkUnique(t, ids)
	if m := clk.maxSleeping.Load(); m != 1 {
		t.Fatalf("%d callers were sleeping at once, want 1", m)
	}
	// 4800 IDs at 4 per ms: exactly 1200 ms, all of them waited for.
	if got, want := clk.sleptTotal(), 1199*time.Millisecond; got != want {
		t.Fatalf("the clock advanced %v, want %v: no millisecond may be skipped", got, want)
	}
}

// TestStopIsFinal checks the release order: once Stop has returned, no call
// can still complete with a later timestamp, even one that passed the fence
// check before.
func TestStopIsFinal(t *testing.T) {
	for round := range 20 {
		cfg := DefaultConfig()
		cfg.NodeID = 2
		cfg.Layout = tiny
		g, err := New(cfg)
		if err != nil {
			t.Fatal(err)
		}
		startMs := time.Now().UnixMilli()
		const workers = 4
		got := make([][]ID, workers)
		var wg sync.WaitGroup
		start := make(chan struct{})
		for w := range workers {
			wg.Go(func() {
				<-start
				for {
					id, err := g.Next()
					if errors.Is(err, ErrFenced) {
						return
					}
					if err != nil {
						t.Errorf("Next: %v", err)
						return
					}
					got[w] = append(got[w], id)
				}
			})
		}
		close(start)
		// Let the workers issue a few milliseconds' worth first.
		for g.LastIssuedMs() < startMs+3 {
			time.Sleep(100 * time.Microsecond)
		}
		last := g.Stop()
		wg.Wait()
		for _, ids := range got {
			for _, id := range ids {
				if p := mustDecode(t, tiny, id); p.TimeMs > last {
					t.Fatalf("round %d: ID with time %d issued after Stop returned %d", round, p.TimeMs, last)
				}
			}
		}
	}
}
