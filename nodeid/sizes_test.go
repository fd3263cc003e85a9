package nodeid

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/nodeid/nodeid/lease/storetest"
)

// sizedView is filledView with object i listed at size(i) bytes.
func sizedView(n int, date time.Time, etag func(id int) string, size func(id int) int64) *clusterView {
	v := filledView(n, date, func(int) time.Time { return start })
	for id, o := range v.objects {
		o.ETag, o.Size = etag(id), size(id)
		v.objects[id] = o
	}
	return v
}

// TestCandidatesFromListedSizes pins how listed lengths order the visits: a
// free record is shorter than a held one, so short objects come first among
// those the listing cannot judge; an object read held and rewritten to about
// its length (renewed) is not read again, one rewritten shorter (released) is
// read first; unknown lengths (0) change nothing.
func TestCandidatesFromListedSizes(t *testing.T) {
	e := newEnv(t)
	cfg := e.config("task-a")
	cfg.ClusterSize = 8
	p := e.provider(cfg)
	date := start.Add(2 * time.Second)
	etag := func(round string) func(int) string {
		return func(id int) string { return "e" + round + string(rune('0'+id)) }
	}

	// A join: IDs 3 and 6 were released a moment ago, the rest are held.
	w := &watched{held: map[int]heldLease{}}
	v := sizedView(8, date, etag("a"), func(id int) int64 {
		if id == 3 || id == 6 {
			return 150
		}
		return 300
	})
	first := p.candidates(v, map[int]bool{}, w, nil)
	if !slices.Contains(first[:2], 3) || !slices.Contains(first[:2], 6) {
		t.Fatalf("join: %v, want the short 3 and 6 first", first)
	}

	// A waiter read every ID held; then all were renewed (new ETags, about
	// the same length) but 4, which was released (shorter).
	for id := range 8 {
		w.held[id] = heldLease{etag: v.objects[id].ETag, size: 300, lease: 3 * time.Second}
	}
	w.soonest = time.Time{}
	v2 := sizedView(8, date, etag("b"), func(id int) int64 {
		if id == 4 {
			return 230
		}
		return 300 + int64(id%3)*9
	})
	if second := p.candidates(v2, map[int]bool{}, w, nil); !slices.Equal(second, []int{4}) {
		t.Fatalf("waiter: %v, want only the released 4 (the renewed ones are not read again)", second)
	}
	if w.soonest.IsZero() {
		t.Fatal("the renewed leases left out do not bound the wait")
	}

	// Lengths unknown (a store that does not list them): nothing is left
	// out for having been rewritten.
	v3 := sizedView(8, date, etag("c"), func(int) int64 { return 0 })
	if third := p.candidates(v3, map[int]bool{}, w, nil); len(third) != 8 {
		t.Fatalf("unknown lengths: %v, want every ID", third)
	}
}

// TestWaiterReadsOnlyWhatWasReleased: a task waiting in a full cluster reads
// each lease once; while the holders renew it reads none again, and when one
// releases, the one GET it makes is of that lease, which it takes.
func TestWaiterReadsOnlyWhatWasReleased(t *testing.T) {
	e := newEnv(t)
	cfg := e.config("holder")
	if _, err := Init(context.Background(), e.store, cfg); err != nil {
		t.Fatal(err)
	}
	var claims []*Claim
	for i := range cfg.ClusterSize {
		hc := cfg
		hc.TaskID = taskName(i)
		claims = append(claims, e.acquire(e.provider(hc)))
	}
	e.settle(claims...)
	wc := cfg
	wc.TaskID, wc.AcquireTimeout = "waiter", time.Minute
	ch := acquireAsync(e.provider(wc))
	all := len(claims) + 1
	e.asleep(all)
	gets := e.mem.Count(storetest.OpGet)
	for end := e.clk.Now().Add(5 * time.Second); e.clk.Now().Before(end); {
		e.step(all)
	}
	if g := e.mem.Count(storetest.OpGet) - gets; g != 0 {
		t.Fatalf("the waiter made %d GETs in 5 s of renewals, want 0", g)
	}
	released := claims[1]
	if err := released.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	all--
	gets = e.mem.Count(storetest.OpGet)
	for {
		select {
		case r := <-ch:
			if r.err != nil || r.c.NodeID() != released.NodeID() || r.c.Version() != 2 {
				t.Fatalf("waiter: %v, %v; want node %d at version 2", r.c, r.err, released.NodeID())
			}
			if g := e.mem.Count(storetest.OpGet) - gets; g != 1 {
				t.Fatalf("the waiter made %d GETs after the release, want 1 (the released lease)", g)
			}
			_ = r.c.Close(context.Background())
			return
		default:
			e.step(all)
		}
	}
}
