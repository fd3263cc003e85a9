package nodeid

// The safety kernel's verdicts on a held claim's write and on the read-back
// that resolves one: pure functions of the store's answer and of what the
// claim holds, tested by tables; write.go does the I/O and applies them.

import (
	"context"
	"errors"

	"github.com/nodeid/nodeid/lease"
)

// writeVerdict is what a conditional write's answer leaves the claim to do.
type writeVerdict int

const (
	writeLanded      writeVerdict = iota // landed: commit it
	writeCanceled                        // the caller's context ended: return its error
	writeUnbound                         // written, but it reads expired: lost
	writeOverwritten                     // a 412 that is final (rules.conflictFinal): lost
	writeRetry                           // a 5xx: try again on the same ETag, no read-back
	writeReadBack                        // a 409, a 412 that may be ours or a challenge, or an unknown outcome
	writeFailed                          // not applied: the caller may try again
)

// judgeWrite judges err, a write's answer, with pending of the claim's
// writes unresolved before it, ctxDone whether the caller's context has
// ended, and conflictFinal whether a 412 with none pending loses the claim
// (rules.conflictFinal). unknown reports an outcome the store left unknown:
// the write joins the pending ones, and may yet be found landed.
func judgeWrite(err error, pending int, ctxDone, conflictFinal bool) (v writeVerdict, unknown bool) {
	if err == nil {
		return writeLanded, false
	}
	precondition := errors.Is(err, lease.ErrPreconditionFailed)
	var ue *lease.UnknownOutcomeError
	unknown = !precondition &&
		(errors.Is(err, lease.ErrUnknownOutcome) || errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled))
	switch {
	case ctxDone:
		return writeCanceled, unknown
	case errors.Is(err, lease.ErrLivenessUnbound):
		return writeUnbound, unknown
	case errors.Is(err, lease.ErrConflict):
		// A 409 says nothing about who won.
		return writeReadBack, unknown
	case precondition && pending == 0 && conflictFinal:
		return writeOverwritten, unknown
	case errors.As(err, &ue) && ue.ServerError:
		// A 5xx (500 InternalError, 503 SlowDown) most likely did not
		// apply: the next CAS on the same ETag resolves it (a 412 with this
		// write pending reads back), and no read meets the same storm.
		return writeRetry, unknown
	case precondition || unknown:
		// A 412 with a write of ours pending may be that write, and in
		// read mode any 412 may be a challenge to answer.
		return writeReadBack, unknown
	}
	return writeFailed, unknown
}

// backVerdict is what a read-back's answer leaves the claim to do.
type backVerdict int

const (
	backDeleted           backVerdict = iota // the object is gone: lost
	backFailed                               // the read failed: the caller may try again
	backUnchanged                            // our last ETag: nothing pending landed (errNotApplied)
	backGarbage                              // the object no longer decodes: lost
	backAdopted                              // pending write pw landed: adopt it
	backChallenged                           // a challenge names our last landed write: answer it
	backAdoptedChallenged                    // a challenge names pending write pw: it landed; adopt it and answer
	backChallengedOther                      // a challenge of another holder's record: lost
	backTaken                                // another writer's plain record (rules.takenBy)
)

// held is what a read-back is judged against: the ETag and writeId of the
// claim's last landed write, and its writes whose outcome is unknown.
type held struct {
	etag, writeID string
	pending       []pendingWrite
}

// judgeReadBack judges the read-back of node id's object (body and meta, or
// the read's error err) against h, answers being rules.answers; with the
// record read, the pending write it proves landed, the read's or decode's error.
func judgeReadBack(id int, body []byte, meta lease.Meta, err error, h held, answers func(named, ours string) bool) (v backVerdict, rec lease.Record, pw pendingWrite, _ error) {
	switch {
	case errors.Is(err, lease.ErrNotFound):
		return backDeleted, rec, pw, nil
	case err != nil:
		return backFailed, rec, pw, err
	case meta.ETag == h.etag:
		return backUnchanged, rec, pw, nil
	}
	if rec, err = lease.DecodeRecord(body, id); err != nil {
		return backGarbage, rec, pw, err
	}
	named, v := rec.WriteID, backAdopted
	if rec.Challenge != nil {
		if answers(rec.Challenge.Of, h.writeID) {
			return backChallenged, rec, pw, nil
		}
		named, v = rec.Challenge.Of, backAdoptedChallenged
	}
	for _, pw := range h.pending {
		if pw.rec.WriteID == named {
			return v, rec, pw, nil
		}
	}
	if rec.Challenge != nil {
		return backChallengedOther, rec, pw, nil
	}
	return backTaken, rec, pw, nil
}
