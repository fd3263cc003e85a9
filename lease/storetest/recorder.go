package storetest

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/nodeid/nodeid/lease"
)

// Sink is where a recorded store ([Record]) puts the calls it makes, timed
// on the sink's clock. Begin is called as a call starts, with what is known
// then (a write's outcome unknown); the function it returns is called with the
// whole call once it has ended (never for a read that got no answer). A
// write whose end never came (its process died with it in flight) is a write
// of unknown outcome. [Recorder] keeps the calls in memory, [CallLog] writes
// them to a file for another process to check.
type Sink interface {
	// Now reads the sink's clock: the times of a history.
	Now() time.Duration
	// Begin records the start of c and returns what records its end.
	Begin(c Call) (end func(Call))
}

// Recorder records the Get, Create and Update calls made through the stores
// it wraps, as a history for [CheckLinearizable]. Times are offsets from the
// recorder's creation on this process's monotonic clock, or read from the
// clock given to [NewRecorderOn]. It is safe for concurrent use.
type Recorder struct {
	now func() time.Duration

	mu    sync.Mutex
	calls []Call
}

// NewRecorder returns an empty Recorder.
func NewRecorder() *Recorder {
	start := time.Now()
	return NewRecorderOn(func() time.Duration { return time.Since(start) })
}

// NewRecorderOn returns an empty Recorder whose times are read from now: a
// clock other processes read too ([MonotonicClock]) when their calls join
// the history ([ReadCallLog], [Recorder.Add]).
func NewRecorderOn(now func() time.Duration) *Recorder { return &Recorder{now: now} }

// Wrap returns s with every Get, Create and Update recorded as client's
// ([Record]).
func (r *Recorder) Wrap(client int, s lease.Store) lease.Store { return Record(s, client, r) }

// Calls returns the history so far.
func (r *Recorder) Calls() []Call {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]Call(nil), r.calls...)
}

// Check checks the history so far with [CheckLinearizable].
func (r *Recorder) Check(timeout time.Duration) error { return CheckLinearizable(r.Calls(), timeout) }

// Now returns the recorder's clock: the time since it was created, or the
// clock given to NewRecorderOn.
func (r *Recorder) Now() time.Duration { return r.now() }

// Begin implements [Sink]: a call is recorded once it has ended.
func (r *Recorder) Begin(Call) func(Call) { return r.Add }

// Add records c, a call observed elsewhere (a proxy between a client and the
// store, another process's [CallLog]), its times read from Now.
func (r *Recorder) Add(c Call) {
	r.mu.Lock()
	r.calls = append(r.calls, c)
	r.mu.Unlock()
}

// Record returns s with every Get, Create and Update (and CreateLive and
// UpdateLive, the writes of a store that judges expiry itself) put into sink
// as client's, each with the key, the record's value ([ValueOf]), the ETag an
// update was conditional on, the outcome and the resulting ETag. A read
// answered with an error other than [lease.ErrNotFound] is left out (no
// answer: it constrains nothing); a write's error is read as the
// [lease.Store] contract says: refused, a conflict, unknown
// ([lease.ErrUnknownOutcome]), or, any other, failed (not applied). The
// returned store is a [lease.LiveWriter], a [lease.Scoper], a
// [lease.Checker], a [lease.Describer] and a [lease.ConditionalReader]
// (recorded as a Get), as s may be, so that wrapping
// changes nothing of how it is used: its scoped stores
// record too, their keys named in full (relative to s's prefix).
func Record(s lease.Store, client int, sink Sink) lease.Store {
	return &recordedStore{next: s, sink: sink, client: client}
}

// recordedStore is a lease.Store whose calls go into a Sink.
type recordedStore struct {
	next   lease.Store
	sink   Sink
	client int
	sub    string // the scope of next, which the history's keys are relative to
}

var (
	_ lease.LiveWriter        = (*recordedStore)(nil)
	_ lease.Scoper            = (*recordedStore)(nil)
	_ lease.Checker           = (*recordedStore)(nil)
	_ lease.Describer         = (*recordedStore)(nil)
	_ lease.ConditionalReader = (*recordedStore)(nil)
)

func (s *recordedStore) List(ctx context.Context) (lease.Listing, error) { return s.next.List(ctx) }

func (s *recordedStore) Get(ctx context.Context, key string) ([]byte, lease.Meta, error) {
	c := Call{Client: s.client, Key: s.sub + key, Op: OpGet, Start: s.sink.Now(), Outcome: OutcomeUnknown}
	c.End = c.Start
	end := s.sink.Begin(c)
	body, m, err := s.next.Get(ctx, key)
	c.End = s.sink.Now()
	switch {
	case err == nil:
		c.Outcome, c.Got, c.ETag = OutcomeDone, ValueOf(body), m.ETag
	case errors.Is(err, lease.ErrNotFound):
		c.Outcome = OutcomeMissing
	default:
		return body, m, err // no answer: it constrains nothing
	}
	end(c)
	return body, m, err
}

// GetIfChanged implements lease.ConditionalReader: the wrapped store's
// (lease.GetIfChanged), recorded as a Get: a 200 with its value, a 304
// (lease.ErrNotModified) with its ETag alone (see Call.Got).
func (s *recordedStore) GetIfChanged(ctx context.Context, key, etag string) ([]byte, lease.Meta, error) {
	c := Call{Client: s.client, Key: s.sub + key, Op: OpGet, Start: s.sink.Now(), Outcome: OutcomeUnknown}
	c.End = c.Start
	end := s.sink.Begin(c)
	body, m, err := lease.GetIfChanged(ctx, s.next, key, etag)
	c.End = s.sink.Now()
	switch {
	case err == nil:
		c.Outcome, c.Got, c.ETag = OutcomeDone, ValueOf(body), m.ETag
	case errors.Is(err, lease.ErrNotModified):
		c.Outcome, c.ETag = OutcomeDone, m.ETag
	case errors.Is(err, lease.ErrNotFound):
		c.Outcome = OutcomeMissing
	default:
		return body, m, err // no answer: it constrains nothing
	}
	end(c)
	return body, m, err
}

func (s *recordedStore) Create(ctx context.Context, key string, body []byte) (lease.Meta, error) {
	return s.write(key, OpCreate, body, "", func() (lease.Meta, error) { return s.next.Create(ctx, key, body) })
}

func (s *recordedStore) Update(ctx context.Context, key string, body []byte, etag string) (lease.Meta, error) {
	return s.write(key, OpUpdate, body, etag, func() (lease.Meta, error) { return s.next.Update(ctx, key, body, etag) })
}

// CreateLive implements lease.LiveWriter: the wrapped store's CreateLive
// (lease.CreateLive), recorded as a Create.
func (s *recordedStore) CreateLive(ctx context.Context, key string, body []byte, ttl time.Duration) (lease.Meta, error) {
	return s.write(key, OpCreate, body, "", func() (lease.Meta, error) { return lease.CreateLive(ctx, s.next, key, body, ttl) })
}

// UpdateLive implements lease.LiveWriter, as CreateLive.
func (s *recordedStore) UpdateLive(ctx context.Context, key string, body []byte, etag string, ttl time.Duration) (lease.Meta, error) {
	return s.write(key, OpUpdate, body, etag, func() (lease.Meta, error) { return lease.UpdateLive(ctx, s.next, key, body, etag, ttl) })
}

// Check implements lease.Checker: the wrapped store's check (lease.Check),
// not recorded (it reads no object of the history).
func (s *recordedStore) Check(ctx context.Context) error { return lease.Check(ctx, s.next) }

// Describe implements lease.Describer: where the wrapped store is.
func (s *recordedStore) Describe() string { return lease.Describe(s.next) }

// Scope implements lease.Scoper: the wrapped store's scope (lease.Scope),
// recorded into the same sink with its keys named in full.
func (s *recordedStore) Scope(sub string) lease.Store {
	return &recordedStore{next: lease.Scope(s.next, sub), sink: s.sink, client: s.client, sub: s.sub + sub}
}

// errNoAnswer is the outcome of a write that has not been answered yet.
var errNoAnswer = errors.New("storetest: no answer yet")

// write records the write do makes: begun with its outcome unknown, ended
// with the answer.
func (s *recordedStore) write(key string, op Op, body []byte, ifMatch string, do func() (lease.Meta, error)) (lease.Meta, error) {
	key = s.sub + key
	start := s.sink.Now()
	end := s.sink.Begin(writeCall(s.client, key, op, body, ifMatch, start, start, lease.Meta{}, errNoAnswer))
	m, err := do()
	end(writeCall(s.client, key, op, body, ifMatch, start, s.sink.Now(), m, err))
	return m, err
}

// writeCall is the Call of a write answered with m and err, as the
// lease.Store contract reads the error: a 409 is a conflict, a precondition
// failure refused, an unknown outcome unknown, any other error failed (not
// applied). A held record applied without its liveness (ErrLivenessUnbound)
// was applied.
func writeCall(client int, key string, op Op, body []byte, ifMatch string, start, end time.Duration, m lease.Meta, err error) Call {
	c := Call{Client: client, Key: key, Op: op, Start: start, End: end, Value: ValueOf(body), IfMatch: ifMatch}
	switch {
	case err == nil, errors.Is(err, lease.ErrLivenessUnbound):
		c.Outcome, c.ETag = OutcomeDone, m.ETag
	case errors.Is(err, lease.ErrConflict):
		c.Outcome = OutcomeConflict
	case errors.Is(err, lease.ErrPreconditionFailed):
		c.Outcome = OutcomeRefused
	case errors.Is(err, lease.ErrUnknownOutcome), errors.Is(err, errNoAnswer):
		c.Outcome = OutcomeUnknown
	default:
		c.Outcome = OutcomeFailed
	}
	return c
}

// MinWriteInterval implements lease.WriteSpacer: the wrapped store's
// (lease.MinWriteInterval).
func (s *recordedStore) MinWriteInterval() time.Duration { return lease.MinWriteInterval(s.next) }
