package nodeid

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/nodeid/nodeid/lease"
)

// TestJudgeWrite: every kind of answer a write of a held claim meets, with
// and without writes of ours pending, in write mode (a 412 is final) and in
// read mode (it may be a challenge), gets the verdict the kernel's rules
// give it, and only an outcome left unknown joins the pending writes.
func TestJudgeWrite(t *testing.T) {
	unknown := &lease.UnknownOutcomeError{Op: "update", Key: "k", Err: errors.New("connection reset")}
	server := &lease.UnknownOutcomeError{Op: "update", Key: "k", Err: errors.New("503 SlowDown"), ServerError: true}
	conflict := &lease.ConflictError{Op: "update", Key: "k", Err: errors.New("409")}
	precondition := fmt.Errorf("update k: %w", lease.ErrPreconditionFailed)
	for _, tt := range []struct {
		name          string
		err           error
		pending       int
		ctxDone       bool
		conflictFinal bool
		want          writeVerdict
		unknown       bool
	}{
		{"landed", nil, 0, false, true, writeLanded, false},
		{"landed with writes pending", nil, 2, false, true, writeLanded, false},
		{"landed as the context ended", nil, 0, true, true, writeLanded, false},
		{"the context ended", context.Canceled, 0, true, true, writeCanceled, true},
		{"the context ended on a 412", precondition, 0, true, true, writeCanceled, false},
		{"liveness unbound", lease.ErrLivenessUnbound, 0, false, true, writeUnbound, false},
		{"409 in write mode", conflict, 0, false, true, writeReadBack, false},
		{"409 in read mode", conflict, 0, false, false, writeReadBack, false},
		{"412 in write mode, none pending", precondition, 0, false, true, writeOverwritten, false},
		{"412 in write mode, one pending", precondition, 1, false, true, writeReadBack, false},
		{"412 in read mode, none pending", precondition, 0, false, false, writeReadBack, false},
		{"5xx", server, 0, false, true, writeRetry, true},
		{"5xx with writes pending", server, 3, false, false, writeRetry, true},
		{"unknown outcome", unknown, 0, false, true, writeReadBack, true},
		{"store timeout", fmt.Errorf("update k: %w", context.DeadlineExceeded), 0, false, true, writeReadBack, true},
		{"a request canceled, the caller's context live", context.Canceled, 0, false, true, writeReadBack, true},
		{"refused", fmt.Errorf("update k: %w", lease.ErrMisconfigured), 0, false, true, writeFailed, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got, unknown := judgeWrite(tt.err, tt.pending, tt.ctxDone, tt.conflictFinal)
			if got != tt.want || unknown != tt.unknown {
				t.Fatalf("judgeWrite(%v, pending %d, ctxDone %v, conflictFinal %v) = %d, unknown %v; want %d, unknown %v",
					tt.err, tt.pending, tt.ctxDone, tt.conflictFinal, got, unknown, tt.want, tt.unknown)
			}
		})
	}
}

// TestJudgeReadBack: a read-back of a held claim's lease object finds it
// gone, unreadable, unchanged, garbage, one of our pending writes landed, a
// challenge (or a confirm) of our last landed write or of a pending one, a
// challenge of another holder's write, or another writer's plain record, and
// judges each as the kernel's rules say; with rules.answers broken (answer
// any challenge), a challenge of another's write is answered.
func TestJudgeReadBack(t *testing.T) {
	const id = 7
	ours := heldRecord(id, "us", 3, nil)
	pw1, pw2 := pendingWrite{rec: heldRecord(id, "us", 3, nil), sent: time.Unix(10, 0)}, pendingWrite{rec: heldRecord(id, "us", 3, nil), sent: time.Unix(11, 0)}
	h := held{etag: `"ours"`, writeID: ours.WriteID, pending: []pendingWrite{pw1, pw2}}
	other := heldRecord(id, "them", 4, nil)
	challengeOf := func(of string, confirmed bool) lease.Record {
		return heldRecord(id, "us", 3, &lease.Challenge{Of: of, By: "them", Confirmed: confirmed, WindowMillis: 1000})
	}
	same := func(named, ours string) bool { return named == ours }
	anyOne := func(string, string) bool { return true }
	for _, tt := range []struct {
		name    string
		body    lease.Record
		raw     []byte // the body, when it is not a record
		etag    string
		err     error
		answers func(named, ours string) bool
		want    backVerdict
		pw      pendingWrite
		wantErr error
	}{
		{name: "deleted", err: fmt.Errorf("get: %w", lease.ErrNotFound), want: backDeleted},
		{name: "read failed", err: context.DeadlineExceeded, want: backFailed, wantErr: context.DeadlineExceeded},
		{name: "unchanged", body: ours, etag: h.etag, want: backUnchanged},
		{name: "garbage", raw: []byte(`{"schema":`), etag: `"x"`, want: backGarbage, wantErr: lease.ErrCorrupt},
		{name: "another node's record", body: heldRecord(id+1, "us", 3, nil), etag: `"x"`, want: backGarbage, wantErr: lease.ErrCorrupt},
		{name: "the first pending write landed", body: pw1.rec, etag: `"x"`, want: backAdopted, pw: pw1},
		{name: "the second pending write landed", body: pw2.rec, etag: `"x"`, want: backAdopted, pw: pw2},
		{name: "a challenge of our last write", body: challengeOf(ours.WriteID, false), etag: `"x"`, want: backChallenged},
		{name: "a confirm of our last write", body: challengeOf(ours.WriteID, true), etag: `"x"`, want: backChallenged},
		{name: "a challenge of a pending write", body: challengeOf(pw2.rec.WriteID, false), etag: `"x"`, want: backAdoptedChallenged, pw: pw2},
		{name: "a confirm of a pending write", body: challengeOf(pw1.rec.WriteID, true), etag: `"x"`, want: backAdoptedChallenged, pw: pw1},
		{name: "a challenge of another's write", body: challengeOf(other.WriteID, true), etag: `"x"`, want: backChallengedOther},
		{name: "a challenge of another's write, any answered", body: challengeOf(other.WriteID, true), etag: `"x"`, answers: anyOne, want: backChallenged},
		{name: "another writer's record", body: other, etag: `"x"`, want: backTaken},
		{name: "our last write under another ETag", body: ours, etag: `"x"`, want: backTaken},
	} {
		t.Run(tt.name, func(t *testing.T) {
			body := tt.raw
			if body == nil && tt.err == nil {
				var err error
				if body, err = tt.body.Encode(); err != nil {
					t.Fatal(err)
				}
			}
			answers := tt.answers
			if answers == nil {
				answers = same
			}
			v, rec, pw, err := judgeReadBack(id, body, lease.Meta{ETag: tt.etag}, tt.err, h, answers)
			if v != tt.want || pw.rec.WriteID != tt.pw.rec.WriteID || !pw.sent.Equal(tt.pw.sent) || !errors.Is(err, tt.wantErr) || (tt.wantErr == nil) != (err == nil) {
				t.Fatalf("judgeReadBack = %d, pending %q, %v; want %d, pending %q, %v", v, pw.rec.WriteID, err, tt.want, tt.pw.rec.WriteID, tt.wantErr)
			}
			if v >= backAdopted && rec.WriteID != tt.body.WriteID {
				t.Fatalf("judgeReadBack read writeId %q; the object holds %q", rec.WriteID, tt.body.WriteID)
			}
		})
	}
}

// heldRecord returns a held record of node id by holder at version, with a new
// writeId and challenge ch.
func heldRecord(id int, holder string, version int64, ch *lease.Challenge) lease.Record {
	return lease.Record{NodeID: id, Holder: holder, Version: version, LeaseMillis: 20000, WriteID: lease.NewWriteID(), Challenge: ch}
}
