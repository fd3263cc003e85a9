package faults

import (
	"cmp"
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/nodeid/nodeid/snowflake"
)

// The checks of [Check], as named in violations.
const (
	CheckDuplicate      = "duplicate-id"             // an ID issued twice
	CheckNodeBits       = "id-node-mismatch"         // an ID whose node bits differ from the answer's nodeId
	CheckSharedVersion  = "two-holders-one-version"  // one (node ID, version) held by two brokers
	CheckVersionOrder   = "version-regressed"        // a lease object's version went down, or changed hands without +1
	CheckTimestampOrder = "timestamp-below-floor"    // an ID under a newer version not above every ID under an older one
	CheckAfterUnhealthy = "ids-after-503"            // IDs for a request sent after the broker's /health answered 503
	CheckHealthFlap     = "health-200-after-503"     // /health 200 again after it answered 503 while held
	CheckSuperseded     = "superseded-holder-served" // IDs or /health 200 for a request sent after a successor (or the release) was seen
	CheckExitCode       = "exit-code"                // an exit code that contradicts what happened to the broker
	CheckRelease        = "not-released"             // a broker stopped by SIGTERM left its lease held
	CheckCorrupt        = "corrupt-object"           // an object in the bucket that does not decode
)

// Checks lists every check of [Check], in the order of docs/evidence/faults.md.
var Checks = []string{CheckDuplicate, CheckNodeBits, CheckSharedVersion, CheckVersionOrder, CheckTimestampOrder,
	CheckAfterUnhealthy, CheckHealthFlap, CheckSuperseded, CheckExitCode, CheckRelease, CheckTwoLeaders, CheckTermOrder,
	CheckCorrupt, CheckLinearizable}

// Violation is one broken rule.
type Violation struct {
	Check string
	Msg   string
}

// Report is the result of [Check].
type Report struct {
	IDs        int64 // IDs checked
	Batches    int   // /ids answers
	Duplicates int64 // IDs issued more than once (each extra issue counts)
	Violations []Violation
	Notes      []string // things worth knowing that break no rule
	// Exercised counts, per check, the occasions on which the history put
	// it to the test (its premise held, so it could have failed): a
	// handover for the floor, a broker fenced while its clients asked, a
	// superseded holder, an exit judged. Keys are check names, or a check
	// and a case ("exit-code/fenced-then-terminated"). See Coverage.
	Exercised map[string]int
}

// exercise counts n occasions on which check was put to the test.
func (r *Report) exercise(check string, n int) {
	if n <= 0 {
		return
	}
	if r.Exercised == nil {
		r.Exercised = map[string]int{}
	}
	r.Exercised[check] += n
}

// Count returns the number of violations of check.
func (r *Report) Count(check string) int {
	n := 0
	for _, v := range r.Violations {
		if v.Check == check {
			n++
		}
	}
	return n
}

// Failed reports whether any rule was broken.
func (r *Report) Failed() bool { return len(r.Violations) > 0 }

func (r *Report) add(check, format string, args ...any) {
	r.Violations = append(r.Violations, Violation{Check: check, Msg: fmt.Sprintf(format, args...)})
}

// Summary returns the counts of violations by check, "none" when there are none.
func (r *Report) Summary() string {
	by := map[string]int{}
	for _, v := range r.Violations {
		by[v.Check]++
	}
	if len(by) == 0 {
		return "none"
	}
	return formatCounts(by)
}

// Details returns up to max violations of each check, one a line.
func (r *Report) Details(max int) string {
	var b strings.Builder
	shown := map[string]int{}
	for _, v := range r.Violations {
		shown[v.Check]++
		switch n := shown[v.Check]; {
		case n <= max:
			fmt.Fprintf(&b, "VIOLATION %s: %s\n", v.Check, v.Msg)
		case n == max+1:
			fmt.Fprintf(&b, "VIOLATION %s: ... (%d in all)\n", v.Check, r.Count(v.Check))
		}
	}
	return b.String()
}

// formatCounts formats a map as "k1=n1 k2=n2", sorted by key.
func formatCounts(m map[string]int) string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = fmt.Sprintf("%s=%d", k, m[k])
	}
	return strings.Join(parts, " ")
}

// claim is a (node ID, version).
type claim struct {
	node    int
	version int64
}

func (c claim) String() string { return fmt.Sprintf("node %d v%d", c.node, c.version) }

// Check checks a history against the safety rules of docs/evidence/design.md (sections 3
// to 5) and the broker's documented behaviour (docs/nodeid-broker.md):
//
//   - no ID is issued twice, and every ID carries its answer's node ID;
//   - one (node ID, version) has one holder; per node ID, the versions read
//     from the bucket never go down, and the holder changes only with the
//     version (or to "" at a release);
//   - per node ID, every ID issued under a version is above every ID issued
//     under an older one (the floor);
//   - no broker returns IDs or /health 200 for a request sent after it was
//     fenced for good (its /health answered 503 for the fence, or, with a
//     loss grace, for stopping or a loss; its log said it stopped or lost),
//     nor, with a loss grace, IDs after a 503 that no recovery followed;
//   - no broker returns IDs or /health 200 for a request sent after its node
//     ID was seen released, or held with a higher version (the fence);
//   - a broker whose loss was certain (taken over, or declared before its
//     SIGTERM) exits 3; one stopped by SIGTERM exits 0 with its lease read
//     free with its version (or already taken over), or 3 if its release
//     did not land;
//   - every object in the bucket decodes.
//
// Each rule is stated in terms of the evidence that makes it certain
// (evidence.go, docs/evidence/faults.md): none fires on a correct run.
//
// It does not modify h.
func Check(h *History) *Report {
	h.mu.Lock()
	defer h.mu.Unlock()
	r := &Report{Batches: len(h.IDs)}
	checkIDs(h, r)
	claims := brokerClaims(h, r)
	checkVersions(h, r)
	checkTimestamps(h, r)
	fence := checkHealth(h, r)
	checkSuperseded(h, r, claims)
	checkExits(h, r, claims, fence)
	checkReleases(h, r, claims)
	checkLeaders(h, r)
	r.exercise(CheckCorrupt, len(h.Leases)+h.FinalObjects)
	for _, c := range h.Corrupt {
		r.add(CheckCorrupt, "%s", c)
	}
	return r
}

// describeID decodes an ID for a message.
func describeID(id int64) string {
	p, err := snowflake.Decode(snowflake.ID(id))
	if err != nil {
		return fmt.Sprintf("%d (%v)", id, err)
	}
	return fmt.Sprintf("%d (node %d, %s, seq %d)", id, p.NodeID, p.Time().UTC().Format("15:04:05.000"), p.Seq)
}

func (h *History) name(i int) string {
	if i < 0 || i >= len(h.Brokers) {
		return fmt.Sprintf("broker#%d", i)
	}
	return h.Brokers[i].Name
}

func (h *History) describeBatch(b *IDBatch) string {
	return fmt.Sprintf("%s (node %d v%d, request %s-%s)", h.name(b.Broker), b.Node, b.Version, fmtDur(b.Start), fmtDur(b.End))
}

func fmtDur(d time.Duration) string { return fmt.Sprintf("%.3fs", d.Seconds()) }

// checkIDs finds IDs issued twice and IDs with the wrong node bits.
func checkIDs(h *History, r *Report) {
	type span struct {
		first, end int64 // [first, end)
		batch      int
	}
	var spans []span
	for i := range h.IDs {
		b := &h.IDs[i]
		for _, run := range b.Runs {
			r.IDs += int64(run.N)
			last := run.First + int64(run.N) - 1
			for _, id := range []int64{run.First, last} {
				if n := snowflake.ID(id).NodeID(); n != int64(b.Node) {
					r.add(CheckNodeBits, "%s returned %s under node ID %d", h.describeBatch(b), describeID(id), b.Node)
					break
				}
			}
			spans = append(spans, span{run.First, run.First + int64(run.N), i})
		}
	}
	r.exercise(CheckNodeBits, len(h.IDs))
	slices.SortFunc(spans, func(a, b span) int { return cmp.Compare(a.first, b.first) })
	// Sweep: [.., maxEnd) is covered by the spans so far (sorted by first, the
	// span that reaches maxEnd covers everything from the current first on).
	var maxEnd int64 = -1 << 63
	holder := -1
	for _, s := range spans {
		if s.first < maxEnd {
			dup := min(s.end, maxEnd) - s.first
			r.Duplicates += dup
			a, b := &h.IDs[holder], &h.IDs[s.batch]
			r.add(CheckDuplicate, "%d ID(s) from %s issued twice: by %s and by %s", dup, describeID(s.first),
				h.describeBatch(a), h.describeBatch(b))
		}
		if s.end > maxEnd {
			maxEnd, holder = s.end, s.batch
		}
	}
}

// brokerClaims returns the claim of each broker (a broker process holds at
// most one), from its /ids answers and from the bucket, and checks that no
// claim has two holders.
func brokerClaims(h *History, r *Report) map[int]claim {
	claims := map[int]claim{}
	holders := map[claim]map[string]bool{}
	note := func(c claim, who string) {
		if holders[c] == nil {
			holders[c] = map[string]bool{}
		}
		holders[c][who] = true
	}
	for i := range h.IDs {
		b := &h.IDs[i]
		c := claim{b.Node, b.Version}
		if prev, ok := claims[b.Broker]; ok && prev != c {
			r.add(CheckSharedVersion, "%s answered with two claims: %v and %v", h.name(b.Broker), prev, c)
			continue
		}
		claims[b.Broker] = c
		note(c, h.Brokers[b.Broker].Task)
	}
	byTask := map[string]int{}
	for i, b := range h.Brokers {
		byTask[b.Task] = i
	}
	for _, o := range h.Leases {
		if o.Holder == "" {
			continue
		}
		c := claim{o.Node, o.Version}
		note(c, o.Holder)
		if i, ok := byTask[o.Holder]; ok {
			if prev, ok := claims[i]; !ok {
				claims[i] = c
			} else if prev != c {
				r.add(CheckSharedVersion, "the bucket shows %s holding %v, but it held %v", h.name(i), c, prev)
			}
		}
	}
	keys := make([]claim, 0, len(holders))
	for c := range holders {
		keys = append(keys, c)
	}
	slices.SortFunc(keys, func(a, b claim) int { return cmp.Or(cmp.Compare(a.node, b.node), cmp.Compare(a.version, b.version)) })
	r.exercise(CheckSharedVersion, len(keys))
	for _, c := range keys {
		if len(holders[c]) > 1 {
			who := make([]string, 0, len(holders[c]))
			for t := range holders[c] {
				who = append(who, t)
			}
			sort.Strings(who)
			r.add(CheckSharedVersion, "%v has %d holders: %s", c, len(who), strings.Join(who, ", "))
		}
	}
	return claims
}

// checkVersions checks each node ID's lease reads, in their real-time order.
func checkVersions(h *History, r *Report) {
	byNode := map[int][]LeaseObs{}
	for _, o := range h.Leases {
		byNode[o.Node] = append(byNode[o.Node], o)
	}
	for node, obs := range byNode {
		slices.SortStableFunc(obs, func(a, b LeaseObs) int { return cmp.Compare(a.Start, b.Start) })
		for i := 1; i < len(obs); i++ {
			a, b := obs[i-1], obs[i]
			if a.Version != b.Version || a.Holder != b.Holder {
				r.exercise(CheckVersionOrder, 1)
			}
			switch {
			case b.Version < a.Version:
				r.add(CheckVersionOrder, "node %d: version %d (holder %q) read at %s, then version %d (holder %q) at %s",
					node, a.Version, a.Holder, fmtDur(a.Start), b.Version, b.Holder, fmtDur(b.Start))
			case b.Version == a.Version && a.Holder != b.Holder && b.Holder != "":
				r.add(CheckVersionOrder, "node %d: version %d changed holder from %q (read at %s) to %q (read at %s) without a new version",
					node, a.Version, a.Holder, fmtDur(a.Start), b.Holder, fmtDur(b.Start))
			}
		}
	}
}

// checkTimestamps checks, per node ID, that every ID under a version is above
// every ID under an older version: a successor starts above its
// predecessor's reservation (or, after a release, above its last ID).
func checkTimestamps(h *History, r *Report) {
	type bounds struct {
		min, max           int64 // IDs (the timestamp is their high part)
		minBatch, maxBatch int
	}
	per := map[claim]*bounds{}
	for i := range h.IDs {
		b := &h.IDs[i]
		c := claim{b.Node, b.Version}
		for _, run := range b.Runs {
			first, last := run.First, run.First+int64(run.N)-1
			x := per[c]
			if x == nil {
				x = &bounds{min: first, max: last, minBatch: i, maxBatch: i}
				per[c] = x
			}
			if first < x.min {
				x.min, x.minBatch = first, i
			}
			if last > x.max {
				x.max, x.maxBatch = last, i
			}
		}
	}
	keys := make([]claim, 0, len(per))
	for c := range per {
		keys = append(keys, c)
	}
	slices.SortFunc(keys, func(a, b claim) int { return cmp.Or(cmp.Compare(a.node, b.node), cmp.Compare(a.version, b.version)) })
	var prev *bounds
	var prevClaim claim
	for _, c := range keys {
		x := per[c]
		if prev != nil && prevClaim.node == c.node {
			r.exercise(CheckTimestampOrder, 1) // a handover, with IDs on both sides
			r.exercise(CheckDuplicate, 1)
		}
		if prev != nil && prevClaim.node == c.node && x.min <= prev.max {
			r.add(CheckTimestampOrder, "node %d: v%d issued %s (%s), not above %s (%s) issued under v%d",
				c.node, c.version, describeID(x.min), h.describeBatch(&h.IDs[x.minBatch]),
				describeID(prev.max), h.describeBatch(&h.IDs[prev.maxBatch]), prevClaim.version)
		}
		if prev == nil || prevClaim.node != c.node || x.max > prev.max {
			prev, prevClaim = x, c
		}
	}
}

func countIDs(b *IDBatch) int64 {
	var n int64
	for _, r := range b.Runs {
		n += int64(r.N)
	}
	return n
}

// checkSuperseded finds IDs and /health 200 answers from a broker for
// requests sent after its node ID was seen released or held with a higher
// version: the holder fences itself before it releases, and before anyone may
// take an expired lease, so by then it must answer 503. (Objects are created
// free with version 0 and every take adds 1, so a free object with version
// v >= 1 was released by the holder of v.)
func checkSuperseded(h *History, r *Report, claims map[int]claim) {
	type seen struct {
		at  time.Duration
		how string
	}
	// Per node ID: the first sighting of each version, held or free.
	type key struct {
		claim
		free bool
	}
	first := map[key]seen{}
	mark := func(k key, at time.Duration, how func() string) {
		if s, ok := first[k]; !ok || at < s.at {
			first[k] = seen{at, how()}
		}
	}
	for _, o := range h.Leases {
		k := key{claim{o.Node, o.Version}, o.Holder == ""}
		mark(k, o.End, func() string {
			if k.free {
				return fmt.Sprintf("the bucket showed node %d v%d released", o.Node, o.Version)
			}
			return fmt.Sprintf("the bucket showed node %d v%d held by %q", o.Node, o.Version, o.Holder)
		})
	}
	for j := range h.IDs {
		b := &h.IDs[j]
		mark(key{claim{b.Node, b.Version}, false}, b.End, func() string { return h.describeBatch(b) + " returned IDs" })
	}
	gone := map[int]seen{}
	for i, c := range claims {
		for k, s := range first {
			if k.node == c.node && (k.version > c.version || k.version == c.version && k.free) {
				if g, ok := gone[i]; !ok || s.at < g.at {
					gone[i] = s
				}
			}
		}
	}
	tested := map[int]bool{}
	for _, o := range h.Health {
		if s, ok := gone[o.Broker]; ok && o.Start > s.at {
			tested[o.Broker] = true
		}
	}
	r.exercise(CheckSuperseded, len(tested))
	for j := range h.IDs {
		b := &h.IDs[j]
		if s, ok := gone[b.Broker]; ok && b.Start > s.at {
			r.add(CheckSuperseded, "%s returned %d IDs (first %s) for a request sent after %s at %s",
				h.describeBatch(b), countIDs(b), describeID(b.Runs[0].First), s.how, fmtDur(s.at))
		}
	}
	for _, o := range h.Health {
		if s, ok := gone[o.Broker]; ok && o.OK && o.Start > s.at {
			r.add(CheckSuperseded, "%s: /health 200 for a request sent at %s, after %s at %s",
				h.name(o.Broker), fmtDur(o.Start), s.how, fmtDur(s.at))
		}
	}
}

// checkReleases checks that brokers stopped by SIGTERM left their lease free.
func checkReleases(h *History, r *Report, claims map[int]claim) {
	for _, o := range h.Releases {
		c, held := claims[o.Broker]
		b := h.Brokers[o.Broker]
		if !held || b.ExitCode != 0 {
			continue
		}
		r.exercise(CheckRelease, 1)
		switch {
		case !o.Found || o.Node != c.node:
			r.add(CheckRelease, "%s held %v; its lease object was not read after it exited", b.Name, c)
		case o.Version < c.version:
			r.add(CheckRelease, "%s held %v; after it exited the object shows v%d", b.Name, c, o.Version)
		case o.Version == c.version && o.Holder != "":
			r.add(CheckRelease, "%s held %v and exited 0 after SIGTERM, but the object still shows holder %q", b.Name, c, o.Holder)
		}
	}
}
