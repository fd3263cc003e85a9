package faults

import (
	"fmt"
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

// StallObs is a leader stalled (KindStallLeader): paused while its election
// renewal hangs on a black-holed S3.
type StallObs struct {
	Broker         int
	Term           int64         // the term it answered self for when picked
	Stopped, Woken time.Duration // SIGSTOP sent, SIGCONT sent
}

// AddStall records a stalled leader.
func (h *History) AddStall(s StallObs) {
	h.mu.Lock()
	h.Stalls = append(h.Stalls, s)
	h.mu.Unlock()
}

// StallTimeline is what the /leader answers show of one stall: when a
// successor was elected, when the stalled leader answered again, and how
// often it answered self for its old term to requests sent after the
// successor had answered self (each is a CheckTermOrder violation).
type StallTimeline struct {
	StallObs
	Successor   int           // the broker that answered self for a higher term first; -1 if none
	Elected     time.Duration // the end of its first such answer
	FirstAnswer time.Duration // the end of the stalled broker's first answer after Woken; 0 if none
	LastSelf    time.Duration // the end of its last self answer for Term; 0 if none
	Deposed     int           // its self answers for Term sent after Elected
}

// StallTimelines returns the timeline of every stall of h.
func StallTimelines(h *History) []StallTimeline {
	var out []StallTimeline
	for _, s := range h.Stalls {
		t := StallTimeline{StallObs: s, Successor: -1}
		for _, o := range h.Leaders {
			if o.Self && o.Broker != s.Broker && o.Term > s.Term && o.End >= s.Stopped && (t.Successor < 0 || o.End < t.Elected) {
				t.Successor, t.Elected = o.Broker, o.End
			}
		}
		for _, o := range h.Leaders {
			if o.Broker != s.Broker {
				continue
			}
			if o.End >= s.Woken && (t.FirstAnswer == 0 || o.End < t.FirstAnswer) {
				t.FirstAnswer = o.End
			}
			if o.Self && o.Term == s.Term {
				t.LastSelf = max(t.LastSelf, o.End)
				if t.Successor >= 0 && o.Start > t.Elected {
					t.Deposed++
				}
			}
		}
		out = append(out, t)
	}
	return out
}

func (t StallTimeline) String(h *History) string {
	succ := "no successor answered self"
	if t.Successor >= 0 {
		succ = fmt.Sprintf("successor %s answered self first at %s (%s into the stall)",
			h.name(t.Successor), fmtDur(t.Elected), (t.Elected - t.Stopped).Round(time.Millisecond))
	}
	return fmt.Sprintf("leader %s (term %d) stalled at %s, woken at %s; %s; its first answer after waking at %s, its last self answer for term %d at %s; %d self answers for term %d to requests sent after the successor's",
		h.name(t.Broker), t.Term, fmtDur(t.Stopped), fmtDur(t.Woken), succ, fmtDur(t.FirstAnswer), t.Term, fmtDur(t.LastSelf), t.Deposed, t.Term)
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
	r.exercise(CheckTwoLeaders, len(self))
	r.exercise(CheckTermOrder, len(self)-1) // successions
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
