package faults

import (
	"sort"
	"time"
)

// The checks of the election every broker campaigns for (--elect).
const (
	CheckTwoLeaders  = "two-leaders-one-term" // two brokers answered /leader self: true for one term
	CheckTermOrder   = "term-regressed"       // a /leader answer gave a lower term than one read before it was sent
	electionName     = "jobs"                 // the election the brokers campaign for
	leaderPollEveryN = 4                      // /leader is polled on every 4th /health tick
)

// LeaderObs is one 200 answer of /leader.
type LeaderObs struct {
	Broker     int
	Start, End time.Duration // request sent, answer read
	Term       int64
	Self       bool
}

// AddLeader records a /leader answer.
func (h *History) AddLeader(o LeaderObs) {
	h.mu.Lock()
	h.Leaders = append(h.Leaders, o)
	h.mu.Unlock()
}

// checkLeaders: no two brokers answer self for one term, and terms only go
// up: an answer sent after another was read gives a term at least as high
// (a leader answers from its fence a term already in the store; the others
// read the store, whose version never goes down).
func checkLeaders(h *History, r *Report) {
	self := map[int64]int{}
	for _, o := range h.Leaders {
		if !o.Self {
			continue
		}
		if b, ok := self[o.Term]; ok && b != o.Broker {
			r.add(CheckTwoLeaders, "term %d: %s and %s both answered self", o.Term, h.name(b), h.name(o.Broker))
		}
		self[o.Term] = o.Broker
	}
	byEnd := append([]LeaderObs(nil), h.Leaders...)
	sort.Slice(byEnd, func(i, j int) bool { return byEnd[i].End < byEnd[j].End })
	byStart := append([]LeaderObs(nil), h.Leaders...)
	sort.Slice(byStart, func(i, j int) bool { return byStart[i].Start < byStart[j].Start })
	var best LeaderObs
	next := 0
	for _, o := range byStart {
		for next < len(byEnd) && byEnd[next].End < o.Start {
			if byEnd[next].Term > best.Term {
				best = byEnd[next]
			}
			next++
		}
		if o.Term < best.Term {
			r.add(CheckTermOrder, "%s answered term %d at %s, after %s answered term %d at %s",
				h.name(o.Broker), o.Term, fmtDur(o.Start), h.name(best.Broker), best.Term, fmtDur(best.End))
		}
	}
}
