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
