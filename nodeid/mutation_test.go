//go:build nodeid_mutation

package nodeid

import (
	"context"
	"testing"
	"time"

	"github.com/nodeid/nodeid/lease"
)

// useMutant makes m the mutant every Provider the test makes takes, as
// NODEID_MUTATION=m does at init.
func useMutant(t *testing.T, m string) {
	old, oldName := mutant, mutation
	mutant, mutation = mutantRules(m), m
	t.Cleanup(func() { mutant, mutation = old, oldName })
}

func TestMutationNoFence(t *testing.T) {
	useMutant(t, "nofence")
	e := newEnv(t)
	c := e.acquire(e.provider(e.config("a")))
	if got := c.ValidUntil().Sub(start); got < time.Hour {
		t.Fatalf("nofence: ValidUntil %v after the write, want a day", got)
	}
	_ = c.Close(context.Background())
}

func TestMutationNoFloor(t *testing.T) {
	useMutant(t, "nofloor")
	if got := mutant.floor(lease.Record{ReservedUntilMs: 42}); got != 0 {
		t.Fatalf("nofloor: a successor reports floor %d, want 0", got)
	}
}

func TestMutationUnknownPanics(t *testing.T) {
	defer func() {
		if recover() == nil {
			t.Fatal("an unknown mutation did not panic")
		}
	}()
	mutantRules("nosuch")
}
