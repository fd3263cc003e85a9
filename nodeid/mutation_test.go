//go:build nodeid_mutation

package nodeid

import (
	"context"
	"testing"
	"time"
)

func TestMutationNoFence(t *testing.T) {
	t.Setenv("NODEID_MUTATION", "nofence")
	e := newEnv(t)
	c := e.acquire(e.provider(e.config("a")))
	if got := c.ValidUntil().Sub(start); got < time.Hour {
		t.Fatalf("nofence: ValidUntil %v after the write, want a day", got)
	}
	_ = c.Close(context.Background())
}
