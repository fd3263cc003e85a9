package lease_test

import (
	"context"
	"errors"
	"testing"

	"github.com/nodeid/nodeid/lease"
	"github.com/nodeid/nodeid/lease/storetest"
)

// described is a store with a Check and a Describe of the test's.
type described struct {
	lease.Store
	err error
}

func (s described) Check(context.Context) error { return s.err }
func (s described) Describe() string            { return "the test's bucket" }

// TestCheckAndDescribe: lease.Check and lease.Describe use a store's own
// Check and Describe, through storetest.Record's wrapper too; a store
// without them passes the check and is named by its type.
func TestCheckAndDescribe(t *testing.T) {
	ctx := context.Background()
	plain := storetest.NewMemStore()
	if err := lease.Check(ctx, plain); err != nil {
		t.Errorf("Check of a store without one: %v", err)
	}
	if got := lease.Describe(plain); got != "a *storetest.MemStore" {
		t.Errorf("Describe of a store without one = %q", got)
	}
	refused := errors.New("refused")
	for _, s := range []lease.Store{
		described{Store: plain, err: refused},
		storetest.Record(described{Store: plain, err: refused}, 1, storetest.NewRecorder()),
	} {
		if err := lease.Check(ctx, s); !errors.Is(err, refused) {
			t.Errorf("Check of %T: %v, want the store's", s, err)
		}
		if got := lease.Describe(s); got != "the test's bucket" {
			t.Errorf("Describe of %T = %q, want the store's", s, got)
		}
	}
}
