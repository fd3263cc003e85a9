package faults

import "testing"

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
