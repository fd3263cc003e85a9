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
// (304s included) is linearizable. A read whose body is newer than its ETag
// fails it unless the target says its ETags may lag (Target.GetETagMayLag);
// the ETags and the bodies are then checked as two histories.
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
	chain, err := writeChain(calls)
	if err != nil {
		t.Fatal(err)
	}
	torn, err := tornReads(calls, chain)
	if err != nil {
		t.Fatal(err)
	}
	if len(torn) > 0 && !tg.GetETagMayLag {
		f := torn[0]
		t.Fatalf("%d reads showed a body newer than their ETag (the first: client %d, the body of write %d with the ETag of write %d): "+
			"a GET racing a PUT is not atomic on %s; if it always answers so, set Target.GetETagMayLag", len(torn), calls[f.call].Client, f.body, f.etag, lease.Describe(s))
	}
	for _, h := range tornHalves(calls, chain, torn) {
		if err := noStaleRead(h.calls, chain); err != nil {
			t.Fatalf("%s: %v", h.name, err)
		}
		if err := CheckLinearizable(h.calls, linearizeTimeout); err != nil {
			t.Fatalf("%s: %d calls: %v", h.name, len(h.calls), err)
		}
	}
	reads := 0
	for _, c := range calls {
		if c.Op == OpGet {
			reads++
		}
	}
	t.Logf("%d writes landed, %d reads (%d with a body newer than their ETag), none stale, history linearizable", len(chain), reads, len(torn))
}

// writeChain orders the applied writes of a history of one key by the
// chain of ETags (each an update on the ETag of the one before), and fails
// if they form no one chain.
func writeChain(calls []Call) ([]Call, error) {
	next := map[string]Call{} // IfMatch -> the applied update on it
	var first Call
	for _, c := range calls {
		switch {
		case c.Op == OpCreate && c.Outcome == OutcomeDone:
			first = c
		case c.Op == OpUpdate && c.Outcome == OutcomeDone:
			if prev, dup := next[c.IfMatch]; dup {
				return nil, fmt.Errorf("two updates applied on ETag %s: %s and %s", c.IfMatch, prev.ETag, c.ETag)
			}
			next[c.IfMatch] = c
		}
	}
	var chain []Call
	for c, ok := first, first.ETag != ""; ok; c, ok = next[c.ETag] {
		chain = append(chain, c)
	}
	if len(chain) != len(next)+1 {
		return nil, fmt.Errorf("the applied writes do not form one chain (%d of %d)", len(chain), len(next)+1)
	}
	return chain, nil
}

// chainIndex maps each write of chain to its place in it, by the key f gives.
func chainIndex(chain []Call, f func(Call) string) map[string]int {
	index := make(map[string]int, len(chain))
	for i, c := range chain {
		index[f(c)] = i
	}
	return index
}

// noStaleRead checks that every read of calls shows the version of the
// last write of chain that completed before it was sent, or a later one.
func noStaleRead(calls, chain []Call) error {
	index := chainIndex(chain, func(c Call) string { return c.ETag })
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

// tornRead is a read whose body and ETag are of two writes: call is its
// place in the history, body and etag the writes' places in the chain.
type tornRead struct{ call, body, etag int }

// tornReads finds the reads of calls whose body is of a later write of
// chain than their ETag. A body older than its ETag is an error: a holder
// that read it could take another writer's ETag for its own.
func tornReads(calls, chain []Call) ([]tornRead, error) {
	byETag := chainIndex(chain, func(c Call) string { return c.ETag })
	byValue := chainIndex(chain, func(c Call) string { return c.Value })
	var torn []tornRead
	for i, r := range calls {
		if r.Op != OpGet || r.Outcome != OutcomeDone || r.Got == "" {
			continue
		}
		e, ok := byETag[r.ETag]
		if !ok {
			return nil, fmt.Errorf("client %d: a read showed ETag %s, which no write produced", r.Client, r.ETag)
		}
		b, ok := byValue[r.Got]
		switch {
		case !ok:
			return nil, fmt.Errorf("client %d: a read showed the value %q, which no write produced", r.Client, r.Got)
		case b < e:
			return nil, fmt.Errorf("client %d: a read showed the body of write %d with the ETag of write %d, a later one: "+
				"a holder reading so could take another writer's ETag for its own", r.Client, b, e)
		case b > e:
			torn = append(torn, tornRead{call: i, body: b, etag: e})
		}
	}
	return torn, nil
}

// history is a named history to check.
type history struct {
	name  string
	calls []Call
}

// tornHalves returns calls as the histories to check: calls alone when no
// read is torn, else two, one of what the ETags show (each torn read named
// by its ETag) and one of what the bodies show (each given its body's ETag).
func tornHalves(calls, chain []Call, torn []tornRead) []history {
	if len(torn) == 0 {
		return []history{{"history", calls}}
	}
	etags := append([]Call(nil), calls...)
	bodies := append([]Call(nil), calls...)
	for _, r := range torn {
		etags[r.call].Got = ""
		bodies[r.call].ETag = chain[r.body].ETag
	}
	return []history{{"the ETags' history", etags}, {"the bodies' history", bodies}}
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
