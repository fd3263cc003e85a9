package storetest

import (
	"bytes"
	"errors"
	"fmt"
	"sync"
	"testing"

	"github.com/nodeid/nodeid/lease"
)

// The conformance of conditional reads (lease.ConditionalReader), the read
// a holder sends in keep-alive by reads (docs/evidence/design.md section 11). A store
// that does not implement it is reported (the subtests skip, saying so), not
// failed.

// condReader returns s as a ConditionalReader, or skips t saying why not.
func condReader(t *testing.T, s lease.Store) lease.ConditionalReader {
	t.Helper()
	cr, ok := s.(lease.ConditionalReader)
	if !ok {
		t.Skipf("%T does not implement lease.ConditionalReader: no conditional reads, no keep-alive by reads on it", s)
	}
	return cr
}

// wantAnswerTime fails t unless m carries what a holder judges a read by:
// the store's Date, or on a store that judges expiry itself, its liveness.
func wantAnswerTime(t *testing.T, tg Target, what string, m lease.Meta) {
	t.Helper()
	switch {
	case tg.Judged && !m.Liveness.Judged():
		t.Errorf("%s: Liveness %v, want one the store judged", what, m.Liveness)
	case !tg.Judged && m.Date.IsZero():
		t.Errorf("%s: no Date in the answer", what)
	}
}

// ignoresINM is the report of a store that answered a conditional read on
// the current ETag with the whole object.
func ignoresINM(s lease.Store, etag string) string {
	return fmt.Sprintf("%s ignores If-None-Match on a read: it answered 200 with the body and the unchanged ETag %s instead of 304 Not Modified. "+
		"A holder may still credit that answer (it shows its ETag), but every keep-alive read costs a full GET", lease.Describe(s), etag)
}

func testCondReadNotModified(t *testing.T, tg Target) {
	s := tg.Open(t, "p/")
	cr := condReader(t, s)
	m := mustCreate(t, s, "c.json", []byte(`{"writeId":"c1"}`))
	body, got, err := cr.GetIfChanged(ctxFor(t), "c.json", m.ETag)
	switch {
	case tg.NotModifiedWithoutETag:
		if !errors.Is(err, lease.ErrNotModifiedUnproven) || errors.Is(err, lease.ErrNotModified) {
			t.Fatalf("GetIfChanged on the current ETag %s = %+v, %v; the target says its 304s carry no ETag: want ErrNotModifiedUnproven alone", m.ETag, got, err)
		}
		t.Skipf("%s: %v. Its conditional reads cannot be credited; holders in read mode read it with plain GETs (ProbeReads)", lease.Describe(s), err)
	case errors.Is(err, lease.ErrNotModifiedUnproven):
		t.Fatalf("%v; if the server always answers so, set Target.NotModifiedWithoutETag", err)
	case err == nil && got.ETag == m.ETag:
		t.Skip(ignoresINM(s, m.ETag))
	case !errors.Is(err, lease.ErrNotModified):
		t.Fatalf("GetIfChanged on the current ETag %s = %q, %+v, %v; want ErrNotModified", m.ETag, body, got, err)
	case errors.Is(err, lease.ErrNotModifiedUnproven):
		t.Fatalf("GetIfChanged error %v matches both ErrNotModified and ErrNotModifiedUnproven", err)
	}
	if got.ETag != m.ETag {
		t.Errorf("304's ETag = %q, want %q", got.ETag, m.ETag)
	}
	if body != nil {
		t.Errorf("304 with a body %q", body)
	}
	wantAnswerTime(t, tg, "304", got)
}

func testCondReadChanged(t *testing.T, tg Target) {
	s := tg.Open(t, "p/")
	cr := condReader(t, s)
	ctx := ctxFor(t)
	m1 := mustCreate(t, s, "c.json", []byte(`{"writeId":"c1"}`))
	m2, err := s.Update(ctx, "c.json", []byte(`{"writeId":"c2"}`), m1.ETag)
	if err != nil {
		t.Fatalf("Update: %v", err)
	}
	for _, etag := range []string{m1.ETag, `"bogus"`} {
		body, got, err := cr.GetIfChanged(ctx, "c.json", etag)
		if err != nil {
			t.Fatalf("GetIfChanged(%s) after a replace: %v; want the new version", etag, err)
		}
		if !bytes.Equal(body, []byte(`{"writeId":"c2"}`)) || got.ETag != m2.ETag {
			t.Fatalf("GetIfChanged(%s) = %q, ETag %s; want the new version, ETag %s", etag, body, got.ETag, m2.ETag)
		}
		wantAnswerTime(t, tg, "200", got)
	}
	// An empty ETag matches nothing: a plain read.
	if body, got, err := cr.GetIfChanged(ctx, "c.json", ""); err != nil || got.ETag != m2.ETag || !bytes.Equal(body, []byte(`{"writeId":"c2"}`)) {
		t.Fatalf("GetIfChanged with no ETag = %q, %+v, %v; want the object", body, got, err)
	}
}

func testCondReadMissing(t *testing.T, tg Target) {
	s := tg.Open(t, "p/")
	cr := condReader(t, s)
	m := mustCreate(t, s, "other.json", []byte("x"))
	for _, etag := range []string{m.ETag, ""} {
		if _, _, err := cr.GetIfChanged(ctxFor(t), "absent.json", etag); !errors.Is(err, lease.ErrNotFound) {
			t.Fatalf("GetIfChanged(absent, %q) error = %v, want ErrNotFound", etag, err)
		}
	}
}

// CondReadWriters and CondReadReaders race in testCondReadRace, each writer
// landing CondReadWrites updates.
const (
	CondReadWriters = 4
	CondReadReaders = 6
	CondReadWrites  = 8
)

// testCondReadRace races writers (a chain of updates, each on the ETag its
// writer last saw) with readers that read conditionally on the last ETag
// they saw, and checks that no read shows a version older than a write that
// had completed before the read was sent, and that the recorded history
// (304s included) is linearizable.
func testCondReadRace(t *testing.T, tg Target) {
	s := tg.Open(t, "p/")
	condReader(t, s)
	ctx := ctxFor(t)
	rec := NewRecorder()
	const key = "race.json"
	if _, err := rec.Wrap(0, s).Create(ctx, key, []byte(`{"writeId":"`+lease.NewWriteID()+`"}`)); err != nil {
		t.Fatalf("Create: %v", err)
	}
	var writers, readers sync.WaitGroup
	done := make(chan struct{})
	errs := make(chan error, CondReadWriters+CondReadReaders)
	for w := range CondReadWriters {
		writers.Go(func() {
			st := rec.Wrap(1+w, s)
			for landed := 0; landed < CondReadWrites; {
				_, m, err := st.Get(ctx, key)
				if err != nil {
					errs <- fmt.Errorf("writer %d: get: %w", w, err)
					return
				}
				_, err = st.Update(ctx, key, []byte(`{"writeId":"`+lease.NewWriteID()+`"}`), m.ETag)
				switch {
				case err == nil:
					landed++
				case !errors.Is(err, lease.ErrPreconditionFailed):
					errs <- fmt.Errorf("writer %d: update: %w", w, err)
					return
				}
			}
		})
	}
	for r := range CondReadReaders {
		readers.Go(func() {
			st := rec.Wrap(1+CondReadWriters+r, s)
			etag := ""
			for {
				select {
				case <-done:
					return
				default:
				}
				_, m, err := lease.GetIfChanged(ctx, st, key, etag)
				if tg.NotModifiedWithoutETag && errors.Is(err, lease.ErrNotModifiedUnproven) {
					continue // an answer that shows nothing: the recorder left it out
				}
				if err != nil && !errors.Is(err, lease.ErrNotModified) {
					errs <- fmt.Errorf("reader %d: GetIfChanged(%s): %w", r, etag, err)
					return
				}
				etag = m.ETag
			}
		})
	}
	writers.Wait()
	close(done)
	readers.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if t.Failed() {
		return
	}
	calls := rec.Calls()
	if err := noStaleRead(calls); err != nil {
		t.Fatal(err)
	}
	if err := CheckLinearizable(calls, linearizeTimeout); err != nil {
		t.Fatalf("%d calls: %v", len(calls), err)
	}
	reads := 0
	for _, c := range calls {
		if c.Op == OpGet {
			reads++
		}
	}
	t.Logf("%d writes landed, %d reads, none stale, history linearizable", CondReadWriters*CondReadWrites+1, reads)
}

// noStaleRead checks a history of one key whose applied writes form one
// chain (each an update on the ETag of the one before): every read shows
// the version of the last write that completed before it was sent, or a
// later one.
func noStaleRead(calls []Call) error {
	// Order the applied writes by the chain of ETags.
	next := map[string]Call{} // IfMatch -> the applied update on it
	var first Call
	for _, c := range calls {
		switch {
		case c.Op == OpCreate && c.Outcome == OutcomeDone:
			first = c
		case c.Op == OpUpdate && c.Outcome == OutcomeDone:
			if prev, dup := next[c.IfMatch]; dup {
				return fmt.Errorf("two updates applied on ETag %s: %s and %s", c.IfMatch, prev.ETag, c.ETag)
			}
			next[c.IfMatch] = c
		}
	}
	index := map[string]int{} // ETag -> its place in the chain
	var chain []Call
	for c, ok := first, first.ETag != ""; ok; c, ok = next[c.ETag] {
		index[c.ETag] = len(chain)
		chain = append(chain, c)
	}
	if len(chain) != len(next)+1 {
		return fmt.Errorf("the applied writes do not form one chain (%d of %d)", len(chain), len(next)+1)
	}
	for _, r := range calls {
		if r.Op != OpGet || r.Outcome != OutcomeDone {
			continue
		}
		at, ok := index[r.ETag]
		if !ok {
			return fmt.Errorf("client %d: a read showed ETag %s, which no write produced", r.Client, r.ETag)
		}
		for i := len(chain) - 1; i > at; i-- {
			if w := chain[i]; w.End < r.Start {
				return fmt.Errorf("client %d: a read sent at %v showed ETag %s (write %d), but write %d (ETag %s) had completed at %v",
					r.Client, r.Start, r.ETag, at, i, w.ETag, w.End)
			}
		}
	}
	return nil
}

// testProbeReads runs lease.ProbeReads with two stores opened the same way
// and wants it to pass (with plain reads where the target's 304s carry no
// ETag).
func testProbeReads(t *testing.T, tg Target) {
	a, b := tg.Open(t, "p/"), tg.Open(t, "p/")
	condReader(t, a)
	r, err := lease.ProbeReads(ctxFor(t), a, b)
	switch {
	case err != nil:
		t.Fatal(err)
	case r.PlainReads != tg.NotModifiedWithoutETag:
		t.Fatalf("ProbeReads = %+v: PlainReads %v, but the target's 304s carry an ETag: %v", r, r.PlainReads, !tg.NotModifiedWithoutETag)
	case r.PlainReads:
		t.Logf("%s answers 304 without an ETag: its holders read with plain GETs, which the probe checked", lease.Describe(a))
	}
	if !r.NotModifiedSeen {
		t.Logf("%s ignores If-None-Match on a read (no 304 in the probe); the probe passed on its 200s", lease.Describe(a))
	}
}
