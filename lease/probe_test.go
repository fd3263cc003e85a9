package lease_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nodeid/nodeid/lease"
	"github.com/nodeid/nodeid/lease/storetest"
)

func TestProbeOK(t *testing.T) {
	mem := storetest.NewMemStore()
	for i := range 2 {
		r, err := lease.Probe(context.Background(), mem)
		if err != nil {
			t.Fatalf("probe %d: %v", i, err)
		}
		if !r.DateSeen || !r.LastModifiedSeen || len(r.TimeProblems()) != 0 {
			t.Fatalf("probe %d: time facts %+v", i, r)
		}
		if r.ClockOffset > time.Second || r.ClockOffset < -2*time.Second {
			t.Fatalf("probe %d: clock offset %v on a store with this host's clock", i, r.ClockOffset)
		}
	}
}

func TestProbeClockOffset(t *testing.T) {
	mem := storetest.NewMemStore(storetest.WithClock(func() time.Time { return time.Now().Add(time.Hour) }))
	r, err := lease.Probe(context.Background(), mem)
	if err != nil {
		t.Fatal(err)
	}
	if r.ClockOffset < time.Hour-2*time.Second || r.ClockOffset > time.Hour+time.Second {
		t.Fatalf("clock offset %v, want about 1h", r.ClockOffset)
	}
}

func TestProbeIgnoredConditions(t *testing.T) {
	for _, tc := range []struct {
		opt  storetest.MemOption
		cond string
	}{
		{storetest.IgnoreIfNoneMatch(), lease.CondIfNoneMatch},
		{storetest.IgnoreIfMatch(), lease.CondIfMatch},
	} {
		t.Run(tc.cond, func(t *testing.T) {
			root := storetest.NewMemStore(tc.opt)
			root.Put("p/7.json", []byte("x"))
			_, err := lease.Probe(context.Background(), root.WithPrefix("p/"))
			var ce *lease.ConditionIgnoredError
			if !errors.Is(err, lease.ErrConditionIgnored) || !errors.As(err, &ce) || ce.Condition != tc.cond {
				t.Fatalf("err = %v, want the %s condition ignored", err, tc.cond)
			}
			if errors.Is(err, lease.ErrProbeInconclusive) {
				t.Fatalf("err = %v matches ErrProbeInconclusive too", err)
			}
			l, _ := root.List(context.Background())
			if len(l.Objects) != 2 || l.Objects[0].Key != "p/7.json" || l.Objects[1].Key != "p/"+lease.ProbeKey {
				t.Fatalf("objects after the probe: %+v, want p/7.json and p/%s", l.Objects, lease.ProbeKey)
			}
		})
	}
}

func TestProbeInconclusive(t *testing.T) {
	for _, op := range []storetest.Op{storetest.OpCreate, storetest.OpGet, storetest.OpUpdate} {
		t.Run(string(op), func(t *testing.T) {
			fs := storetest.NewFaultStore(storetest.NewMemStore())
			var f storetest.Fault
			if op == storetest.OpGet {
				f = storetest.Fault{Err: errors.New("connection reset")}
			} else {
				f = storetest.Fault{Err: storetest.Unknown(op, lease.ProbeKey)}
			}
			fs.Queue(op, f)
			_, err := lease.Probe(context.Background(), fs)
			if !errors.Is(err, lease.ErrProbeInconclusive) || errors.Is(err, lease.ErrConditionIgnored) {
				t.Fatalf("err = %v, want inconclusive only", err)
			}
		})
	}
}

// TestConcurrentProbesPass: tasks starting at once probe one object; another
// probe's writes only make ours refused, so an honest store passes them all.
func TestConcurrentProbesPass(t *testing.T) {
	mem := storetest.NewMemStore()
	var wg sync.WaitGroup
	errs := make([]error, 8)
	for i := range errs {
		wg.Go(func() { _, errs[i] = lease.Probe(context.Background(), mem) })
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Errorf("probe %d of %d at once: %v", i, len(errs), err)
		}
	}
}

// staleIfMatch is a store whose If-Match accepts any ETag the key has had,
// not only the current one: what a store that checks the condition on a
// lagging replica or a cache (or against its version history) does. It
// refuses an ETag the key never had, and honours If-None-Match. On it, two
// tasks that read one free lease both win their CAS on its ETag. With
// refuse set it also refuses its refuse-th update, as a store answering one
// of two concurrent conditional writes 409 does.
type staleIfMatch struct {
	*storetest.MemStore
	refuse  int
	mu      sync.Mutex
	updates int
	seen    map[string]bool // every ETag the key had
}

func (s *staleIfMatch) Update(ctx context.Context, key string, body []byte, etag string) (lease.Meta, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.seen == nil {
		s.seen = map[string]bool{}
	}
	if _, m, err := s.MemStore.Get(ctx, key); err == nil {
		s.seen[m.ETag] = true
	}
	s.updates++
	if !s.seen[etag] || s.updates == s.refuse {
		return lease.Meta{}, lease.ErrPreconditionFailed
	}
	s.MemStore.Put(key, body)
	_, m, err := s.MemStore.Get(ctx, key)
	s.seen[m.ETag] = true
	return m, err
}

// checkThenPut emulates If-Match by a read, then an unconditional write, with
// no lock between them (a gateway or proxy that emulates conditional PUTs):
// here a request waits between its check and its write until a second
// request has checked too (or its context ends), so that two updates sent at
// once always overlap. Each would be honoured alone; the two both win.
type checkThenPut struct {
	*storetest.MemStore
	mu      sync.Mutex
	waiting chan struct{} // closed by the second request to check while one waits
}

func (s *checkThenPut) Update(ctx context.Context, key string, body []byte, etag string) (lease.Meta, error) {
	if _, m, err := s.MemStore.Get(ctx, key); err != nil || m.ETag != etag {
		return lease.Meta{}, lease.ErrPreconditionFailed
	}
	s.mu.Lock()
	w := s.waiting
	if w == nil {
		w = make(chan struct{})
		s.waiting = w
	} else {
		close(w)
		s.waiting = nil
	}
	s.mu.Unlock()
	select {
	case <-w:
	case <-ctx.Done():
		return lease.Meta{}, &lease.UnknownOutcomeError{Op: "update", Key: key, Err: ctx.Err()}
	}
	s.MemStore.Put(key, body)
	_, m, err := s.MemStore.Get(ctx, key)
	return m, err
}

// TestProbeCatchesConditionsHonouredOnlySometimes: a store that honours
// If-Match on a never-valid ETag, but accepts a replaced one, or honours it
// request by request but not between two concurrent ones, would let two
// tasks take one lease; the probe refuses both (the probe of one wrong ETag,
// one request at a time, passed them).
func TestProbeCatchesConditionsHonouredOnlySometimes(t *testing.T) {
	for _, tt := range []struct {
		name  string
		store lease.Store
		write string
	}{
		{"replaced ETag", &staleIfMatch{MemStore: storetest.NewMemStore()}, "both of two concurrent updates naming one ETag"},
		{"replaced ETag, one of two concurrent updates refused", &staleIfMatch{MemStore: storetest.NewMemStore(), refuse: 2}, "an update naming a replaced ETag"},
		{"check, then write", &checkThenPut{MemStore: storetest.NewMemStore()}, "both of two concurrent updates naming one ETag"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			_, err := lease.Probe(ctx, tt.store)
			var ce *lease.ConditionIgnoredError
			if !errors.As(err, &ce) || ce.Condition != lease.CondIfMatch || ce.Write != tt.write {
				t.Fatalf("Probe = %v; want If-Match ignored by %s", err, tt.write)
			}
		})
	}
}

// TestProbeMisconfigured: a store error that retrying cannot fix is the
// probe's answer as it is, never an inconclusive probe.
func TestProbeMisconfigured(t *testing.T) {
	for _, op := range []storetest.Op{storetest.OpCreate, storetest.OpGet, storetest.OpUpdate} {
		t.Run(string(op), func(t *testing.T) {
			fs := storetest.NewFaultStore(storetest.NewMemStore())
			if op == storetest.OpCreate { // the second create: the first makes the object
				fs.Queue(op, storetest.Fault{})
			}
			fs.Queue(op, storetest.Fault{Err: fmt.Errorf("the store answered 501 to a PUT with %s: %w", op, lease.ErrMisconfigured)})
			_, err := lease.Probe(context.Background(), fs)
			if !errors.Is(err, lease.ErrMisconfigured) || errors.Is(err, lease.ErrProbeInconclusive) || errors.Is(err, lease.ErrConditionIgnored) ||
				!strings.Contains(err.Error(), "answered 501 to a PUT with "+string(op)) {
				t.Fatalf("err = %v, want the store's misconfiguration only", err)
			}
		})
	}
}
