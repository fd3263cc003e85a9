package nodeid

import (
	"context"
	"sync"
)

// subscription holds a claim's Changed channel and Context, signalled under
// its own lock, never held across a call out: no signal waits on a subscriber.
type subscription struct {
	mu     sync.Mutex
	next   chan struct{} // closed at the next change; nil: nobody asked since the last
	ended  bool          // the claim ended: Changed returns closed
	ctx    context.Context
	cancel context.CancelCauseFunc
	cause  error // why Context ended (Close began, or the claim's Err); nil while held
}

// closedChan is a channel closed for good: Changed's answer once the claim ended.
var closedChan = func() chan struct{} { ch := make(chan struct{}); close(ch); return ch }()

// Changed returns a channel closed at the claim's next change of state after
// the call: a write that landed (a renewal, a recovery, the answer to a
// challenge, the release), in read mode a read that moved the fence, entry
// into jeopardy, a challenge met, Close beginning, the end (lost or
// closed). Once the claim has ended it returns a closed channel, so the
// final state is never missed. Read Status after the call, and call
// Changed again before the next read: a change between the two closes the
// channel already held.
//
//	for {
//		changed := c.Changed()
//		st := c.Status() // act on it
//		if st.Err != nil {
//			return
//		}
//		<-changed
//	}
//
// A fence that falls by time alone is no change (nothing happened to the
// claim): ValidUntil says when it falls. Any number of goroutines may wait
// on one channel; it costs the claim nothing while none asks.
func (c *Claim) Changed() <-chan struct{} {
	s := &c.subs
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ended {
		return closedChan
	}
	if s.next == nil {
		s.next = make(chan struct{})
	}
	return s.next
}

// Context returns a context cancelled when the claim stops being the
// caller's: when it is lost, or when Close begins (the claim is fenced
// then). context.Cause of it is the loss (wrapping ErrLeaseLost) or
// ErrClosed. Bind to it the work that must not outlive the claim; it is not
// the fence: a claim in jeopardy keeps its context, and only Valid tells
// whether an ID may be issued now.
func (c *Claim) Context() context.Context {
	s := &c.subs
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ctx == nil {
		s.ctx, s.cancel = context.WithCancelCause(context.Background())
		if s.cause != nil {
			s.cancel(s.cause)
		}
	}
	return s.ctx
}

// changed signals a change of the claim's state to Changed's callers.
func (s *subscription) changed() {
	s.mu.Lock()
	s.signalLocked()
	s.mu.Unlock()
}

// stop ends the Context with cause, unless it ended already, and signals
// the change; ended marks the claim ended for Changed.
func (s *subscription) stop(cause error, ended bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cause == nil {
		s.cause = cause
		if s.cancel != nil {
			s.cancel(cause)
		}
	}
	s.ended = s.ended || ended
	s.signalLocked()
}

// signalLocked is changed with s.mu held.
func (s *subscription) signalLocked() {
	if s.next != nil {
		close(s.next)
		s.next = nil
	}
}
