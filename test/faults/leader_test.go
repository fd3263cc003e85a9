package faults

import (
	"strings"
	"testing"
)

// leaderHistory: a leads term 1, b term 2 after it; c follows both.
func leaderHistory(t *testing.T) *History {
	h := clean(t)
	for _, o := range []LeaderObs{
		{Broker: 0, Start: s(1), End: s(1.01), Term: 1, Self: true},
		{Broker: 2, Start: s(1), End: s(1.02), Term: 1},
		{Broker: 1, Start: s(3.5), End: s(3.51), Term: 2, Self: true},
		{Broker: 2, Start: s(3.5), End: s(3.52), Term: 2},
		{Broker: 0, Start: s(2.9), End: s(3.6), Term: 1, Self: true}, // sent before term 2 was read
	} {
		h.AddLeader(o)
	}
	return h
}

func TestCheckLeadersClean(t *testing.T) {
	if r := Check(leaderHistory(t)); r.Failed() {
		t.Fatalf("clean leader history: %s\n%s", r.Summary(), r.Details(10))
	}
}

func TestCheckLeadersFails(t *testing.T) {
	for _, c := range []struct {
		name, check string
		o           LeaderObs
	}{
		{"two leaders of one term", CheckTwoLeaders, LeaderObs{Broker: 2, Start: s(1.5), End: s(1.51), Term: 1, Self: true}},
		{"term goes down", CheckTermOrder, LeaderObs{Broker: 2, Start: s(4), End: s(4.01), Term: 1}},
	} {
		h := leaderHistory(t)
		h.AddLeader(c.o)
		r := Check(h)
		if r.Count(c.check) == 0 {
			t.Errorf("%s: not caught (%s)", c.name, r.Summary())
		}
	}
}

// TestStallTimelines: a stalled at 2 s and woken at 5 s; b elected with
// term 2 at 3.51 s; a answers self for term 1 to a request queued at 4 s and
// to one sent at 5.2 s, and at 6.1 s follows b.
func TestStallTimelines(t *testing.T) {
	h := leaderHistory(t)
	h.AddStall(StallObs{Broker: 0, Term: 1, Stopped: s(2), Woken: s(5)})
	for _, o := range []LeaderObs{
		{Broker: 0, Start: s(4), End: s(5.01), Term: 1, Self: true},
		{Broker: 0, Start: s(5.2), End: s(5.21), Term: 1, Self: true},
		{Broker: 0, Start: s(6.1), End: s(6.11), Term: 2},
	} {
		h.AddLeader(o)
	}
	got := StallTimelines(h)
	want := StallTimeline{StallObs: h.Stalls[0], Successor: 1, Elected: s(3.51), FirstAnswer: s(5.01), LastSelf: s(5.21), Deposed: 2}
	if len(got) != 1 || got[0] != want {
		t.Fatalf("timelines %+v, want %+v", got, want)
	}
	if r := Check(h); r.Count(CheckTermOrder) != 2 {
		t.Fatalf("%s: %d, want one per deposed answer (%s)", CheckTermOrder, r.Count(CheckTermOrder), r.Summary())
	}
	if line := got[0].String(h); !strings.Contains(line, "2 self answers for term 1") {
		t.Fatalf("timeline line %q", line)
	}
}
