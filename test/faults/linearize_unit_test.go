package faults

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nodeid/nodeid/lease"
	"github.com/nodeid/nodeid/lease/storetest"
	"github.com/nodeid/nodeid/s3store"
	"github.com/nodeid/nodeid/s3store/s3fake"
)

// recordedProxy starts gofakes3 behind wrap (nil: none) behind a recording
// Proxy, and returns the proxy, its history and a store through it.
func recordedProxy(t *testing.T, wrap func(http.Handler) http.Handler) (*Proxy, *storetest.Recorder, *s3store.Store) {
	t.Helper()
	rec := storetest.NewRecorder()
	root := "/" + s3fake.DefaultBucket + "/t/"
	p, st := proxiedWith(t, wrap, func(p *Proxy) {
		p.Record(rec, 1, func(path string) (string, bool) { return strings.CutPrefix(path, root) })
	})
	return p, rec, st
}

// TestProxyRecordsHistory: the proxy records what the server did, an
// answer it dropped included, and the history checks out.
func TestProxyRecordsHistory(t *testing.T) {
	p, rec, st := recordedProxy(t, nil)
	ctx := ctxT(t, 10*time.Second)
	m, err := st.Create(ctx, "k", []byte(`{"writeId":"a"}`))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := st.Update(ctx, "k", []byte(`{"writeId":"b"}`), m.ETag); err != nil {
		t.Fatal(err)
	}
	if _, err := st.Update(ctx, "k", []byte(`{"writeId":"c"}`), m.ETag); !errors.Is(err, lease.ErrPreconditionFailed) {
		t.Fatalf("stale update: %v, want ErrPreconditionFailed", err)
	}
	_, cur, err := st.Get(ctx, "k")
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Inject(Fault{Action: DropAfterForward, Ops: []Op{OpUpdate}}); err != nil {
		t.Fatal(err)
	}
	if _, err := st.Update(ctx, "k", []byte(`{"writeId":"d"}`), cur.ETag); err == nil {
		t.Fatal("an update whose answer was dropped succeeded")
	}
	_ = p.Heal()
	if got := body(t, st, "k"); got != `{"writeId":"d"}` {
		t.Fatalf("object = %s, want the dropped update's", got)
	}
	var outcomes []string
	for _, c := range rec.Calls() {
		outcomes = append(outcomes, string(c.Op)+" "+c.Value+c.Got+" "+c.Outcome.String())
	}
	want := "create w:a done|update w:b done|update w:c refused|get w:b done|update w:d done|get w:d done"
	if got := strings.Join(outcomes, "|"); got != want {
		t.Fatalf("history:\n got  %s\n want %s", got, want)
	}
	if err := rec.Check(10 * time.Second); err != nil {
		t.Fatal(err)
	}
}

// TestProxyRecordsNothingTheServerNeverGot: a write the proxy could not
// send (the server refuses connections) is not in the history: it cannot
// have landed, and as an unknown outcome it would only widen the check's
// search.
func TestProxyRecordsNothingTheServerNeverGot(t *testing.T) {
	backend := httptest.NewServer(http.NotFoundHandler())
	target := backend.URL
	backend.Close() // nothing listens there any more
	p, err := NewProxy(target, 1)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = p.Close() })
	rec := storetest.NewRecorder()
	p.Record(rec, 1, func(path string) (string, bool) { return strings.CutPrefix(path, "/"+s3fake.DefaultBucket+"/t/") })
	req, err := http.NewRequest(http.MethodPut, p.URL()+"/"+s3fake.DefaultBucket+"/t/k", strings.NewReader(`{"writeId":"a"}`))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("If-Match", `"e1"`)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	_ = resp.Body.Close()
	if resp.StatusCode != http.StatusBadGateway {
		t.Fatalf("status %d, want 502 from the proxy", resp.StatusCode)
	}
	if n := p.Counts()["PUT-update upstream-error"]; n != 1 {
		t.Fatalf("counts %v: the update did not reach the proxy's forward", p.Counts())
	}
	if calls := rec.Calls(); len(calls) != 0 {
		t.Fatalf("history %+v, want nothing: the server never got the write", calls)
	}
}

// TestProxyHistoryCatchesTwoWinners: behind the proxy, a server that drops
// If-Match lets two updates on one ETag win, and the recorded history is
// not linearizable.
func TestProxyHistoryCatchesTwoWinners(t *testing.T) {
	ignoreIfMatch := func(h http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			r.Header.Del("If-Match")
			h.ServeHTTP(w, r)
		})
	}
	_, rec, st := recordedProxy(t, ignoreIfMatch)
	ctx := ctxT(t, 10*time.Second)
	m, err := st.Create(ctx, "k", []byte(`{"writeId":"a"}`))
	if err != nil {
		t.Fatal(err)
	}
	for _, w := range []string{"b", "c"} {
		if _, err := st.Update(ctx, "k", []byte(`{"writeId":"`+w+`"}`), m.ETag); err != nil {
			t.Fatalf("update %s: %v", w, err)
		}
	}
	if err := rec.Check(10 * time.Second); !errors.Is(err, storetest.ErrNotLinearizable) {
		t.Fatalf("Check = %v, want ErrNotLinearizable", err)
	}
}

var flagHistory = flag.String("history", "", "TestReplayStoreHistory: a run folder's store-history.json to check again (a failing run keeps its folder)")

// TestReplayStoreHistory checks a recorded store history again, with
// -history FILE (for a run whose linearizable check failed); without it,
// it has nothing to do.
func TestReplayStoreHistory(t *testing.T) {
	if *flagHistory == "" {
		t.Skip("no -history file")
	}
	b, err := os.ReadFile(*flagHistory)
	if err != nil {
		t.Fatal(err)
	}
	var calls []storetest.Call
	if err := json.Unmarshal(b, &calls); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	err = storetest.CheckLinearizable(calls, LinearizeTimeout)
	t.Logf("%d calls checked in %v: %v", len(calls), time.Since(start), err)
	if err != nil {
		t.Fatal(err)
	}
}

// TestBrokerHistoryCatchesTwoWinners: the etcd runs' path. Two brokers
// record their store calls in files of their own (as --debug-store-history
// does: storetest.Record into a storetest.CallLog on the host's monotonic
// clock), the test its own reads; AddBrokerHistory reads the files back (the
// last line of one cut short, as a kill leaves it) and CheckHistory checks
// them. On a store that ignores If-Match both updates on one ETag win and
// the check fails; on a correct one the second is refused and it passes.
func TestBrokerHistoryCatchesTwoWinners(t *testing.T) {
	now, err := storetest.MonotonicClock()
	if err != nil {
		t.Fatal(err)
	}
	for _, racy := range []bool{false, true} {
		t.Run(fmt.Sprintf("ignore-if-match=%v", racy), func(t *testing.T) {
			var opts []storetest.MemOption
			if racy {
				opts = append(opts, storetest.IgnoreIfMatch())
			}
			st := storetest.NewMemStore(opts...)
			dir := t.TempDir()
			broker := func(name string) (lease.Store, *os.File) {
				f, err := os.Create(filepath.Join(dir, name))
				if err != nil {
					t.Fatal(err)
				}
				return storetest.Record(st, 1, storetest.NewCallLog(f, now)), f
			}
			b1, f1 := broker("b1")
			b2, f2 := broker("b2")
			rec := storetest.NewRecorderOn(now)
			ctx := ctxT(t, 10*time.Second)
			m, err := b1.Create(ctx, "k", []byte(`{"writeId":"a"}`))
			if err != nil {
				t.Fatal(err)
			}
			if _, err := b1.Update(ctx, "k", []byte(`{"writeId":"b"}`), m.ETag); err != nil {
				t.Fatal(err)
			}
			_, err = b2.Update(ctx, "k", []byte(`{"writeId":"c"}`), m.ETag)
			if racy != (err == nil) {
				t.Fatalf("the second update on one ETag: %v", err)
			}
			if _, _, err := rec.Wrap(0, st).Get(ctx, "k"); err != nil {
				t.Fatal(err)
			}
			if _, err := f2.WriteString(`{"seq":9,"key":"k","op":"upd`); err != nil { // killed mid-line
				t.Fatal(err)
			}
			for i, f := range []*os.File{f1, f2} {
				_ = f.Close()
				n, err := AddBrokerHistory(rec, 1+i, f.Name())
				if err != nil || n != 2-i {
					t.Fatalf("AddBrokerHistory(%s) = %d, %v; want %d calls", f.Name(), n, err, 2-i)
				}
			}
			if n, err := AddBrokerHistory(rec, 3, filepath.Join(dir, "never-started")); n != 0 || err != nil {
				t.Fatalf("a broker with no file: %d, %v; want nothing", n, err)
			}
			rep := &Report{}
			CheckHistory(rep, rec, "by the brokers")
			if got := rep.Count(CheckLinearizable); got != map[bool]int{false: 0, true: 1}[racy] {
				t.Fatalf("%d violations of %s: %+v", got, CheckLinearizable, rep.Violations)
			}
			if len(rep.Notes) != 1 || !strings.Contains(rep.Notes[0], "4 store operations (3 by the brokers, 1 the test's reads)") {
				t.Fatalf("notes %q", rep.Notes)
			}
		})
	}
}

// TestProxyRecordsNotModified: read mode's conditional reads. A GET with
// If-None-Match on the current ETag, answered 304, is recorded as a read of
// the value that ETag names, and the history checks out; a server that
// answers 304 on an ETag the object no longer has (a stale cache) gives a
// history that is not linearizable.
func TestProxyRecordsNotModified(t *testing.T) {
	t.Run("current", func(t *testing.T) {
		_, rec, st := recordedProxy(t, nil)
		ctx := ctxT(t, 10*time.Second)
		m, err := st.Create(ctx, "k", []byte(`{"writeId":"a"}`))
		if err != nil {
			t.Fatal(err)
		}
		if _, got, err := lease.GetIfChanged(ctx, st, "k", m.ETag); !errors.Is(err, lease.ErrNotModified) || got.ETag != m.ETag {
			t.Fatalf("GetIfChanged on the current ETag = %+v, %v; want ErrNotModified", got, err)
		}
		m2, err := st.Update(ctx, "k", []byte(`{"writeId":"b"}`), m.ETag)
		if err != nil {
			t.Fatal(err)
		}
		if b, _, err := lease.GetIfChanged(ctx, st, "k", m.ETag); err != nil || string(b) != `{"writeId":"b"}` {
			t.Fatalf("GetIfChanged on the old ETag = %q, %v; want the new body", b, err)
		}
		var outcomes []string
		for _, c := range rec.Calls() {
			outcomes = append(outcomes, string(c.Op)+" "+c.Value+c.Got+" "+c.Outcome.String())
		}
		want := "create w:a done|get  done|update w:b done|get w:b done"
		if got := strings.Join(outcomes, "|"); got != want {
			t.Fatalf("history:\n got  %s\n want %s", got, want)
		}
		if c := rec.Calls()[1]; c.ETag != m.ETag {
			t.Fatalf("the 304 is recorded with ETag %q, want %q (the one it asserts)", c.ETag, m.ETag)
		}
		if c := rec.Calls()[3]; c.ETag != m2.ETag {
			t.Fatalf("the 200 is recorded with ETag %q, want %q", c.ETag, m2.ETag)
		}
		if err := rec.Check(10 * time.Second); err != nil {
			t.Fatal(err)
		}
	})
	t.Run("stale", func(t *testing.T) {
		// A server that answers every conditional GET 304, with the
		// ETag asked for: a cache that never looks.
		stale := func(h http.Handler) http.Handler {
			return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if inm := r.Header.Get("If-None-Match"); r.Method == http.MethodGet && inm != "" {
					w.Header().Set("ETag", inm)
					w.WriteHeader(http.StatusNotModified)
					return
				}
				h.ServeHTTP(w, r)
			})
		}
		_, rec, st := recordedProxy(t, stale)
		ctx := ctxT(t, 10*time.Second)
		m, err := st.Create(ctx, "k", []byte(`{"writeId":"a"}`))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := st.Update(ctx, "k", []byte(`{"writeId":"b"}`), m.ETag); err != nil {
			t.Fatal(err)
		}
		if _, _, err := lease.GetIfChanged(ctx, st, "k", m.ETag); !errors.Is(err, lease.ErrNotModified) {
			t.Fatalf("GetIfChanged on the old ETag = %v; want the stale server's 304", err)
		}
		if err := rec.Check(10 * time.Second); !errors.Is(err, storetest.ErrNotLinearizable) {
			t.Fatalf("Check = %v, want ErrNotLinearizable: a 304 on an ETag the object no longer had", err)
		}
	})
}

// TestProxyObservesWrites: the proxy reports each write the server applied,
// an answer it then dropped included, and nothing for a refused one.
func TestProxyObservesWrites(t *testing.T) {
	p, st := proxied(t)
	var got []LandedWrite
	p.ObserveWrites(func(w LandedWrite) { got = append(got, w) })
	ctx := ctxT(t, 10*time.Second)
	m, err := st.Create(ctx, "k", []byte(`{"writeId":"a"}`))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := st.Update(ctx, "k", []byte(`{"writeId":"x"}`), `"nope"`); !errors.Is(err, lease.ErrPreconditionFailed) {
		t.Fatalf("stale update: %v", err)
	}
	_ = p.Inject(Fault{Action: DropAfterForward, Ops: []Op{OpUpdate}})
	if _, err := st.Update(ctx, "k", []byte(`{"writeId":"b"}`), m.ETag); err == nil {
		t.Fatal("an update whose answer was dropped succeeded")
	}
	_ = p.Heal()
	if len(got) != 2 || got[0].IfMatch != "" || got[0].ETag != m.ETag || got[1].IfMatch != m.ETag || string(got[1].Body) != `{"writeId":"b"}` {
		t.Fatalf("observed %+v; want the create and the update whose answer was dropped", got)
	}
}

// TestCountChallenges classifies the writes of read mode: a challenge, its
// confirm, the holder's answer on the confirm, a confirm taken over with
// the next version, and a release on a challenge.
func TestCountChallenges(t *testing.T) {
	rec := func(holder string, version int, challenge string) []byte {
		s := fmt.Sprintf(`{"holder":%q,"version":%d`, holder, version)
		if challenge != "" {
			s += `,"challenge":` + challenge
		}
		return []byte(s + "}")
	}
	ch, cf := `{"of":"1","by":"b"}`, `{"of":"1","by":"b","confirmed":true}`
	ws := []LandedWrite{
		{Key: "/b/0.json", ETag: `"h1"`, Body: rec("a", 1, "")},
		{Key: "/b/0.json", IfMatch: `"h1"`, ETag: `"c1"`, Body: rec("a", 1, ch)},
		{Key: "/b/0.json", IfMatch: `"c1"`, ETag: `"f1"`, Body: rec("a", 1, cf)},
		{Key: "/b/0.json", IfMatch: `"f1"`, ETag: `"h2"`, Body: rec("a", 1, "")}, // the answer
		{Key: "/b/0.json", IfMatch: `"h2"`, ETag: `"c2"`, Body: rec("a", 1, ch)},
		{Key: "/b/0.json", IfMatch: `"c2"`, ETag: `"f2"`, Body: rec("a", 1, cf)},
		{Key: "/b/0.json", IfMatch: `"f2"`, ETag: `"h3"`, Body: rec("b", 2, "")}, // the take
		{Key: "/b/1.json", ETag: `"k1"`, Body: rec("c", 4, "")},
		{Key: "/b/1.json", IfMatch: `"k1"`, ETag: `"k2"`, Body: rec("c", 4, ch)},
		{Key: "/b/1.json", IfMatch: `"k2"`, ETag: `"k3"`, Body: rec("", 4, "")},  // a release on the challenge
		{Key: "/b/1.json", IfMatch: `"f1"`, ETag: `"k4"`, Body: rec("c", 4, "")}, // an ETag of another key: nothing
	}
	want := ChallengeCounts{Challenges: 3, Confirms: 2, Answers: 1, Takes: 1, Other: 1}
	if got := CountChallenges(ws); got != want {
		t.Fatalf("CountChallenges = %v, want %v", got, want)
	}
}
