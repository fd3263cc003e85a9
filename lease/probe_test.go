package lease_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
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
