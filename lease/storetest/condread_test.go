package storetest_test

import (
	"bytes"
	"context"
	"errors"
	"testing"

	"github.com/nodeid/nodeid/lease"
	"github.com/nodeid/nodeid/lease/storetest"
)

// TestWrappersForwardConditionalReads checks that no wrapper of storetest
// hides lease.ConditionalReader, and that each passes the answers through.
func TestWrappersForwardConditionalReads(t *testing.T) {
	ctx := context.Background()
	mem := storetest.NewMemStore()
	rec := storetest.NewRecorder()
	wrappers := map[string]lease.Store{
		"MemStore":   mem,
		"FaultStore": storetest.NewFaultStore(mem),
		"Record":     rec.Wrap(1, mem),
		"Scope":      lease.Scope(storetest.NewFaultStore(mem), ""),
	}
	m1, err := mem.Create(ctx, "k.json", []byte(`{"writeId":"w1"}`))
	if err != nil {
		t.Fatal(err)
	}
	for name, s := range wrappers {
		if _, ok := s.(lease.ConditionalReader); !ok {
			t.Errorf("%s hides lease.ConditionalReader", name)
			continue
		}
		if _, m, err := lease.GetIfChanged(ctx, s, "k.json", m1.ETag); !errors.Is(err, lease.ErrNotModified) || m.ETag != m1.ETag || m.Date.IsZero() {
			t.Errorf("%s: GetIfChanged on the current ETag = %+v, %v; want ErrNotModified with the ETag and Date", name, m, err)
		}
		if body, m, err := lease.GetIfChanged(ctx, s, "k.json", `"old"`); err != nil || m.ETag != m1.ETag || !bytes.Equal(body, []byte(`{"writeId":"w1"}`)) {
			t.Errorf("%s: GetIfChanged on another ETag = %q, %+v, %v; want the object", name, body, m, err)
		}
		if _, _, err := lease.GetIfChanged(ctx, s, "absent.json", m1.ETag); !errors.Is(err, lease.ErrNotFound) {
			t.Errorf("%s: GetIfChanged of a missing key: %v, want ErrNotFound", name, err)
		}
	}
	// The recorder put the 304 in the history, named by its ETag.
	var got []storetest.Call
	for _, c := range rec.Calls() {
		if c.Op == storetest.OpGet {
			got = append(got, c)
		}
	}
	if len(got) != 3 || got[0].Outcome != storetest.OutcomeDone || got[0].Got != "" || got[0].ETag != m1.ETag ||
		got[1].Got != "w:w1" || got[2].Outcome != storetest.OutcomeMissing {
		t.Errorf("recorded %+v", got)
	}
	if n := mem.Count(storetest.OpGetIfChanged); n != 3*len(wrappers) {
		t.Errorf("%d conditional reads reached the store, want %d", n, 3*len(wrappers))
	}
}

func TestFaultStoreFaultsConditionalReads(t *testing.T) {
	ctx := context.Background()
	mem := storetest.NewMemStore()
	f := storetest.NewFaultStore(mem)
	f.Queue(storetest.OpGetIfChanged, storetest.Fault{Err: storetest.ErrInjected})
	if _, _, err := f.GetIfChanged(ctx, "k.json", `"x"`); !errors.Is(err, storetest.ErrInjected) {
		t.Fatalf("GetIfChanged = %v, want the injected fault", err)
	}
	if _, _, err := f.GetIfChanged(ctx, "k.json", `"x"`); !errors.Is(err, lease.ErrNotFound) {
		t.Fatalf("GetIfChanged = %v, want ErrNotFound once the fault is spent", err)
	}
	// A late write lands after a conditional read saw the object without it.
	m, _ := mem.Create(ctx, "k.json", []byte("a"))
	f.Queue(storetest.OpUpdate, storetest.Fault{Late: true})
	if _, err := f.Update(ctx, "k.json", []byte("b"), m.ETag); !errors.Is(err, lease.ErrUnknownOutcome) {
		t.Fatalf("late Update = %v", err)
	}
	if _, got, err := f.GetIfChanged(ctx, "k.json", m.ETag); !errors.Is(err, lease.ErrNotModified) || got.ETag != m.ETag {
		t.Fatalf("GetIfChanged = %+v, %v; want the object without the late write", got, err)
	}
	if body, _, err := mem.Get(ctx, "k.json"); err != nil || string(body) != "b" {
		t.Fatalf("after the read, the late write has not landed: %q, %v", body, err)
	}
}
