package nodeid

import (
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/nodeid/nodeid/lease"
)

// filledView returns a view of n lease objects listed at date, object i last
// modified at modified[i] with ETag "e<i>".
func filledView(n int, date time.Time, modified func(id int) time.Time) *clusterView {
	v := &clusterView{manifest: lease.Manifest{ClusterSize: n, Filled: true}}
	l := lease.Listing{Date: date}
	for id := range n {
		l.Objects = append(l.Objects, lease.ObjectInfo{Key: lease.RecordKey(id), ETag: "e" + strconv.Itoa(id), LastModified: modified(id)})
	}
	v.index(l)
	return v
}

// TestCandidatesOnARestartedFleet pins the scheduling of issue 17: among
// objects the listing cannot judge, those written longest ago (whole seconds)
// come first; objects this Acquire read held and the listing shows unchanged
// are not read again; objects written since the previous listing come last.
func TestCandidatesOnARestartedFleet(t *testing.T) {
	e := newEnv(t)
	cfg := e.config("task-a")
	cfg.ClusterSize = 8
	p := e.provider(cfg)
	w := &watched{held: map[int]heldLease{}}
	date := start.Add(2 * time.Second)
	// IDs 2 and 5 were written a second after the others (taken just now);
	// the ms within a second must not order them (everyone would pick alike).
	v := filledView(8, date, func(id int) time.Time {
		at := start.Add(time.Duration(id) * time.Millisecond)
		if id == 2 || id == 5 {
			at = at.Add(time.Second)
		}
		return at
	})
	first := p.candidates(v, map[int]bool{}, w, nil)
	if len(first) != 8 || !slices.Contains(first[6:], 2) || !slices.Contains(first[6:], 5) {
		t.Fatalf("first listing: %v, want 2 and 5 last", first)
	}
	if spread := p.visitOrder(8); !slices.Equal(slices.DeleteFunc(slices.Clone(spread), func(id int) bool { return id == 2 || id == 5 }), first[:6]) {
		t.Fatalf("first listing: %v, want the spread order %v among the older objects", first, spread)
	}

	// ID 0 was read held at its listed ETag; ID 7 moved since the first
	// listing (taken meanwhile).
	w.held[0] = heldLease{etag: "e0", lease: 3 * time.Second}
	v2 := filledView(8, date, func(id int) time.Time { return v.objects[id].LastModified })
	o := v2.objects[7]
	o.ETag = "e7-new"
	v2.objects[7] = o
	second := p.candidates(v2, map[int]bool{}, w, nil)
	if slices.Contains(second, 0) {
		t.Errorf("second listing: %v visits 0, read held at the ETag listed", second)
	}
	if second[len(second)-1] != 7 {
		t.Errorf("second listing: %v, want 7 (written since the previous listing) last", second)
	}
	if w.soonest.IsZero() {
		t.Error("the skipped held lease does not bound the wait")
	}

	// Once its own lease has run out on the listing's clock, 0 is a
	// candidate again (and the first).
	v3 := filledView(8, date.Add(time.Minute), func(id int) time.Time { return v2.objects[id].LastModified })
	o = v3.objects[7]
	o.ETag = "e7-new"
	v3.objects[7] = o
	if third := p.candidates(v3, map[int]bool{}, w, nil); third[0] != 0 {
		t.Errorf("third listing: %v, want the expired 0 first", third)
	}
}
