package lease

import (
	"context"
	"errors"
	"fmt"
)

// ConditionalReader is implemented by a [Store] that can read an object
// conditionally on its ETag (If-None-Match: <etag> on a GET), the read a
// holder in read mode sends to keep its lease alive (docs/evidence/design.md section
// 11), and by wrappers of stores, which forward to [GetIfChanged].
//
// GetIfChanged reads key unless its ETag is etag:
//   - the object's ETag is etag (HTTP 304 Not Modified): a nil body, a Meta
//     with that ETag, the Date of the answer (zero on a store that reports
//     none, etcd) and Last-Modified when the answer carried it, and an error
//     matching [ErrNotModified]. It says that the object's ETag was etag when
//     the store answered; the instant the request was sent, which is what a
//     holder credits the read to, is the caller's to keep. A store returns
//     ErrNotModified only when the answer itself shows etag (a 304 whose ETag
//     header equals it): a 304 without an ETag, or with another, matches
//     [ErrNotModifiedUnproven] instead and proves nothing.
//   - the object has another ETag (HTTP 200): its body and Meta, as [Store.Get]
//     returns them, and a nil error. A store that ignores the condition also
//     answers 200 with the body when the ETag is etag: Meta.ETag then equals
//     etag, which proves as much as a 304 does.
//   - the key is absent: [ErrNotFound].
//
// An empty etag matches no object: it is a plain Get. Errors are otherwise
// those of [Store.Get]. A store whose conditional reads may be served stale
// (a cache in front of it) fails [ProbeReads].
type ConditionalReader interface {
	// GetIfChanged reads key unless its ETag is etag; see ConditionalReader.
	GetIfChanged(ctx context.Context, key, etag string) ([]byte, Meta, error)
}

var (
	// ErrNotModified is matched by the error of a conditional read
	// ([ConditionalReader]) whose answer shows the object's ETag is the one
	// asked for (HTTP 304 with that ETag). The Meta returned with it carries
	// the answer's ETag and Date.
	ErrNotModified = errors.New("lease: not modified")
	// ErrNotModifiedUnproven is matched by the error of a conditional read
	// answered 304 Not Modified without an ETag header, or with one other
	// than the ETag asked for: the answer says the object did not change but
	// does not show which version the server compared, so it proves nothing
	// and a holder must not credit it. It never matches ErrNotModified.
	ErrNotModifiedUnproven = errors.New("lease: a 304 Not Modified answer that does not show the ETag asked for")
	// ErrNoConditionalRead is matched by the error of [GetIfChanged] on a
	// store that is not a [ConditionalReader] (or reached through a wrapper
	// that hides it).
	ErrNoConditionalRead = errors.New("lease: the store does not implement lease.ConditionalReader (conditional reads)")
)

// ReadOwn is a holder's read of its own lease object in read mode, sent on
// its ETag etag: a conditional read ([GetIfChanged]), or, when plain, a plain
// [Store.Get], whose 200 shows the ETag as a 304 with it would (for a store
// whose 304 does not show it, [ReadsProbeResult.PlainReads]; a GET costs the
// same on S3 whether it is answered 304 or 200). The holder credits either
// answer only when its Meta.ETag is etag.
func ReadOwn(ctx context.Context, s Store, key, etag string, plain bool) ([]byte, Meta, error) {
	if plain {
		return s.Get(ctx, key)
	}
	return GetIfChanged(ctx, s, key, etag)
}

// GetIfChanged runs s's GetIfChanged when s is a [ConditionalReader]; on any
// other store it returns an error matching [ErrNoConditionalRead] without a
// request. A wrapper of stores forwards its own GetIfChanged to it.
func GetIfChanged(ctx context.Context, s Store, key, etag string) ([]byte, Meta, error) {
	if cr, ok := s.(ConditionalReader); ok {
		return cr.GetIfChanged(ctx, key, etag)
	}
	return nil, Meta{}, fmt.Errorf("%w: a %T", ErrNoConditionalRead, s)
}

// NotModifiedUnproven returns the error of a 304 answer to a conditional
// read of key on etag whose ETag header was got ("" when it had none): it
// matches [ErrNotModifiedUnproven]. A store returns it, wrapped with where.
func NotModifiedUnproven(key, etag, got string) error {
	if got == "" {
		return fmt.Errorf("%w: %s: the store answered 304 to If-None-Match: %s without an ETag header, so it does not show what it compared", ErrNotModifiedUnproven, key, etag)
	}
	return fmt.Errorf("%w: %s: the store answered 304 to If-None-Match: %s with ETag %s", ErrNotModifiedUnproven, key, etag, got)
}
