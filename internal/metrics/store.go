package metrics

import (
	"context"
	"errors"
	"time"

	"github.com/nodeid/nodeid/lease"
)

// Outcomes of a store request, the values of the outcome label.
const (
	OutcomeOK                 = "ok"
	OutcomeNotFound           = "not_found"
	OutcomePreconditionFailed = "precondition_failed"
	OutcomeUnknown            = "unknown_outcome"
	OutcomeError              = "error"
)

// Store returns s wrapped so that every request is counted in
// nodeid_s3_requests_total and timed in nodeid_s3_request_duration_seconds. The
// wrapper changes no result.
func (m *Metrics) Store(s lease.Store) lease.Store { return &store{next: s, m: m} }

type store struct {
	next lease.Store
	m    *Metrics
}

func (s *store) observe(op string, start time.Time, err error) {
	s.m.s3Duration.WithLabelValues(op).Observe(time.Since(start).Seconds())
	s.m.s3Requests.WithLabelValues(op, Outcome(err)).Inc()
}

// Outcome classifies the error of a store request.
func Outcome(err error) string {
	switch {
	case err == nil:
		return OutcomeOK
	case errors.Is(err, lease.ErrNotFound):
		return OutcomeNotFound
	case errors.Is(err, lease.ErrPreconditionFailed):
		return OutcomePreconditionFailed
	case errors.Is(err, lease.ErrUnknownOutcome):
		return OutcomeUnknown
	default:
		return OutcomeError
	}
}

func (s *store) List(ctx context.Context) (lease.Listing, error) {
	start := time.Now()
	l, err := s.next.List(ctx)
	s.observe("list", start, err)
	return l, err
}

func (s *store) Get(ctx context.Context, key string) ([]byte, lease.Meta, error) {
	start := time.Now()
	b, meta, err := s.next.Get(ctx, key)
	s.observe("get", start, err)
	return b, meta, err
}

func (s *store) Create(ctx context.Context, key string, body []byte) (lease.Meta, error) {
	start := time.Now()
	meta, err := s.next.Create(ctx, key, body)
	s.observe("create", start, err)
	return meta, err
}

func (s *store) Update(ctx context.Context, key string, body []byte, etag string) (lease.Meta, error) {
	start := time.Now()
	meta, err := s.next.Update(ctx, key, body, etag)
	s.observe("update", start, err)
	return meta, err
}
