package storetest

import (
	"strings"
	"testing"
	"time"
)

func TestNoStaleRead(t *testing.T) {
	const ms = time.Millisecond
	create := Call{Client: 0, Key: "k", Op: OpCreate, Start: 0, End: 1 * ms, Value: "a", Outcome: OutcomeDone, ETag: "Ea"}
	update := func(from, to time.Duration, ifMatch, etag string, o Outcome) Call {
		return Call{Client: 1, Key: "k", Op: OpUpdate, Start: from, End: to, IfMatch: ifMatch, Outcome: o, ETag: etag}
	}
	get := func(from, to time.Duration, etag string) Call {
		return Call{Client: 2, Key: "k", Op: OpGet, Start: from, End: to, Outcome: OutcomeDone, ETag: etag}
	}
	tests := []struct {
		name  string
		calls []Call
		want  string // "" for none
	}{
		{"fresh reads", []Call{create, update(2*ms, 3*ms, "Ea", "Eb", OutcomeDone), get(4*ms, 5*ms, "Eb"), get(2*ms, 5*ms, "Ea")}, ""},
		{"a read overlapping the write may show either", []Call{create, update(2*ms, 6*ms, "Ea", "Eb", OutcomeDone), get(4*ms, 5*ms, "Ea")}, ""},
		{"a stale read", []Call{create, update(2*ms, 3*ms, "Ea", "Eb", OutcomeDone), update(4*ms, 5*ms, "Eb", "Ec", OutcomeDone), get(6*ms, 7*ms, "Eb")}, "had completed"},
		{"an ETag nobody wrote", []Call{create, get(2*ms, 3*ms, "Ez")}, "no write produced"},
		{"two updates on one ETag", []Call{create, update(2*ms, 3*ms, "Ea", "Eb", OutcomeDone), update(2*ms, 3*ms, "Ea", "Ec", OutcomeDone)}, "two updates"},
		{"refused updates are no versions", []Call{create, update(2*ms, 3*ms, "Ea", "", OutcomeRefused), get(4*ms, 5*ms, "Ea")}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			chain, err := writeChain(tt.calls)
			if err == nil {
				err = noStaleRead(tt.calls, chain)
			}
			switch {
			case tt.want == "" && err != nil:
				t.Fatalf("noStaleRead = %v, want nil", err)
			case tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want)):
				t.Fatalf("noStaleRead = %v, want an error saying %q", err, tt.want)
			}
		})
	}
}

// TestTornReads: a read of one write's body and another's ETag is found
// when the body is the newer (a torn read, which no single version explains,
// so the history with it is not linearizable, while each of its halves is)
// and is an error when the body is the older.
func TestTornReads(t *testing.T) {
	const ms = time.Millisecond
	chain := []Call{
		{Client: 0, Key: "k", Op: OpCreate, Start: 0, End: 1 * ms, Value: "a", Outcome: OutcomeDone, ETag: "Ea"},
		{Client: 1, Key: "k", Op: OpUpdate, Start: 2 * ms, End: 6 * ms, Value: "b", IfMatch: "Ea", Outcome: OutcomeDone, ETag: "Eb"},
	}
	get := func(got, etag string) Call {
		return Call{Client: 2, Key: "k", Op: OpGet, Start: 3 * ms, End: 5 * ms, Outcome: OutcomeDone, Got: got, ETag: etag}
	}
	tests := []struct {
		name string
		read Call
		torn int    // how many torn reads are found
		want string // "" for no error
	}{
		{"one version", get("b", "Eb"), 0, ""},
		{"a 304 shows no body", get("", "Ea"), 0, ""},
		{"a newer body with an older ETag", get("b", "Ea"), 1, ""},
		{"an older body with a newer ETag", get("a", "Eb"), 0, "a later one"},
		{"a body nobody wrote", get("z", "Eb"), 0, "no write produced"},
		{"an ETag nobody wrote", get("b", "Ez"), 0, "no write produced"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			calls := append(append([]Call(nil), chain...), tt.read)
			torn, err := tornReads(calls, chain)
			switch {
			case tt.want == "" && err != nil:
				t.Fatalf("tornReads = %v, want nil", err)
			case tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want)):
				t.Fatalf("tornReads = %v, want an error saying %q", err, tt.want)
			case len(torn) != tt.torn:
				t.Fatalf("tornReads found %d torn reads (%v), want %d", len(torn), torn, tt.torn)
			case tt.want != "":
				return
			}
			if whole := CheckLinearizable(calls, time.Second); (whole == nil) == (tt.torn > 0) {
				t.Fatalf("the whole history: CheckLinearizable = %v, with %d torn reads", whole, tt.torn)
			}
			halves := tornHalves(calls, chain, torn)
			if want := 1 + min(tt.torn, 1); len(halves) != want {
				t.Fatalf("tornHalves gave %d histories, want %d", len(halves), want)
			}
			for _, h := range halves {
				if err := noStaleRead(h.calls, chain); err != nil {
					t.Errorf("%s: %v", h.name, err)
				}
				if err := CheckLinearizable(h.calls, time.Second); err != nil {
					t.Errorf("%s: %v", h.name, err)
				}
			}
		})
	}
}
