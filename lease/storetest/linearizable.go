package storetest

import (
	"cmp"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/anishathalye/porcupine"
)

// Outcome is how a store operation ended, as its caller (or a proxy) saw it.
type Outcome int

// The outcomes of an operation.
const (
	// OutcomeDone: a read answered, or a write applied.
	OutcomeDone Outcome = iota
	// OutcomeRefused: a conditional write not applied (412).
	OutcomeRefused
	// OutcomeMissing: a read of an absent object (404).
	OutcomeMissing
	// OutcomeUnknown: no answer, or one that does not say whether a write applied
	// (a timeout, a reset, a 500 after the write was sent). A read with no
	// answer is left out of a history: it constrains nothing.
	OutcomeUnknown
	// OutcomeConflict: a conditional write not applied because another was in
	// progress (S3's 409): it says nothing about the condition.
	OutcomeConflict
	// OutcomeFailed: a write not applied by the store's own account, for a
	// reason other than its condition: an error that is neither a refusal
	// nor an unknown outcome, which the lease.Store contract says means the
	// write did not happen (access denied; on etcd, a lease grant that failed
	// before the write was sent). Like a conflict it says nothing about the
	// condition; a read of its value shows the store's account false.
	OutcomeFailed
)

var outcomeNames = [...]string{OutcomeDone: "done", OutcomeRefused: "refused", OutcomeMissing: "missing", OutcomeUnknown: "unknown", OutcomeConflict: "conflict", OutcomeFailed: "failed"}

func (o Outcome) String() string {
	if int(o) < len(outcomeNames) {
		return outcomeNames[o]
	}
	return fmt.Sprintf("Outcome(%d)", int(o))
}

// MarshalText names o ("done", "refused", ...), as in a [CallLog].
func (o Outcome) MarshalText() ([]byte, error) {
	if int(o) >= len(outcomeNames) {
		return nil, fmt.Errorf("storetest: no outcome %d", int(o))
	}
	return []byte(outcomeNames[o]), nil
}

// UnmarshalText reads a name MarshalText wrote.
func (o *Outcome) UnmarshalText(b []byte) error {
	i := slices.Index(outcomeNames[:], string(b))
	if i < 0 {
		return fmt.Errorf("storetest: no outcome %q", b)
	}
	*o = Outcome(i)
	return nil
}

// Call is one operation on one object of a store, from its start to its end.
// A history of them, from any number of clients, is checked by
// [CheckLinearizable].
type Call struct {
	// Client names who made the call (a racer, a broker); for messages only.
	Client int    `json:"client"`
	Key    string `json:"key"`
	Op     Op     `json:"op"` // OpGet, OpCreate or OpUpdate
	// Start is when the request was sent, End when its answer was read, on
	// one clock for the whole history (End of an unknown write: when it was
	// given up); nanoseconds in JSON.
	Start time.Duration `json:"start"`
	End   time.Duration `json:"end"`
	// Value is what a write wrote (see [ValueOf]).
	Value string `json:"value,omitempty"`
	// IfMatch is the ETag an update was conditional on.
	IfMatch string  `json:"ifMatch,omitempty"`
	Outcome Outcome `json:"outcome"`
	// Got is the value a done read returned; empty for a conditional read
	// answered not modified (lease.ErrNotModified: no body), which
	// [CheckLinearizable] names by its ETag (an ETag that no answer in the
	// history names is a value nobody wrote).
	Got string `json:"got,omitempty"`
	// ETag is the ETag a done read returned, or the one a done write produced
	// (empty when its answer did not say).
	ETag string `json:"etag,omitempty"`
}

// ValueOf names the record in body: its writeId when it is a JSON object
// with one (every nodeid write carries a fresh one), else a digest of the
// body. Two writes of one value are one value to the checker.
func ValueOf(body []byte) string {
	var rec struct {
		WriteID string `json:"writeId"`
	}
	if json.Unmarshal(body, &rec) == nil && rec.WriteID != "" {
		return "w:" + rec.WriteID
	}
	sum := sha256.Sum256(body)
	return "b:" + hex.EncodeToString(sum[:8])
}

// ErrNotLinearizable is matched by the error of [CheckLinearizable] when a
// key's history has no linearization as a compare-and-swap register.
var ErrNotLinearizable = errors.New("storetest: history not linearizable")

// ErrUndecided is matched when the checker ran out of time on a key.
var ErrUndecided = errors.New("storetest: linearizability undecided within the time limit")

// casInput and casOutput are one Call as porcupine sees it.
type casInput struct {
	op      Op
	value   string
	ifMatch string // the value the update's ETag names; "" when unknown
	etag    string // the raw ETag, for messages
}

type casOutput struct {
	outcome Outcome
	got     string
}

// casModel is an object of a store as a compare-and-swap register: its state
// is the value of the current record, "" while the object is absent. A write
// with an unknown outcome may or may not have applied.
var casModel = porcupine.NondeterministicModel{
	Init: func() []any { return []any{""} },
	Step: func(state, input, output any) []any {
		st, in, out := state.(string), input.(casInput), output.(casOutput)
		var holds bool
		switch in.op {
		case OpGet:
			if (out.outcome == OutcomeDone && st != "" && out.got == st) || (out.outcome == OutcomeMissing && st == "") {
				return []any{st}
			}
			return nil
		case OpCreate:
			holds = st == ""
		case OpUpdate:
			holds = st != "" && in.ifMatch == st
		}
		switch {
		case out.outcome == OutcomeDone && holds:
			return []any{in.value}
		case out.outcome == OutcomeRefused && !holds:
			return []any{st}
		case out.outcome == OutcomeUnknown && holds:
			return []any{in.value, st}
		case out.outcome == OutcomeUnknown, out.outcome == OutcomeConflict, out.outcome == OutcomeFailed:
			return []any{st}
		}
		return nil
	},
	DescribeOperation: func(input, output any) string {
		in, out := input.(casInput), output.(casOutput)
		switch in.op {
		case OpGet:
			return fmt.Sprintf("get -> %v %s", out.outcome, out.got)
		case OpUpdate:
			return fmt.Sprintf("update %s if-match %s (%s) -> %v", in.value, in.etag, in.ifMatch, out.outcome)
		}
		return fmt.Sprintf("%s %s -> %v", in.op, in.value, out.outcome)
	},
}

// CheckLinearizable checks that calls, a history of operations on the objects
// of one store, is linearizable with every object a compare-and-swap register
// that starts absent (porcupine, one key at a time, each within timeout). It
// returns nil, or an error matching [ErrNotLinearizable] or [ErrUndecided]
// that names the key.
//
// An update's ETag is mapped to the value it names through the answers in the
// history (a read's ETag and value, a write's ETag and the value it wrote):
// values never repeat, so a value names a state. A write with an unknown
// outcome is resolved by what the store persisted: if a read returned its
// value, it applied before that read ended (it is checked as done, ending
// there); if none did, it may have applied or not, at any instant after its
// start. Refused writes are checked last, after the history without them
// passed: a double winner shows up in the few applied writes, and the refused
// ones, which commute with each other, would make a failing search
// exponential.
func CheckLinearizable(calls []Call, timeout time.Duration) error {
	names := map[string]string{} // ETag -> value
	for _, c := range calls {
		switch {
		case c.Op == OpGet && c.Outcome == OutcomeDone && c.Got != "":
			names[c.ETag] = c.Got
		case c.Op != OpGet && c.Outcome == OutcomeDone && c.ETag != "":
			names[c.ETag] = c.Value
		}
	}
	calls = slices.Clone(calls)
	seen := map[[2]string]time.Duration{} // {key, value} -> the first read of it ended
	for i := range calls {
		c := &calls[i]
		if c.Op != OpGet || c.Outcome != OutcomeDone {
			continue
		}
		if c.Got == "" { // a conditional read answered 304: its ETag names the value
			c.Got = cmp.Or(names[c.ETag], "etag:"+c.ETag)
		}
		if end, ok := seen[[2]string{c.Key, c.Got}]; !ok || c.End < end {
			seen[[2]string{c.Key, c.Got}] = c.End
		}
	}
	byKey := map[string][]Call{}
	for _, c := range calls {
		byKey[c.Key] = append(byKey[c.Key], c)
	}
	keys := make([]string, 0, len(byKey))
	for k := range byKey {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	model := casModel.ToModel()
	for _, key := range keys {
		ops := operations(boundingReads(byKey[key]), names, seen)
		applied := slices.DeleteFunc(slices.Clone(ops), func(o porcupine.Operation) bool {
			return o.Output.(casOutput).outcome == OutcomeRefused
		})
		for _, h := range [][]porcupine.Operation{applied, ops} {
			switch res, info := porcupine.CheckOperationsVerbose(model, h, timeout); res {
			case porcupine.Illegal:
				return fmt.Errorf("%w: key %q, %d operations: %s", ErrNotLinearizable, key, len(h), describe(model, info))
			case porcupine.Unknown:
				return fmt.Errorf("%w: key %q, %d operations, %v", ErrUndecided, key, len(h), timeout)
			}
		}
	}
	return nil
}

// boundingReads returns one key's calls with the reads of each value (and
// those that found the object missing) cut down to two: the read that ended
// first and the one that started last. The check stays exact: values never
// repeat, so the object holds a value during one stretch of a linearization
// (absent: one stretch from the start), and a read of the value linearizes
// if and only if its span meets that stretch, which holds for every read of
// the value exactly when it holds for those two. The reads left out are
// implied; checking them is what makes porcupine's search exponential when
// many reads of one value overlap (a broker's requests queued behind a
// fault and answered together).
func boundingReads(calls []Call) []Call {
	type read struct {
		outcome Outcome
		got     string
	}
	first, last := map[read]int{}, map[read]int{} // the read that ended first, the one that started last
	for i, c := range calls {
		if c.Op != OpGet {
			continue
		}
		r := read{c.Outcome, c.Got}
		if j, ok := first[r]; !ok || c.End < calls[j].End {
			first[r] = i
		}
		if j, ok := last[r]; !ok || c.Start > calls[j].Start {
			last[r] = i
		}
	}
	out := make([]Call, 0, len(calls))
	for i, c := range calls {
		r := read{c.Outcome, c.Got}
		if c.Op != OpGet || first[r] == i || last[r] == i {
			out = append(out, c)
		}
	}
	return out
}

// operations turns one key's calls into porcupine's operations.
//
// A write with an unknown outcome that no read returned stays open to the
// end of the history, and left so, each one doubles the states the search
// may visit from its start on: a few dozen (a store down while writes were
// in flight) made a history of a hundred operations undecided within a
// minute. But such a write, if it applied, set a value nobody read and
// nobody could name in a later update (no answer carried its ETag): every
// operation that observed the object's state (a read, a write that applied)
// came before it. So it opens no earlier than the last of those operations
// to start, which leaves the linearizations, and so the verdict, as they
// were.
func operations(calls []Call, names map[string]string, seen map[[2]string]time.Duration) []porcupine.Operation {
	ops := make([]porcupine.Operation, 0, len(calls))
	var open []int // the unknown writes no read returned, by index in ops
	var lastObserved int64
	for _, c := range calls {
		in := casInput{op: c.Op, value: c.Value, etag: c.IfMatch}
		if c.Op == OpUpdate {
			in.ifMatch = names[c.IfMatch]
		}
		out := casOutput{outcome: c.Outcome, got: c.Got}
		end := int64(c.End)
		if c.Op != OpGet && c.Outcome == OutcomeUnknown {
			if at, ok := seen[[2]string{c.Key, c.Value}]; ok && at >= c.Start {
				out.outcome, end = OutcomeDone, int64(at)
			} else {
				end = math.MaxInt64
				open = append(open, len(ops))
			}
		}
		if out.outcome == OutcomeDone || out.outcome == OutcomeMissing { // it observed the state
			lastObserved = max(lastObserved, int64(c.Start))
		}
		ops = append(ops, porcupine.Operation{ClientId: c.Client, Input: in, Call: int64(c.Start), Output: out, Return: end})
	}
	for _, i := range open {
		ops[i].Call = max(ops[i].Call, lastObserved)
	}
	return ops
}

// describe names the longest prefix that linearized and the operations that
// could not follow it.
func describe(model porcupine.Model, info porcupine.LinearizationInfo) string {
	parts := info.PartialLinearizationsOperations()
	if len(parts) == 0 || len(parts[0]) == 0 {
		return "no operation linearizes first"
	}
	longest := slices.MaxFunc(parts[0], func(a, b []porcupine.Operation) int { return len(a) - len(b) })
	var b strings.Builder
	b.WriteString("longest linearization:")
	for _, o := range longest {
		fmt.Fprintf(&b, " [client %d: %s]", o.ClientId, model.DescribeOperation(o.Input, o.Output))
	}
	return b.String()
}
