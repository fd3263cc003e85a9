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

// write replaces the lease with rec by CAS on the last known ETag, and
// applies judgeWrite's verdict. A write whose outcome is unknown is remembered
// and resolved by reading the object back (readBack): if it carries one of
// our pending writeIds, that write landed. It returns nil when rec landed,
// errEarlierWriteLanded when an earlier pending write of ours did instead,
// errNotApplied when the read-back finds the object unchanged, errChallenged
// when a challenge of ours is there to answer, an error wrapping ErrLeaseLost
// when another writer changed the lease, and any other error when the write
// did not happen and may be tried again.
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
	v, unknown := judgeWrite(err, len(c.pending), ctx.Err() != nil, c.p.rules.conflictFinal(c))
	if unknown {
		c.pending = append(c.pending, pendingWrite{rec: rec, sent: sent})
	}
	switch v {
	case writeLanded:
		c.committed(rec, meta.ETag, sent, false)
		if answering {
			c.answered()
		}
		return nil
	case writeCanceled:
		return ctx.Err()
	case writeUnbound:
		return lostf("node %d: %v", c.id, err)
	case writeOverwritten:
		return lostf("node %d was written by another task (the store answered: %v)", c.id, err)
	case writeRetry:
		return fmt.Errorf("write %s: the store answered with a server error (outcome unknown, tried again on the same ETag): %w", c.key, err)
	case writeReadBack:
		rctx, cancel := c.p.withTimeout(ctx, c.p.t.StoreTimeout)
		defer cancel()
		adopted, err := c.readBack(rctx)
		if err == nil && adopted != rec.WriteID {
			return errEarlierWriteLanded
		}
		return err
	}
	return fmt.Errorf("write %s: %w", c.key, err)
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
	v, rec, pw, err := judgeReadBack(c.id, body, meta, err, held{etag: c.etag, writeID: c.rec.WriteID, pending: c.pending}, c.p.rules.answers)
	switch v {
	case backDeleted:
		return "", lostf("lease object %s was deleted", c.key)
	case backFailed:
		return "", fmt.Errorf("read back %s: %w", c.key, err)
	case backUnchanged:
		return "", errNotApplied
	case backGarbage:
		return "", lostf("lease object %s no longer decodes: %v", c.key, err)
	case backAdopted:
		c.committed(pw.rec, meta.ETag, c.p.rules.adoptedAt(pw.sent, seen), false)
		return pw.rec.WriteID, nil
	case backChallenged:
		c.etag = meta.ETag
		c.answerChallenge()
		return "", errChallenged
	case backAdoptedChallenged:
		c.committed(pw.rec, meta.ETag, c.p.rules.adoptedAt(pw.sent, seen), true)
		return "", errChallenged
	case backChallengedOther:
		return "", &takenError{id: c.id, holder: rec.Holder, version: rec.Version, seen: seen}
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
