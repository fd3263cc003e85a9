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
			err := noStaleRead(tt.calls)
			switch {
			case tt.want == "" && err != nil:
				t.Fatalf("noStaleRead = %v, want nil", err)
			case tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want)):
				t.Fatalf("noStaleRead = %v, want an error saying %q", err, tt.want)
			}
		})
	}
}
