package storetest_test

import (
	"context"
	"errors"
	"testing"

	"github.com/nodeid/nodeid/lease"
	"github.com/nodeid/nodeid/lease/storetest"
)

// TestFaultStoreKill: after Kill, every operation fails with the kill's error
// and never reaches the inner store, even with faults queued and injected.
func TestFaultStoreKill(t *testing.T) {
	ctx := context.Background()
	inner := storetest.NewMemStore()
	f := storetest.NewFaultStore(inner)
	m, err := f.Create(ctx, "1.json", []byte("one"))
	if err != nil {
		t.Fatalf("create before Kill: %v", err)
	}

	f.Queue(storetest.OpCreate, storetest.Fault{Landed: true})
	f.Queue(storetest.OpUpdate, storetest.Fault{Landed: true})
	injected := 0
	f.SetInjector(func(storetest.Op, string) storetest.Fault { injected++; return storetest.Fault{} })
	f.Kill(nil)

	check := func(what string, err, want error) {
		t.Helper()
		if !errors.Is(err, want) {
			t.Errorf("%s after Kill: %v, want %v", what, err, want)
		}
	}
	_, err = f.List(ctx)
	check("List", err, storetest.ErrKilled)
	_, _, err = f.Get(ctx, "1.json")
	check("Get", err, storetest.ErrKilled)
	_, err = f.Create(ctx, "2.json", []byte("two"))
	check("Create", err, storetest.ErrKilled)
	_, err = f.Update(ctx, "1.json", []byte("changed"), m.ETag)
	check("Update", err, storetest.ErrKilled)
	if injected != 0 {
		t.Errorf("the injector was consulted %d times after Kill", injected)
	}

	// Nothing reached the inner store, not even the queued landing writes.
	if _, _, err := inner.Get(ctx, "2.json"); !errors.Is(err, lease.ErrNotFound) {
		t.Errorf("inner Get 2.json: %v, want ErrNotFound (the create must not land)", err)
	}
	if body, _, err := inner.Get(ctx, "1.json"); err != nil || string(body) != "one" {
		t.Errorf("inner Get 1.json: %q, %v, want \"one\" (the update must not land)", body, err)
	}

	errDead := errors.New("the broker was killed")
	f.Kill(errDead)
	_, err = f.List(ctx)
	check("List after a second Kill", err, errDead)
}

// TestFaultStoreLateWrite: a Late write answers "unknown outcome" at once, is
// not there for the next read of its key (the client's read-back), lands right
// after that read, and as the conditional write it was: a late write whose
// condition no longer holds never lands.
func TestFaultStoreLateWrite(t *testing.T) {
	ctx := context.Background()
	inner := storetest.NewMemStore()
	f := storetest.NewFaultStore(inner)
	m0, err := f.Create(ctx, "1.json", []byte("v0"))
	if err != nil {
		t.Fatal(err)
	}

	f.Queue(storetest.OpUpdate, storetest.Fault{Late: true})
	if _, err := f.Update(ctx, "1.json", []byte("v1"), m0.ETag); !errors.Is(err, lease.ErrUnknownOutcome) {
		t.Fatalf("late Update: %v, want an unknown outcome", err)
	}
	// The read-back sees the old object: the client concludes the write did
	// not land.
	body, m, err := f.Get(ctx, "1.json")
	if err != nil || string(body) != "v0" || m.ETag != m0.ETag {
		t.Fatalf("read-back: %q %s, %v; want v0 with the old ETag", body, m.ETag, err)
	}
	// And then it lands.
	if body, _, err := inner.Get(ctx, "1.json"); err != nil || string(body) != "v1" {
		t.Fatalf("after the read-back the inner store holds %q, %v; want the late write v1", body, err)
	}
	// The client's retry on the old ETag now fails: the object changed.
	if _, err := f.Update(ctx, "1.json", []byte("v2"), m0.ETag); !errors.Is(err, lease.ErrPreconditionFailed) {
		t.Fatalf("retry on the old ETag: %v, want ErrPreconditionFailed", err)
	}

	// A late write whose condition fails by the time it lands never lands.
	_, m1, _ := f.Get(ctx, "1.json")
	f.Queue(storetest.OpUpdate, storetest.Fault{Late: true, Err: storetest.ErrInjected})
	if _, err := f.Update(ctx, "1.json", []byte("stale"), m1.ETag); !errors.Is(err, storetest.ErrInjected) {
		t.Fatalf("late Update with Err: %v, want that error", err)
	}
	if _, err := f.Update(ctx, "1.json", []byte("v3"), m1.ETag); err != nil {
		t.Fatalf("an update overtaking the late write: %v", err)
	}
	if n, err := f.LandLate(); n != 0 || err != nil {
		t.Fatalf("LandLate: %d landed, %v; want 0 (its If-Match no longer holds)", n, err)
	}
	if body, _, _ := inner.Get(ctx, "1.json"); string(body) != "v3" {
		t.Fatalf("inner store holds %q, want v3", body)
	}

	// A late create lands at LandLate when no read comes, and only once.
	f.Queue(storetest.OpCreate, storetest.Fault{Late: true})
	if _, err := f.Create(ctx, "2.json", []byte("two")); !errors.Is(err, lease.ErrUnknownOutcome) {
		t.Fatalf("late Create: %v, want an unknown outcome", err)
	}
	if _, _, err := inner.Get(ctx, "2.json"); !errors.Is(err, lease.ErrNotFound) {
		t.Fatalf("the late create is there before landing: %v", err)
	}
	if n, err := f.LandLate(); n != 1 || err != nil {
		t.Fatalf("LandLate: %d landed, %v; want 1", n, err)
	}
	if n, _ := f.LandLate(); n != 0 {
		t.Fatalf("second LandLate landed %d, want 0", n)
	}
	if body, _, err := inner.Get(ctx, "2.json"); err != nil || string(body) != "two" {
		t.Fatalf("inner 2.json: %q, %v; want the late create", body, err)
	}
}
