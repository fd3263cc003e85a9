package storetest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nodeid/nodeid/lease"
)

// tee is a Sink that puts every call into two sinks on a's clock.
type tee struct{ a, b Sink }

func (t tee) Now() time.Duration { return t.a.Now() }
func (t tee) Begin(c Call) func(Call) {
	ea, eb := t.a.Begin(c), t.b.Begin(c)
	return func(c Call) { ea(c); eb(c) }
}

// failing answers Update with an unknown outcome, Create with an error
// that says the write did not happen, and Get with no answer.
type failing struct{ lease.Store }

var errBroken = errors.New("connection reset")

func (failing) Update(_ context.Context, key string, _ []byte, _ string) (lease.Meta, error) {
	return lease.Meta{}, &lease.UnknownOutcomeError{Op: "update", Key: key, Err: errBroken}
}
func (failing) Create(context.Context, string, []byte) (lease.Meta, error) {
	return lease.Meta{}, errors.New("access denied")
}
func (failing) Get(context.Context, string) ([]byte, lease.Meta, error) {
	return nil, lease.Meta{}, errBroken
}

// ticks is a clock that advances a millisecond at each reading.
func ticks() func() time.Duration {
	var mu sync.Mutex
	var t time.Duration
	return func() time.Duration {
		mu.Lock()
		defer mu.Unlock()
		t += time.Millisecond
		return t
	}
}

// TestCallLogReadsBack: the lines a CallLog writes read back as the calls a
// Recorder keeps of the same calls, every outcome; a write that never ended
// reads as unknown, a read that never ended is left out; a last line cut
// short is ignored, a bad line elsewhere is an error.
func TestCallLogReadsBack(t *testing.T) {
	ctx := context.Background()
	var buf bytes.Buffer
	rec := NewRecorderOn(ticks())
	log := NewCallLog(&buf, rec.Now)
	sink := tee{rec, log}
	s := NewMemStore()
	w := Record(s, 1, sink)
	m, err := w.Create(ctx, "k", []byte(`{"writeId":"a"}`))
	if err != nil {
		t.Fatal(err)
	}
	_, _ = w.Create(ctx, "k", []byte(`{"writeId":"b"}`))                  // refused
	m2, _ := w.Update(ctx, "k", []byte(`{"writeId":"c"}`), m.ETag)        // done
	_, _ = w.Update(ctx, "k", []byte(`{"writeId":"d"}`), m.ETag)          // refused
	_, _, _ = w.Get(ctx, "k")                                             // done
	_, _, _ = w.Get(ctx, "none")                                          // missing
	_, _ = Record(failing{s}, 2, sink).Update(ctx, "k", []byte("e"), "x") // unknown
	_, _ = Record(failing{s}, 2, sink).Create(ctx, "k2", []byte("e"))     // failed
	_, _, _ = Record(failing{s}, 2, sink).Get(ctx, "k")                   // no answer
	if err := log.Err(); err != nil {
		t.Fatal(err)
	}
	want := rec.Calls()
	outcomes := make([]Outcome, len(want))
	for i, c := range want {
		outcomes[i] = c.Outcome
	}
	if !slices.Equal(outcomes, []Outcome{OutcomeDone, OutcomeRefused, OutcomeDone, OutcomeRefused, OutcomeDone, OutcomeMissing, OutcomeUnknown, OutcomeFailed}) ||
		want[2].ETag != m2.ETag || want[4].Got != "w:c" {
		t.Fatalf("the recorder's history is not the calls made: %+v", want)
	}
	// In flight when the process died: a write (Begin alone), a read.
	pending := writeCall(3, "k", OpUpdate, []byte(`{"writeId":"f"}`), m2.ETag, 50*time.Millisecond, 50*time.Millisecond, lease.Meta{}, errNoAnswer)
	log.Begin(pending)
	log.Begin(Call{Client: 3, Key: "k", Op: OpGet, Start: 51 * time.Millisecond, Outcome: OutcomeUnknown})
	want = append(want, pending)
	if pending.Outcome != OutcomeUnknown {
		t.Fatalf("a write begun is %v, want unknown", pending.Outcome)
	}

	got, err := ReadCallLog(bytes.NewReader(buf.Bytes()))
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("read back:\n%+v\nwant\n%+v\nlog:\n%s", got, want, buf.String())
	}
	if !strings.Contains(buf.String(), `"outcome":"refused"`) {
		t.Fatalf("the log names no outcome:\n%s", buf.String())
	}

	cut := append(bytes.Clone(buf.Bytes()), `{"seq":99,"key":"k","op":"upd`...)
	if got, err := ReadCallLog(bytes.NewReader(cut)); err != nil || !reflect.DeepEqual(got, want) {
		t.Fatalf("a log whose last line was cut short: %v (%d calls), want the calls before it", err, len(got))
	}
	bad := append([]byte("{\"seq\":1,\"key\n"), buf.Bytes()...)
	if _, err := ReadCallLog(bytes.NewReader(bad)); err == nil || !strings.Contains(err.Error(), "line 1") {
		t.Fatalf("a bad first line: %v, want an error naming line 1", err)
	}
}

// TestCallLogHistoryCatchesTwoWinners: racers on a store that lets two of
// them win, each recording into a log of its own as brokers do
// (--debug-store-history), make a history the check fails when the logs are
// read back; on a correct store it passes.
func TestCallLogHistoryCatchesTwoWinners(t *testing.T) {
	now, err := MonotonicClock()
	if err != nil {
		t.Skipf("no shared monotonic clock here: %v", err)
	}
	for _, racy := range []bool{false, true} {
		t.Run(fmt.Sprintf("racy=%v", racy), func(t *testing.T) {
			var s lease.Store = NewMemStore()
			if racy {
				s = &twoWinners{Store: s, second: map[string]bool{}}
			}
			ctx := context.Background()
			bufs := make([]bytes.Buffer, Racers+1)
			logs := make([]*CallLog, Racers+1)
			for i := range logs {
				logs[i] = NewCallLog(&bufs[i], now)
			}
			base, err := Record(s, Racers, logs[Racers]).Create(ctx, "u.json", []byte("base"))
			if err != nil {
				t.Fatal(err)
			}
			winners, _ := race(t, Racers, func(i int) (lease.Meta, error) {
				return Record(s, i, logs[i]).Update(ctx, "u.json", racerBody(i), base.ETag)
			})
			if _, _, err := Record(s, Racers, logs[Racers]).Get(ctx, "u.json"); err != nil {
				t.Fatal(err)
			}
			rec := NewRecorderOn(now)
			for i := range bufs {
				calls, err := ReadCallLog(&bufs[i])
				if err != nil {
					t.Fatal(err)
				}
				for _, c := range calls {
					rec.Add(c)
				}
			}
			wantRaceVerdict(t, racy, winners, rec.Check(linearizeTimeout))
		})
	}
}

// TestMonotonicClock: the shared clock reads, and never goes back.
func TestMonotonicClock(t *testing.T) {
	now, err := MonotonicClock()
	if errors.Is(err, errors.ErrUnsupported) {
		t.Skip(err)
	}
	if err != nil {
		t.Fatal(err)
	}
	prev := now()
	for range 1000 {
		d := now()
		if d < prev || d <= 0 {
			t.Fatalf("reading %v after %v", d, prev)
		}
		prev = d
	}
}
