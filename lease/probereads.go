package lease

import (
	"context"
	"errors"
	"fmt"
)

// ProbeReadsRounds is how many clean rounds [ProbeReads] needs.
const ProbeReadsRounds = 3

// ErrStaleReads is matched (errors.Is) by every [*StaleReadError]: a
// conditional read sent after a write had completed did not show it. On
// such a store (a cache or CDN in front of it, a lagging replica) a holder
// in read mode could keep crediting reads of its own ETag after a challenge
// replaced it; keep-alive by reads must not run on it.
var ErrStaleReads = errors.New("lease: the store's conditional reads may be stale")

// StaleReadError reports a conditional read that did not show a write
// completed before it was sent.
type StaleReadError struct {
	// Key is the probe object's key, relative to the prefix.
	Key string
	// Reader says which client read: "the holder's store" or "the second
	// store".
	Reader string
	// Replaced is the ETag the read was conditional on, which a completed
	// write had replaced; Written is the ETag that write produced.
	Replaced, Written string
	// Seen is what the read answered ("304 Not Modified with ETag ...", "200
	// with ETag ...").
	Seen string
	// Plain is true for a plain GET (ReadsProbeResult.PlainReads).
	Plain bool
	// Err is the store's error, when the answer was one (a 304).
	Err error
}

func (e *StaleReadError) Error() string {
	sent := "If-None-Match: " + e.Replaced
	if e.Plain {
		sent = "a GET (it held " + e.Replaced + ")"
	}
	return fmt.Sprintf("lease: stale read, the store cannot keep leases alive by reads: %s sent %s on %s after a write had replaced it with %s, and was answered %s, not 200 with %s",
		e.Reader, sent, e.Key, e.Written, e.Seen, e.Written)
}

// Unwrap returns the store's error, if any.
func (e *StaleReadError) Unwrap() error { return e.Err }

// Is reports whether target is ErrStaleReads.
func (e *StaleReadError) Is(target error) bool { return target == ErrStaleReads }

// ReadsProbeResult is what [ProbeReads] learned.
type ReadsProbeResult struct {
	// NotModifiedSeen is true when the store answered a conditional read on
	// the current ETag with 304 Not Modified. False: it ignores
	// If-None-Match on a read and answers 200 with the body (a holder may
	// credit that too, it shows the ETag, but each read costs a full GET).
	NotModifiedSeen bool
	// DateSeen is true when every answer to a conditional read on the
	// current ETag carried the store's Date.
	DateSeen bool
	// PlainReads is true when the store answered a conditional read on the
	// current ETag with a 304 that does not show it (versitygw 1.8.0,
	// Azurite 3.35.0): such an answer proves nothing, so holders must read
	// with plain GETs ([ReadOwn]), whose 200 shows the ETag; the rest of the
	// probe then checked plain reads.
	PlainReads bool
}

// ProbeReads checks on the object [ProbeKey] that the conditional reads of
// a's store show every write completed before they were sent, as keep-alive
// by reads needs (docs/evidence/design.md section 11, "Why it is safe"). b must be a
// second store built the same way as a (its own client, on a new
// connection): the other tasks' view of the bucket. Each of
// [ProbeReadsRounds] rounds:
//
//  1. a reads the object conditionally on its current ETag E, as a holder
//     does (a 304 with E, or a 200 with E), so that any cache on a's path
//     holds E;
//  2. b replaces the object by CAS on E, which gives E2;
//  3. a, then b, send the holder's exact request, If-None-Match: E: each
//     must be answered 200 with E2.
//
// A round in which another writer got in between (b's CAS refused, or a
// 200 with an ETag other than E and E2) is run again, a few times at most.
// When the store answers step 1 with a 304 that does not show E (it proves
// nothing, [ErrNotModifiedUnproven]), the holder's reads must be plain GETs:
// the probe sets PlainReads and reads plainly from then on (step 1 must then
// show E, step 3 E2). The error wraps a [*StaleReadError] (matching
// ErrStaleReads) when a read did not show the completed write (a 304, even
// one without an ETag, or a 200 with E), [ErrNoConditionalRead] when a is
// not a [ConditionalReader], the store's error when it matches
// ErrMisconfigured, and matches [ErrProbeInconclusive] when the probe could
// not tell. Any error refuses the store for keep-alive by reads. Run
// [Probe] first: ProbeReads relies on the write conditions.
func ProbeReads(ctx context.Context, a, b Store) (ReadsProbeResult, error) {
	r := ReadsProbeResult{DateSeen: true}
	if _, ok := a.(ConditionalReader); !ok {
		return r, fmt.Errorf("%w: a %T", ErrNoConditionalRead, a)
	}
	clean := 0
	for try := 0; clean < ProbeReadsRounds; try++ {
		if try == 3*ProbeReadsRounds {
			return r, fmt.Errorf("%w: %d of %d rounds of the read probe on %s were disturbed by other writers", ErrProbeInconclusive, try-clean, try, ProbeKey)
		}
		ok, err := probeReadsRound(ctx, a, b, &r)
		if err != nil {
			return r, err
		}
		if ok {
			clean++
		}
	}
	return r, nil
}

// probeReadsRound runs one round of ProbeReads; false, nil when another
// writer disturbed it.
func probeReadsRound(ctx context.Context, a, b Store, r *ReadsProbeResult) (bool, error) {
	if _, err := a.Create(ctx, ProbeKey, probeBody("read probe create")); err != nil && !errors.Is(err, ErrPreconditionFailed) {
		return false, inconclusive("read probe create", err)
	}
	_, m, err := a.Get(ctx, ProbeKey)
	if err != nil {
		return false, inconclusive("read probe read", err)
	}
	etag := m.ETag
	// 1. The holder's read on the current ETag.
	_, m, err = ReadOwn(ctx, a, ProbeKey, etag, r.PlainReads)
	if errors.Is(err, ErrNotModifiedUnproven) {
		r.PlainReads = true // a 304 that shows nothing: holders read plainly
		_, m, err = ReadOwn(ctx, a, ProbeKey, etag, true)
	}
	switch {
	case errors.Is(err, ErrNotModified):
		r.NotModifiedSeen = true
	case err != nil:
		return false, inconclusive("conditional read on the current etag", err)
	case m.ETag != etag:
		return false, nil // another writer
	}
	r.DateSeen = r.DateSeen && (!m.Date.IsZero() || m.Liveness.Judged())
	// 2. The other client replaces it.
	w, err := b.Update(ctx, ProbeKey, probeBody("read probe replace"), etag)
	switch {
	case errors.Is(err, ErrPreconditionFailed):
		return false, nil // another writer
	case err != nil:
		return false, inconclusive("read probe replace", err)
	}
	// 3. The holder's exact request, from both clients.
	for _, rd := range []struct {
		s    Store
		name string
	}{{a, "the holder's store"}, {b, "the second store"}} {
		_, m, err := ReadOwn(ctx, rd.s, ProbeKey, etag, r.PlainReads)
		stale := &StaleReadError{Key: ProbeKey, Reader: rd.name, Replaced: etag, Written: w.ETag, Err: err, Plain: r.PlainReads}
		switch {
		case errors.Is(err, ErrNotModified):
			stale.Seen = "304 Not Modified with ETag " + m.ETag
			return false, stale
		case errors.Is(err, ErrNotModifiedUnproven):
			stale.Seen = "304 Not Modified"
			return false, stale
		case errors.Is(err, ErrNoConditionalRead):
			return false, err
		case err != nil:
			return false, inconclusive("conditional read on the replaced etag", err)
		case m.ETag == etag:
			stale.Seen = "200 with ETag " + etag
			return false, stale
		case m.ETag != w.ETag:
			return false, nil // another writer, or an older version: the next round tells
		}
	}
	return true, nil
}
