package nodeid

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nodeid/nodeid/lease"
	"github.com/nodeid/nodeid/lease/storetest"
)

// closeAsync runs c.Close(ctx) in the background.
func closeAsync(ctx context.Context, c *Claim) <-chan error {
	ch := make(chan error, 1)
	go func() { ch <- c.Close(ctx) }()
	return ch
}

// hangingStore blocks the first Update after arm until unblock is closed,
// ignoring its context: a store call that hangs.
type hangingStore struct {
	lease.Store
	armed   atomic.Bool
	entered chan struct{}
	unblock chan struct{}
}

func (h *hangingStore) Update(ctx context.Context, key string, body []byte, etag string) (lease.Meta, error) {
	if h.armed.CompareAndSwap(true, false) {
		close(h.entered)
		<-h.unblock
		return lease.Meta{}, storetest.Unknown(storetest.OpUpdate, key)
	}
	return h.Store.Update(ctx, key, body, etag)
}

// Close is bounded by its context even while the renewal loop is stuck in a
// store call: it returns when ctx ends, saying the release was not confirmed,
// with the claim fenced and ended.
func TestCloseIsBoundedByCtxWhileARenewalHangs(t *testing.T) {
	e := newEnv(t)
	hs := &hangingStore{Store: e.store, entered: make(chan struct{}), unblock: make(chan struct{})}
	c := e.acquire(e.providerOn(hs, e.config("a")))
	hs.armed.Store(true)
	e.clk.Advance(time.Second) // the renewal is due: it hangs in Update
	<-hs.entered
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	closed := closeAsync(ctx, c)
	var err error
	select {
	case err = <-closed:
	case <-time.After(10 * time.Second):
		close(hs.unblock)
		<-closed
		t.Fatalf("Close(ctx with a 50 ms timeout) still waiting for the renewal loop after 10 s")
	}
	close(hs.unblock)
	<-c.loopDone
	if !errors.Is(err, context.DeadlineExceeded) || !strings.Contains(err.Error(), "not confirmed") {
		t.Fatalf("Close = %v, want an error saying the release was not confirmed", err)
	}
	if c.Valid() || !errors.Is(c.Err(), ErrClosed) {
		t.Fatalf("after Close: valid %v, Err %v; want fenced and closed", c.Valid(), c.Err())
	}
	if r, _ := e.record(c.NodeID()); r.Holder != "a" {
		t.Fatalf("record %+v, want still held by a (left to expire)", r)
	}
}
