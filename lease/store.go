package lease

import (
	"context"
	"time"
)

// Store is a conditional object store over the keys under one prefix. Keys passed
// to and returned by a Store are relative to that prefix ("7.json", not
// "nodeid/7.json"). Implementations must be safe for concurrent use.
//
// Errors: [ErrNotFound] when a key is absent (Get), [ErrPreconditionFailed] when a
// conditional write was not applied (Create on an existing key, Update on a changed
// or missing key), a [*ConflictError] (matching [ErrConflict] and
// ErrPreconditionFailed) when it was not applied because another conditional
// write was in progress (which says nothing of who won), an
// [*UnknownOutcomeError] when a write may or may not have been applied, a
// [*BodyError] (with that version's Meta) from Get of an object whose body is
// too large or fails the store's checksum. Any other error means the operation did
// not happen (a write was refused before it was applied, for example access denied).
type Store interface {
	// List returns every key under the prefix with its ETag and Last-Modified,
	// following pagination to the end, and the Date of the responses.
	List(ctx context.Context) (Listing, error)
	// Get returns the body of key and its Meta. An absent key gives ErrNotFound.
	Get(ctx context.Context, key string) ([]byte, Meta, error)
	// Create writes body at key only if key does not exist (If-None-Match: *).
	// The returned Meta has the new ETag and the server Date; LastModified may be
	// zero, as S3 does not return it on a write.
	Create(ctx context.Context, key string, body []byte) (Meta, error)
	// Update replaces the body at key only if its current ETag equals etag
	// (If-Match). The returned Meta is as for Create.
	Update(ctx context.Context, key string, body []byte, etag string) (Meta, error)
}

// Meta describes one version of an object as a store response reported it. All
// times are on the store's clock.
type Meta struct {
	// ETag identifies the body; it is opaque and compared as a string, quotes
	// included as the server sent them.
	ETag string
	// LastModified is when the object was last written, on the store's clock,
	// usually truncated to whole seconds. Zero when the response did not say.
	LastModified time.Time
	// Date is the store's clock when it answered (the HTTP Date header), whole
	// seconds on S3. Zero when the response did not say.
	Date time.Time
	// Liveness is the store's own judgement of the key's lease, on a store
	// that judges expiry itself (etcd); LivenessUnjudged on a store that
	// reports Date and LastModified instead (S3). See [Liveness].
	Liveness Liveness
}

// ObjectInfo is one entry of a [Listing].
type ObjectInfo struct {
	// Key is relative to the store's prefix.
	Key string
	// ETag as for Meta.ETag.
	ETag string
	// LastModified on the store's clock; treat it as whole seconds (some servers
	// list milliseconds, others seconds).
	LastModified time.Time
	// Liveness as for Meta.Liveness, at the listing's one instant.
	Liveness Liveness
	// Size is the body's length in bytes as listed; 0 when the store does not
	// list sizes (etcd). It only schedules reads: a lease record written free
	// is shorter than the same record held (no holder, no times), so a
	// listing can suggest which objects were released, and a read confirms.
	Size int64
}

// Listing is the result of [Store.List].
type Listing struct {
	// Objects is every key under the prefix, sorted by key in byte order.
	Objects []ObjectInfo
	// Date is the earliest server Date among the list responses (zero if none
	// said): judging ages against the earliest Date never overstates them.
	Date time.Time
}
