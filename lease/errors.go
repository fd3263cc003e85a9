package lease

import (
	"errors"
	"fmt"
)

var (
	// ErrNotFound means the key does not exist.
	ErrNotFound = errors.New("lease: object not found")
	// ErrPreconditionFailed means a conditional write was not applied: the key
	// existed (create), or its ETag was not the expected one or it was gone
	// (update).
	ErrPreconditionFailed = errors.New("lease: precondition failed")
	// ErrConflict means a conditional write was not applied because another
	// conditional write of the key was in progress (S3's 409
	// ConditionalRequestConflict; AWS: re-read the ETag and retry). It says
	// nothing about whether the key changed: read it back to know who won.
	// A [*ConflictError] matches it together with ErrPreconditionFailed (not
	// applied), so that a caller for whom any refusal is a lost race needs
	// no case of its own; a lease holder must test for it first.
	ErrConflict = errors.New("lease: concurrent conditional write (conflict)")
	// ErrUnknownOutcome is matched (errors.Is) by every [*UnknownOutcomeError].
	ErrUnknownOutcome = errors.New("lease: write outcome unknown")
	// ErrCorrupt means an object in the bucket does not decode as what its key
	// says it is. The wrapping error says why.
	ErrCorrupt = errors.New("lease: corrupt object")
	// ErrMisconfigured means the store's answer shows a configuration error
	// that retrying cannot fix: a bucket that does not exist, access
	// denied, no or unknown credentials, a wrong region, an endpoint that
	// refuses connections, does not resolve or does not speak the store's
	// protocol, a store that cannot do conditional writes. A store wraps it
	// with what to fix; a caller stops at once instead of retrying (the
	// probe and Acquire do). Nothing was written.
	ErrMisconfigured = errors.New("lease: store misconfigured")
	// ErrChecksumMismatch means a body arrived but did not match the checksum
	// the store holds for it: the stored object is damaged, the store keeps a
	// wrong checksum, or the body was damaged on its way. It does not wrap
	// ErrCorrupt, as one read cannot tell a damaged object from a damaged
	// transfer: a reader treats it as a failed read.
	ErrChecksumMismatch = errors.New("lease: checksum mismatch")
)

// BodyError reports a Get of an object that exists but whose body cannot be
// used: too large (it wraps ErrCorrupt) or failing the store's checksum (it
// wraps ErrChecksumMismatch). Meta is that version's, so that an operator's
// repair can replace exactly it by its ETag; Body is what arrived, unverified
// (nil when none was kept).
type BodyError struct {
	// Meta describes the version read.
	Meta Meta
	// Body is the body as it arrived, unverified.
	Body []byte
	// Err says what is wrong.
	Err error
}

func (e *BodyError) Error() string { return e.Err.Error() }

// Unwrap returns what is wrong.
func (e *BodyError) Unwrap() error { return e.Err }

// UnknownOutcomeError reports a write that may or may not have been applied: the
// request was sent but no clear answer came back (a timeout, a reset connection,
// a 5xx). Resolve it by reading the object back and comparing its writeId.
type UnknownOutcomeError struct {
	// Op is the operation: "create" or "update".
	Op string
	// Key is the object key, relative to the prefix.
	Key string
	// Err is the underlying transport or server error.
	Err error
	// ServerError is true when the store answered with a server error (a
	// 5xx: 500 InternalError, 503 SlowDown): it saw the request and most
	// likely did not apply it. A conditional retry on the same ETag then
	// resolves the outcome as well as a read, and costs one request when it
	// lands (if the first write landed after all, the retry is refused and
	// a read-back finds it). False for no answer (a timeout, a reset).
	ServerError bool
}

func (e *UnknownOutcomeError) Error() string {
	return fmt.Sprintf("lease: %s %s: outcome unknown: %v", e.Op, e.Key, e.Err)
}

// Unwrap returns the underlying error.
func (e *UnknownOutcomeError) Unwrap() error { return e.Err }

// Is reports whether target is ErrUnknownOutcome.
func (e *UnknownOutcomeError) Is(target error) bool { return target == ErrUnknownOutcome }

// ConflictError reports a conditional write that was not applied because
// another conditional write of the key was in progress (HTTP 409). It matches
// ErrConflict and ErrPreconditionFailed.
type ConflictError struct {
	// Op is the operation: "create" or "update".
	Op string
	// Key is the object key, relative to the prefix.
	Key string
	// Err is the store's answer.
	Err error
}

func (e *ConflictError) Error() string {
	return fmt.Sprintf("lease: %s %s: not applied, a concurrent conditional write was in progress (conflict): %v", e.Op, e.Key, e.Err)
}

// Unwrap returns the store's answer.
func (e *ConflictError) Unwrap() error { return e.Err }

// Is reports whether target is ErrConflict or ErrPreconditionFailed.
func (e *ConflictError) Is(target error) bool {
	return target == ErrConflict || target == ErrPreconditionFailed
}

// corruptf returns an error wrapping ErrCorrupt with a reason.
func corruptf(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrCorrupt, fmt.Sprintf(format, args...))
}
