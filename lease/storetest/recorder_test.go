package storetest

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/nodeid/nodeid/lease"
)

// TestRecordKeepsOptionalInterfaces: a recorded store is a lease.LiveWriter
// and a lease.Scoper, as the store it wraps: on a store that judges expiry
// itself a held record still binds its liveness through it (a wrapper that
// hides LiveWriter does not: the control), and its scoped stores are the
// wrapped store's own, recorded with their keys in full.
func TestRecordKeepsOptionalInterfaces(t *testing.T) {
	ctx := context.Background()
	s := NewMemStore(WithJudgedExpiry())
	rec := NewRecorder()
	w := rec.Wrap(3, s)
	if _, ok := w.(lease.LiveWriter); !ok {
		t.Fatalf("%T is no lease.LiveWriter", w)
	}
	if _, ok := w.(lease.Scoper); !ok {
		t.Fatalf("%T is no lease.Scoper", w)
	}
	body := []byte(`{"writeId":"w1"}`)
	m, err := lease.CreateLive(ctx, w, "7.json", body, time.Minute)
	if err != nil || m.Liveness != lease.LivenessLive {
		t.Fatalf("CreateLive through the recorder: %+v, %v; want a live key", m, err)
	}
	hidden := struct{ lease.Store }{w}
	if _, err := lease.CreateLive(ctx, hidden, "8.json", body, time.Minute); !errors.Is(err, lease.ErrLivenessUnbound) {
		t.Fatalf("CreateLive through a wrapper that hides LiveWriter: %v, want ErrLivenessUnbound (the control)", err)
	}

	sc := lease.Scope(w, "elections/e/")
	if _, ok := sc.(*recordedStore); !ok {
		t.Fatalf("lease.Scope of a recorded store is a %T, want the recorded scope of the store's own", sc)
	}
	em, err := lease.CreateLive(ctx, sc, "leader.json", []byte(`{"writeId":"w2"}`), time.Minute)
	if err != nil || em.Liveness != lease.LivenessLive {
		t.Fatalf("CreateLive through the recorded scope: %+v, %v; want a live key", em, err)
	}
	if _, err := lease.UpdateLive(ctx, sc, "leader.json", []byte(`{"writeId":"w3"}`), "stale", time.Minute); !errors.Is(err, lease.ErrPreconditionFailed) {
		t.Fatalf("UpdateLive on a stale ETag: %v, want ErrPreconditionFailed", err)
	}
	l, err := sc.List(ctx)
	if err != nil || len(l.Objects) != 1 || l.Objects[0].Key != "leader.json" {
		t.Fatalf("List of the scope: %+v, %v; want leader.json alone", l, err)
	}
	if _, _, err := s.Get(ctx, "elections/e/leader.json"); err != nil {
		t.Fatalf("the scoped write is not under the scope in the store: %v", err)
	}

	type seen struct {
		client  int
		key     string
		op      Op
		value   string
		outcome Outcome
	}
	var got []seen
	for _, c := range rec.Calls() {
		got = append(got, seen{c.Client, c.Key, c.Op, c.Value, c.Outcome})
	}
	want := []seen{
		{3, "7.json", OpCreate, "w:w1", OutcomeDone},
		{3, "8.json", OpCreate, "w:w1", OutcomeDone}, // through the hiding wrapper: a plain Create
		{3, "elections/e/leader.json", OpCreate, "w:w2", OutcomeDone},
		{3, "elections/e/leader.json", OpUpdate, "w:w3", OutcomeRefused},
	}
	if !slices.Equal(got, want) {
		t.Fatalf("history %+v\nwant %+v", got, want)
	}
}

// TestWriteCallOutcomes: a write's error is read as the lease.Store contract
// says.
func TestWriteCallOutcomes(t *testing.T) {
	for _, tt := range []struct {
		err  error
		want Outcome
	}{
		{nil, OutcomeDone},
		{fmt.Errorf("%w: 7.json", lease.ErrLivenessUnbound), OutcomeDone}, // applied, without its liveness
		{lease.ErrPreconditionFailed, OutcomeRefused},
		{&lease.ConflictError{}, OutcomeConflict},
		{&lease.UnknownOutcomeError{Op: "update", Key: "7.json", Err: errors.New("reset")}, OutcomeUnknown},
		{errNoAnswer, OutcomeUnknown},
		{errors.New("access denied"), OutcomeFailed},
		{context.DeadlineExceeded, OutcomeFailed}, // the store says: not sent
	} {
		c := writeCall(1, "7.json", OpUpdate, []byte(`{"writeId":"w"}`), "E1", 0, 1, lease.Meta{ETag: "E2"}, tt.err)
		if c.Outcome != tt.want || (tt.want == OutcomeDone) != (c.ETag == "E2") {
			t.Errorf("%v: %v, ETag %q; want %v", tt.err, c.Outcome, c.ETag, tt.want)
		}
	}
}
