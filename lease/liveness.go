package lease

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// Liveness is a store's own judgement of whether the lease of a key still runs.
// A store either reports its clock readings (S3: Date and Last-Modified, and
// the expiry rule [Expired] judges from them) or judges expiry itself (etcd:
// the key's liveness is bound to a lease on the store's own clock, and the
// store says whether it has run out). Meta.Liveness and ObjectInfo.Liveness
// are [LivenessUnjudged] on a store of the first kind.
type Liveness uint8

const (
	// LivenessUnjudged means the store does not judge expiry: judge it from
	// the Date and Last-Modified it reports ([Expired]).
	LivenessUnjudged Liveness = iota
	// LivenessLive means the liveness bound by the key's last write has not run
	// out on the store's clock.
	LivenessLive
	// LivenessExpired means the key's last write bound no liveness (it was
	// written with a zero time to live, or by a plain Create or Update), or it
	// has run out on the store's clock. The key and its body remain.
	LivenessExpired
)

var livenessNames = [...]string{LivenessUnjudged: "unjudged", LivenessLive: "live", LivenessExpired: "expired"}

func (l Liveness) String() string {
	if int(l) >= len(livenessNames) {
		return "unknown"
	}
	return livenessNames[l]
}

// Judged reports whether the store judged this liveness itself.
func (l Liveness) Judged() bool { return l != LivenessUnjudged }

// LiveWriter is implemented by a [Store] that judges expiry itself (and by
// wrappers of stores, which forward to [CreateLive] and [UpdateLive]). Its
// writes bind the key's liveness to a lease of ttl on the store's own clock,
// which starts no earlier than the write was sent: the liveness runs out no
// earlier than ttl after the send (a store rounds ttl up to its resolution).
// A zero ttl binds no liveness: the key reads LivenessExpired at once. The
// liveness of a key changes only with a write of it; it never outlives the
// next write. The plain Create and Update of such a store bind no liveness.
type LiveWriter interface {
	// CreateLive is Create, binding the key's liveness to ttl.
	CreateLive(ctx context.Context, key string, body []byte, ttl time.Duration) (Meta, error)
	// UpdateLive is Update, binding the key's liveness to ttl.
	UpdateLive(ctx context.Context, key string, body []byte, etag string, ttl time.Duration) (Meta, error)
}

// ErrLivenessUnbound means a write that had to bind a key's liveness (a held
// record, ttl > 0) was applied by a store that judges expiry itself, and its
// answer says the liveness is not bound: the key reads expired at once, and
// another task may take what the writer believes it holds. It happens when a
// wrapper of such a store (metrics, logging: struct{ lease.Store }) hides
// [LiveWriter]: the plain Create and Update bind no liveness. A wrapper must
// forward CreateLive and UpdateLive (calling [CreateLive] and [UpdateLive] on
// the store it wraps). nodeid treats it as fatal: the take fails, a claim
// ends lost.
var ErrLivenessUnbound = errors.New("lease: a held record was written without its liveness on a store that judges expiry itself (does a wrapper hide lease.LiveWriter?)")

// CreateLive creates key as s.Create does and, when s judges expiry itself
// (implements [LiveWriter]), binds its liveness to ttl. On a store that
// reports its clock (S3) it is exactly s.Create: the expiry rule reads the
// lease from the record instead. When ttl > 0 and the answer shows a store
// that judges expiry itself but left the liveness unbound (a wrapper hides
// LiveWriter), the error wraps [ErrLivenessUnbound]: the write was applied
// and its key reads expired.
func CreateLive(ctx context.Context, s Store, key string, body []byte, ttl time.Duration) (Meta, error) {
	var m Meta
	var err error
	if lw, ok := s.(LiveWriter); ok {
		m, err = lw.CreateLive(ctx, key, body, ttl)
	} else {
		m, err = s.Create(ctx, key, body)
	}
	return m, checkBound(err, m, key, ttl, s)
}

// UpdateLive replaces key as s.Update does and, when s judges expiry itself
// (implements [LiveWriter]), binds its liveness to ttl; see [CreateLive].
func UpdateLive(ctx context.Context, s Store, key string, body []byte, etag string, ttl time.Duration) (Meta, error) {
	var m Meta
	var err error
	if lw, ok := s.(LiveWriter); ok {
		m, err = lw.UpdateLive(ctx, key, body, etag, ttl)
	} else {
		m, err = s.Update(ctx, key, body, etag)
	}
	return m, checkBound(err, m, key, ttl, s)
}

// checkBound returns err, or an error wrapping ErrLivenessUnbound when a
// successful write that had to bind a liveness of ttl was answered expired.
func checkBound(err error, m Meta, key string, ttl time.Duration, s Store) error {
	if err == nil && ttl > 0 && m.Liveness == LivenessExpired {
		return fmt.Errorf("%w: %s through a %T", ErrLivenessUnbound, key, s)
	}
	return err
}

// LiveFor returns the liveness a write of r binds on a store that judges
// expiry itself: its lease when held, none (zero) when free.
func (r *Record) LiveFor() time.Duration {
	if r.Free() {
		return 0
	}
	return r.Lease()
}
