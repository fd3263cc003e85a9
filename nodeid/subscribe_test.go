package nodeid

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"
)

// The claim's Context lives while the claim is held, through renewals and a
// jeopardy (it is not the fence), and ends at the loss, with the loss as its
// cause; a Context asked for after the end is ended already.
func TestClaimContextEndsAtTheLoss(t *testing.T) {
	e := newEnv(t)
	c := e.acquire(e.provider(e.config("a")))
	ctx := c.Context()
	if ctx != c.Context() {
		t.Fatal("Context returned two contexts")
	}
	e.advance(5*time.Second, c) // five renewals
	if ctx.Err() != nil || !c.Valid() {
		t.Fatalf("held and renewed: context %v, valid %v", ctx.Err(), c.Valid())
	}
	var cut atomic.Bool
	e.intoJeopardy(c, &cut)
	if ctx.Err() != nil {
		t.Fatalf("in jeopardy (not lost): context %v, want alive", ctx.Err())
	}
	e.takeOver(c.NodeID())
	cut.Store(false)
	for end := e.clk.Now().Add(10 * time.Second); !isDone(c); e.advance(100*time.Millisecond, c) {
		if !e.clk.Now().Before(end) {
			t.Fatal("not lost 10 s after a takeover")
		}
	}
	if ctx.Err() == nil || !errors.Is(context.Cause(ctx), ErrLeaseLost) || !errors.Is(context.Cause(c.Context()), ErrLeaseLost) {
		t.Fatalf("lost: context %v, cause %v; a new one's cause %v", ctx.Err(), context.Cause(ctx), context.Cause(c.Context()))
	}
}

// Close ends the claim's Context, with ErrClosed as its cause, whether it
// was asked for before or after.
func TestClaimContextEndsAtClose(t *testing.T) {
	e := newEnv(t)
	c := e.acquire(e.provider(e.config("a")))
	ctx := c.Context()
	e.advance(2*time.Second, c)
	if ctx.Err() != nil {
		t.Fatalf("held: context %v", ctx.Err())
	}
	if err := c.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	if !errors.Is(context.Cause(ctx), ErrClosed) || !errors.Is(context.Cause(c.Context()), ErrClosed) {
		t.Fatalf("closed: cause %v, a new one's %v; want ErrClosed", context.Cause(ctx), context.Cause(c.Context()))
	}
}

// Changed is closed at each change of the claim's state, and only then: a
// renewal, the entry into jeopardy, the recovery, the loss; once the claim
// ended it returns a closed channel.
func TestChangedAtEachChange(t *testing.T) {
	e := newEnv(t)
	c := e.acquire(e.provider(e.config("a")))
	ch := c.Changed()
	e.advance(900*time.Millisecond, c) // before the first renewal (1 s)
	if closed(ch) {
		t.Fatal("Changed closed with no change")
	}
	e.advance(200*time.Millisecond, c)
	if !closed(ch) || c.Status().SinceWrite > 100*time.Millisecond {
		t.Fatalf("after a renewal: Changed closed %v, since the write %v", closed(ch), c.Status().SinceWrite)
	}
	ch = c.Changed()
	var cut atomic.Bool
	e.intoJeopardy(c, &cut)
	if !closed(ch) {
		t.Fatal("Changed not closed at the jeopardy")
	}
	ch = c.Changed()
	if closed(ch) {
		t.Fatal("a fresh Changed closed in jeopardy with no change since")
	}
	cut.Store(false)
	for end := e.clk.Now().Add(5 * time.Second); c.Status().Recoveries == 0; e.advance(50*time.Millisecond, c) {
		if !e.clk.Now().Before(end) {
			t.Fatal("no recovery 5 s after the store came back")
		}
	}
	if !closed(ch) || !c.Valid() {
		t.Fatalf("recovered: Changed closed %v, valid %v", closed(ch), c.Valid())
	}
	ch = c.Changed()
	c.ObserveVersion(c.Version() + 1) // a peer runs the ID: lost at once
	if !closed(ch) || !errors.Is(c.Status().Err, ErrLeaseLost) || !closed(c.Changed()) {
		t.Fatalf("lost: Changed closed %v, Err %v, a new Changed closed %v", closed(ch), c.Status().Err, closed(c.Changed()))
	}
}

// Close is a change twice: when it begins (fenced) and when the release
// ends the claim; the final state, ErrClosed, is never missed.
func TestChangedAtClose(t *testing.T) {
	e := newEnv(t)
	c := e.acquire(e.provider(e.config("a")))
	ch := c.Changed()
	if err := c.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	if !closed(ch) || !closed(c.Changed()) || !errors.Is(c.Status().Err, ErrClosed) {
		t.Fatalf("closed: Changed closed %v, a new one %v, Err %v", closed(ch), closed(c.Changed()), c.Status().Err)
	}
}

// A subscriber that follows the claim by Changed and Status, as the doc
// shows, sees its last state, however its goroutine is scheduled against
// the claim's: it ends on the loss.
func TestChangedNeverMissesTheEnd(t *testing.T) {
	for range 20 {
		e := newEnv(t)
		c := e.acquire(e.provider(e.config("a")))
		last := make(chan Status, 1)
		go func() {
			for {
				changed := c.Changed()
				if st := c.Status(); st.Err != nil {
					last <- st
					return
				}
				<-changed
			}
		}()
		e.advance(3*time.Second, c)
		e.takeOver(c.NodeID())
		e.advance(2*time.Second, c)
		select {
		case st := <-last:
			if !errors.Is(st.Err, ErrLeaseLost) {
				t.Fatalf("the subscriber's last state: %+v, want the loss", st)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("the subscriber never saw the end (claim done %v, err %v)", isDone(c), c.Err())
		}
	}
}

// In read mode, a read that moves the fence is a change, and so are a
// challenge met (Status.Challenged) and the write that answers it.
func TestChangedInReadMode(t *testing.T) {
	e := newEnv(t)
	c, _ := e.lateHolder()
	ch := c.Changed()
	e.clk.Advance(500 * time.Millisecond)
	if _, err := c.poll(context.Background()); err != nil || !closed(ch) {
		t.Fatalf("a read that proved the lease: %v, Changed closed %v", err, closed(ch))
	}
	p, _ := e.challenger()
	if _, err := p.Acquire(context.Background()); !errors.Is(err, ErrClusterFull) {
		t.Fatalf("challenger's Acquire: %v", err)
	}
	ch = c.Changed()
	if _, err := c.readBack(context.Background()); !errors.Is(err, errChallenged) {
		t.Fatalf("holder's read back of the confirm: %v, want errChallenged", err)
	}
	if !closed(ch) || !c.Status().Challenged {
		t.Fatalf("challenge met: Changed closed %v, challenged %v", closed(ch), c.Status().Challenged)
	}
	ch = c.Changed()
	if err := c.attempt(context.Background()); err != nil {
		t.Fatalf("the answer: %v", err)
	}
	if !closed(ch) || c.Status().Challenged {
		t.Fatalf("answered: Changed closed %v, challenged %v", closed(ch), c.Status().Challenged)
	}
}
