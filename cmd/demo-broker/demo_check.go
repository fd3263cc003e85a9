package main

import (
	"cmp"
	"fmt"
	"slices"

	"github.com/nodeid/nodeid/snowflake"
)

// idStream is every ID one demo broker issued under its one claim (a node ID
// at one version), as the batches NextN returned, in the order it got them.
// A batch is two numbers however many IDs it holds, so keeping every batch of
// the demo costs a few hundred kilobytes for tens of millions of IDs: memory
// is bounded by the number of NextN calls (brokers x run time / pace), not by
// the number of IDs.
//
// The issuing goroutine owns a stream while it runs; it is read only after
// that goroutine has ended.
type idStream struct {
	broker  string
	node    int64
	version int64
	ranges  []snowflake.Range
	ids     int64
}

// add records a batch.
func (s *idStream) add(r snowflake.Range) {
	s.ranges = append(s.ranges, r)
	s.ids += int64(r.N)
}

// first and last return the lowest and highest ID of a stream whose batches
// are increasing; ok is false for an empty stream.
func (s *idStream) first() (snowflake.ID, bool) {
	if len(s.ranges) == 0 {
		return 0, false
	}
	return s.ranges[0].First, true
}

func (s *idStream) last() (snowflake.ID, bool) {
	if len(s.ranges) == 0 {
		return 0, false
	}
	return s.ranges[len(s.ranges)-1].Last(), true
}

func (s *idStream) String() string {
	return fmt.Sprintf("%s (node %d, version %d)", s.broker, s.node, s.version)
}

// checkReport is the outcome of checkIDs.
type checkReport struct {
	// IDs, Batches and Streams count what was checked.
	IDs     int64
	Batches int
	Streams int
	// Repeated counts IDs found in more than one batch (an ID in three
	// batches counts twice).
	Repeated int64
	// Problems describes the first few violations, for people.
	Problems []string
}

// OK reports whether every check passed.
func (r *checkReport) OK() bool { return r.Repeated == 0 && len(r.Problems) == 0 }

// maxProblems bounds the violations a report describes.
const maxProblems = 8

func (r *checkReport) problem(format string, args ...any) {
	if len(r.Problems) < maxProblems {
		r.Problems = append(r.Problems, fmt.Sprintf(format, args...))
	}
}

// checkIDs checks that no ID in streams was issued twice, in two independent
// ways.
//
// The exact check needs no knowledge of Snowflake: a batch from NextN is an
// interval of consecutive integers [First, Last], so the IDs of all batches
// are distinct exactly when no two intervals overlap. Sorting every batch of
// every broker by First and comparing each with the highest Last before it
// finds every repeated ID, at the cost of one sort of the batches.
//
// The structural checks verify the properties that make Snowflake IDs unique
// by construction, and say which one broke:
//
//   - within a stream (one generator), every batch is non-empty, decodes to
//     the stream's node ID at one timestamp, and starts above the previous
//     batch's last ID: a generator's IDs are strictly increasing;
//   - streams of different node IDs cannot collide, since the node ID is a
//     field of every ID (checked above batch by batch);
//   - streams of the same node ID, in version order, do not overlap: the last
//     ID of version v is below the first ID of version v+1. This is the
//     handover property the lease's floor (reservedUntilMs) guarantees: a
//     successor issues only timestamps above anything its predecessor could
//     have issued, whatever the two clocks say. Two streams with the same
//     node ID and version would mean two holders of one lease.
func checkIDs(layout snowflake.Layout, streams []*idStream) checkReport {
	var rep checkReport
	type span struct {
		r snowflake.Range
		s *idStream
	}
	var spans []span
	byNode := map[int64][]*idStream{}
	for _, s := range streams {
		rep.Streams++
		byNode[s.node] = append(byNode[s.node], s)
		for i, r := range s.ranges {
			rep.Batches++
			rep.IDs += int64(max(r.N, 0))
			spans = append(spans, span{r, s})
			checkBatch(&rep, layout, s, r)
			if i > 0 && r.First <= s.ranges[i-1].Last() {
				rep.problem("%s: batch %d..%d does not start above the previous batch's last ID %d",
					s, r.First, r.Last(), s.ranges[i-1].Last())
			}
		}
	}

	for node, ss := range byNode {
		slices.SortFunc(ss, func(a, b *idStream) int { return cmp.Compare(a.version, b.version) })
		for i := 1; i < len(ss); i++ {
			prev, cur := ss[i-1], ss[i]
			if prev.version == cur.version {
				rep.problem("node %d version %d was held by two brokers at once: %s and %s", node, cur.version, prev.broker, cur.broker)
				continue
			}
			pl, ok1 := prev.last()
			cf, ok2 := cur.first()
			if ok1 && ok2 && cf <= pl {
				rep.problem("node %d: %s issued %d, not above %s's last ID %d", node, cur, cf, prev, pl)
			}
		}
	}

	slices.SortFunc(spans, func(a, b span) int { return cmp.Compare(a.r.First, b.r.First) })
	var top span // the batch with the highest Last so far
	for i, sp := range spans {
		if sp.r.N < 1 {
			continue
		}
		if i > 0 && top.r.N > 0 && sp.r.First <= top.r.Last() {
			end := min(sp.r.Last(), top.r.Last())
			n := int64(end-sp.r.First) + 1
			rep.Repeated += n
			rep.problem("%s IDs issued twice: %d..%d by %s and by %s", commas(n), sp.r.First, end, top.s, sp.s)
		}
		if top.r.N < 1 || sp.r.Last() > top.r.Last() {
			top = sp
		}
	}
	return rep
}

// checkBatch checks that r is a non-empty batch of s's node ID at one timestamp.
func checkBatch(rep *checkReport, layout snowflake.Layout, s *idStream, r snowflake.Range) {
	if r.N < 1 {
		rep.problem("%s: empty batch at %d", s, r.First)
		return
	}
	a, errA := layout.Decode(r.First)
	b, errB := layout.Decode(r.Last())
	switch {
	case errA != nil || errB != nil:
		rep.problem("%s: batch %d..%d does not decode: %v", s, r.First, r.Last(), cmp.Or(errA, errB))
	case a.NodeID != s.node || b.NodeID != s.node:
		rep.problem("%s: batch %d..%d carries node ID %d..%d", s, r.First, r.Last(), a.NodeID, b.NodeID)
	case a.TimeMs != b.TimeMs:
		rep.problem("%s: batch %d..%d spans two timestamps", s, r.First, r.Last())
	}
}
