package nodeid

// The conditional write of a held claim on its own last ETag, and its
// resolution: the safety kernel of a renewal, a recovery and a release. A
// write lands only on the ETag of our last write (so nobody wrote the object
// in between: no one else held the ID), an answer that says nothing of the
// outcome is resolved by reading the object back (its writeId), never by a
// blind retry, and a landed write moves the fence by committed's rule.

import (
	"context"
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/nodeid/nodeid/lease"
)

// pendingWrite is a write whose outcome is unknown; it may still be found landed.
type pendingWrite struct {
	rec  lease.Record
	sent time.Time
}

// errNotApplied means a write whose outcome was unknown did not land; the caller
// may try again.
var errNotApplied = errors.New("nodeid: write not applied")

// errEarlierWriteLanded means the write did not land, but an earlier write of
// ours whose outcome was unknown did, and is now the claim's last write: the
// caller writes again, on its ETag, if it needs its own record written (a
// release does; a renewal is done, since the earlier write renewed the lease).
var errEarlierWriteLanded = errors.New("nodeid: an earlier write landed instead")

// errChallenged means the object holds a challenge (or a confirm) of read
// mode naming our last landed write, or a pending one now adopted
// (docs/evidence/design.md section 11): the write did not land, and the claim's next
// write, on the challenge's ETag, answers it. The caller writes again at once
// with a new writeId.
var errChallenged = errors.New("nodeid: the lease is challenged")

// takenError is the loss found by a read-back: the lease object carries none of
// our writes but another writer's record. It wraps ErrLeaseLost; release uses
// what was seen, and when, to tell a successor that took our release from one
// that took an expired lease (see freedByOurRelease).
type takenError struct {
	id      int
	holder  string
	version int64
	seen    time.Time // Clock.Now when the read-back's answer arrived
}

func (e *takenError) Error() string {
	return fmt.Sprintf("%v: node %d was taken by %q with version %d", ErrLeaseLost, e.id, e.holder, e.version)
}

func (e *takenError) Unwrap() error { return ErrLeaseLost }

// lostf returns an error wrapping ErrLeaseLost.
func lostf(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrLeaseLost, fmt.Sprintf(format, args...))
}

// write replaces the lease with rec by CAS on the last known ETag. A write whose
// outcome is unknown is remembered and resolved by reading the object back: if
// it carries one of our pending writeIds, that write landed. It returns nil on
// success, an error wrapping ErrLeaseLost when another writer changed the lease,
// and any other error when the write did not happen and may be tried again.
func (c *Claim) write(ctx context.Context, rec lease.Record) error {
	body, err := rec.Encode()
	if err != nil {
		return err
	}
	etag, answering := c.etag, c.snap.Load().answering
	var meta lease.Meta
	var sent time.Time
	c.request(ctx, func() {
		wctx, cancel := c.p.withTimeout(ctx, c.p.t.StoreTimeout)
		defer cancel()
		sent = c.p.clock.Now()
		meta, err = lease.UpdateLive(wctx, c.p.store, c.key, body, etag, rec.LiveFor())
	})
	if err == nil {
		c.committed(rec, meta.ETag, sent, false)
		if answering {
			c.answered()
		}
		return nil
	}
	unknown := !errors.Is(err, lease.ErrPreconditionFailed) &&
		(errors.Is(err, lease.ErrUnknownOutcome) || errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled))
	if unknown {
		c.pending = append(c.pending, pendingWrite{rec: rec, sent: sent})
	}
	pending := len(c.pending)
	switch {
	case ctx.Err() != nil:
		return ctx.Err()
	case errors.Is(err, lease.ErrLivenessUnbound):
		// Written, but it reads expired: another task may take it now.
		return lostf("node %d: %v", c.id, err)
	case errors.Is(err, lease.ErrConflict):
		// A 409: ours was not applied, and it says nothing about who
		// won: read back.
		return c.resolve(ctx, rec)
	case errors.Is(err, lease.ErrPreconditionFailed) && pending == 0 && c.p.rules.conflictFinal(c):
		return lostf("node %d was written by another task (the store answered: %v)", c.id, err)
	case serverError(err):
		// A 5xx (500 InternalError, 503 SlowDown): the store saw it and most
		// likely did not apply it. The next attempt's CAS on the same ETag
		// resolves it (a 412 then, with this write pending, reads back),
		// without a read here that would meet the same storm.
		return fmt.Errorf("write %s: the store answered with a server error (outcome unknown, tried again on the same ETag): %w", c.key, err)
	case errors.Is(err, lease.ErrPreconditionFailed) || unknown:
		// A 412 with a write of ours pending may be that write, and in read
		// mode any 412 may be a challenge to answer: read back.
		return c.resolve(ctx, rec)
	default:
		return fmt.Errorf("write %s: %w", c.key, err)
	}
}

// serverError reports whether err is an unknown outcome the store answered
// with a server error (lease.UnknownOutcomeError.ServerError).
func serverError(err error) bool {
	var ue *lease.UnknownOutcomeError
	return errors.As(err, &ue) && ue.ServerError
}

// resolve reads the object back after the write of rec was answered with
// nothing certain: nil when rec landed, errEarlierWriteLanded when an earlier
// pending write of ours did instead, errNotApplied when the object is
// unchanged, errChallenged when a challenge of ours is there to answer, an
// error wrapping ErrLeaseLost when another writer's record is there.
func (c *Claim) resolve(ctx context.Context, rec lease.Record) error {
	rctx, cancel := c.p.withTimeout(ctx, c.p.t.StoreTimeout)
	defer cancel()
	adopted, err := c.readBack(rctx)
	if err == nil && adopted != rec.WriteID {
		return errEarlierWriteLanded
	}
	return err
}

// readBack resolves pending writes by reading the lease object. It returns the
// writeId of the pending write it found landed and adopted.
func (c *Claim) readBack(ctx context.Context) (adopted string, err error) {
	var body []byte
	var meta lease.Meta
	var seen time.Time
	c.request(ctx, func() {
		body, meta, err = c.p.store.Get(ctx, c.key)
		seen = c.p.clock.Now()
	})
	if errors.Is(err, lease.ErrNotFound) {
		return "", lostf("lease object %s was deleted", c.key)
	}
	if err != nil {
		return "", fmt.Errorf("read back %s: %w", c.key, err)
	}
	if meta.ETag == c.etag {
		return "", errNotApplied
	}
	rec, err := lease.DecodeRecord(body, c.id)
	if err != nil {
		return "", lostf("lease object %s no longer decodes: %v", c.key, err)
	}
	for _, pw := range c.pending {
		if pw.rec.WriteID == rec.WriteID {
			c.committed(pw.rec, meta.ETag, c.p.rules.adoptedAt(pw.sent, seen), false)
			return rec.WriteID, nil
		}
	}
	if rec.Challenge != nil {
		return "", c.challengedBy(rec, meta.ETag, seen)
	}
	return c.p.rules.takenBy(c, rec, meta.ETag, seen)
}

// takenBy ends the claim on a read-back that shows rec, another writer's
// plain record, answered at seen: lost (see rules.takenBy).
func (c *Claim) takenBy(rec lease.Record, _ string, seen time.Time) (string, error) {
	return "", &takenError{id: c.id, holder: rec.Holder, version: rec.Version, seen: seen}
}

// committed records a write sent at sent that landed: a CAS on our last
// ETag, so nobody wrote the object in between (docs/evidence/design.md
// section 6). It moves the fence to the write's deadline, sent +
// LeaseDuration - SafetyMargin (in read mode sent + Window - SafetyMargin),
// except that a fence dropped for good (Close began, or the claim was lost:
// MinInt64) stays down, and that a fence that fell, by time or into
// jeopardy, is lifted only when the claim may recover (LossGrace not
// NoLossGrace); otherwise it stays down, and the renewal loop ends the claim.
// A write whose deadline has passed already leaves the claim fenced. With
// answering, etag is a challenge's that names rec: the claim's next write
// answers it, and the snapshot that publishes the write says so.
func (c *Claim) committed(rec lease.Record, etag string, sent time.Time, answering bool) {
	c.rec, c.etag, c.pending = rec, etag, nil
	c.capUntil, c.capSuspendUntil = c.fenceAt(sent, c.p.t.Lease)
	until, suspendUntil := c.fenceAt(sent, c.p.t.armSpan())
	c.arm(until, suspendUntil, func(s *snapshot) {
		s.reservation, s.lastSent, s.answering = rec.ReservedUntilMs, sent, answering
		s.provenUntil, s.provenSuspendUntil = until, suspendUntil
	})
	c.subs.changed()
}

// arm moves the fence to until (nanoseconds after p.base) and, on the
// suspend-counting reading, to suspendUntil: committed's rule, which a read
// that proves the claim's ETag in read mode follows too (see keepalive.go).
// It publishes update's changes with it, in one snapshot; a recovery, with
// its count.
func (c *Claim) arm(until, suspendUntil int64, update func(*snapshot)) {
	nowT := c.p.clock.Now()
	now := int64(nowT.Sub(c.p.base))
	var recovery bool
	var fenced time.Duration
	c.setFence(func(s snapshot) snapshot {
		update(&s)
		fallen := s.jeopardy || c.suspendFallen(&s, nowT) || now >= s.until
		recovery = false
		if (fallen && c.p.t.LossGrace == NoLossGrace) || s.until == math.MinInt64 {
			return s // fell for good (NoLossGrace), or fenced for good (Close, a loss)
		}
		s.until, s.suspendUntil = until, suspendUntil
		// A recovery lifts the fence on both clocks: a write sent before
		// a suspension longer than the time left lands with its
		// suspend-counting deadline passed, and Valid brings the fence
		// down again at once.
		if fallen && until > now && !c.suspendFallen(&s, nowT) {
			recovery, fenced = true, 0
			if !s.fellAt.IsZero() {
				fenced = nowT.Sub(s.fellAt)
			}
			s.jeopardy, s.fellAt, s.recoveries = false, time.Time{}, s.recoveries+1
		}
		return s
	})
	if recovery {
		c.recovered(fenced)
	}
}
