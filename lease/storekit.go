package lease

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
)

// This file holds the small pieces every Store implementation needs the same
// way, so that each store keeps one copy of none of them.

// Misconfigured marks err as one that retrying cannot fix: the result matches
// [ErrMisconfigured] (errors.Is) and everything err matches, and its text is
// err's. A store wraps the answers that show a configuration error with it.
func Misconfigured(err error) error { return &misconfiguredError{err: err} }

type misconfiguredError struct{ err error }

func (e *misconfiguredError) Error() string        { return e.err.Error() }
func (e *misconfiguredError) Unwrap() error        { return e.err }
func (e *misconfiguredError) Is(target error) bool { return target == ErrMisconfigured }

// SortByKey sorts l.Objects by key in byte order, as [Store.List] promises,
// and refuses a listing that names one key twice (it would make one object
// look like two). The error says which key; a store wraps it with where.
func (l *Listing) SortByKey() error {
	slices.SortFunc(l.Objects, func(a, b ObjectInfo) int { return strings.Compare(a.Key, b.Key) })
	for i := 1; i < len(l.Objects); i++ {
		if l.Objects[i].Key == l.Objects[i-1].Key {
			return fmt.Errorf("the server listed key %q twice", l.Objects[i].Key)
		}
	}
	return nil
}

// QuoteETag returns an ETag in its quoted form (a weak `W/"..."` one as it
// is). HTTP quotes ETags in headers, but some servers leave the quotes off
// in listings; ETags are compared as strings, so one version must have one
// spelling.
func QuoteETag(e string) string {
	if e == "" || strings.HasPrefix(e, `"`) || strings.HasPrefix(e, `W/"`) {
		return e
	}
	return `"` + e + `"`
}

// ReadBody reads an object's body from r for a store's Get, refusing one
// that is not a lease object by its size alone: more than max bytes, as the
// answer declared it (size; negative when it did not say) or as read (at
// most max+1 bytes are read, so an endless body costs nothing). A refusal
// wraps [ErrCorrupt]; a failed read is returned as it is.
func ReadBody(r io.Reader, size int64, max int) ([]byte, error) {
	if size > int64(max) {
		return nil, fmt.Errorf("%w: the object is %d bytes, a lease object is at most %d", ErrCorrupt, size, max)
	}
	body, err := io.ReadAll(io.LimitReader(r, int64(max)+1))
	if err != nil {
		return nil, fmt.Errorf("read the body: %w", err)
	}
	if len(body) > max {
		return nil, fmt.Errorf("%w: the object is larger than %d bytes", ErrCorrupt, max)
	}
	return body, nil
}

// ReadVersionBody is ReadBody for a Get of the version that meta describes.
// A body too large, or one whose read failed the store's checksum (mismatch
// reports which read errors say so; nil: none), gives a [*BodyError] with
// meta, so that an operator's repair can replace exactly that version.
func ReadVersionBody(r io.Reader, size int64, max int, meta Meta, mismatch func(error) bool) ([]byte, error) {
	var got bytes.Buffer
	body, err := ReadBody(io.TeeReader(r, &got), size, max)
	switch {
	case errors.Is(err, ErrCorrupt):
		return nil, &BodyError{Meta: meta, Err: err}
	case err != nil && mismatch != nil && mismatch(err):
		return nil, &BodyError{Meta: meta, Body: got.Bytes(), Err: fmt.Errorf("%w: %w", ErrChecksumMismatch, err)}
	}
	return body, err
}
