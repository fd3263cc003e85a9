package storetest

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/nodeid/nodeid/lease"
)

// Recorder records the Get, Create and Update calls made through the stores
// it wraps, as a history for [CheckLinearizable]. Times are offsets from the
// recorder's creation on this process's monotonic clock. It is safe for
// concurrent use.
type Recorder struct {
	start time.Time

	mu    sync.Mutex
	calls []Call
}

// NewRecorder returns an empty Recorder.
func NewRecorder() *Recorder { return &Recorder{start: time.Now()} }

// Wrap returns s with every Get, Create and Update recorded as client's.
func (r *Recorder) Wrap(client int, s lease.Store) lease.Store {
	return &recordedStore{Store: s, r: r, client: client}
}

// Calls returns the history so far.
func (r *Recorder) Calls() []Call {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]Call(nil), r.calls...)
}

// Check checks the history so far with [CheckLinearizable].
func (r *Recorder) Check(timeout time.Duration) error { return CheckLinearizable(r.Calls(), timeout) }

// Now returns the recorder's clock: the time since it was created.
func (r *Recorder) Now() time.Duration { return time.Since(r.start) }

// Add records c, a call observed elsewhere (a proxy between a client and the
// store), its times read from Now.
func (r *Recorder) Add(c Call) {
	r.mu.Lock()
	r.calls = append(r.calls, c)
	r.mu.Unlock()
}

// recordedStore is a lease.Store whose calls a Recorder records.
type recordedStore struct {
	lease.Store
	r      *Recorder
	client int
}

func (s *recordedStore) Get(ctx context.Context, key string) ([]byte, lease.Meta, error) {
	start := s.r.Now()
	body, m, err := s.Store.Get(ctx, key)
	c := Call{Client: s.client, Key: key, Op: OpGet, Start: start, End: s.r.Now()}
	switch {
	case err == nil:
		c.Outcome, c.Got, c.ETag = OutcomeDone, ValueOf(body), m.ETag
	case errors.Is(err, lease.ErrNotFound):
		c.Outcome = OutcomeMissing
	default:
		return body, m, err // no answer: it constrains nothing
	}
	s.r.Add(c)
	return body, m, err
}

func (s *recordedStore) Create(ctx context.Context, key string, body []byte) (lease.Meta, error) {
	start := s.r.Now()
	m, err := s.Store.Create(ctx, key, body)
	s.r.Add(writeCall(s.client, key, OpCreate, body, "", start, s.r.Now(), m, err))
	return m, err
}

func (s *recordedStore) Update(ctx context.Context, key string, body []byte, etag string) (lease.Meta, error) {
	start := s.r.Now()
	m, err := s.Store.Update(ctx, key, body, etag)
	s.r.Add(writeCall(s.client, key, OpUpdate, body, etag, start, s.r.Now(), m, err))
	return m, err
}

// writeCall is the Call of a write answered with m and err: a 409 is a
// conflict, a precondition failure refused, any other error unknown.
func writeCall(client int, key string, op Op, body []byte, ifMatch string, start, end time.Duration, m lease.Meta, err error) Call {
	c := Call{Client: client, Key: key, Op: op, Start: start, End: end, Value: ValueOf(body), IfMatch: ifMatch}
	switch {
	case err == nil:
		c.Outcome, c.ETag = OutcomeDone, m.ETag
	case errors.Is(err, lease.ErrConflict):
		c.Outcome = OutcomeConflict
	case errors.Is(err, lease.ErrPreconditionFailed):
		c.Outcome = OutcomeRefused
	default:
		c.Outcome = OutcomeUnknown
	}
	return c
}
