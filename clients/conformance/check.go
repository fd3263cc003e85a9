package conformance

import (
	"fmt"
	"sort"
	"strconv"
	"strings"
)

// The layout every client and broker uses (clients/README.md): 41 bits of
// milliseconds since EpochMs, 10 bits of node ID, 12 bits of sequence.
const (
	EpochMs  = 1735689600000
	nodeBits = 10
	seqBits  = 12
)

// TimeMs returns the Unix milliseconds an ID is stamped with.
func TimeMs(id int64) int64 { return EpochMs + id>>(nodeBits+seqBits) }

// NodeOf returns an ID's node bits.
func NodeOf(id int64) int { return int(id >> seqBits & (1<<nodeBits - 1)) }

// LineKind says what a line of a driver's standard output is.
type LineKind int

// The kinds of line CONFORMANCE.md defines, and Bad for anything else.
const (
	Bad  LineKind = iota // not a line of the protocol
	OK                   // ok NODE VERSION VALIDUNTILMS ID [ID ...]
	Err                  // err KIND MESSAGE
	Done                 // done CALLS ERRORS
)

// ErrKinds are the KINDs of an err line.
var ErrKinds = []string{"NotHeld", "VersionChanged", "ClockBehind", "Unavailable", "Other"}

// Line is one parsed line of a driver's standard output.
type Line struct {
	Kind    LineKind
	Node    int     // OK
	Version int64   // OK
	ValidMs int64   // OK: VALIDUNTILMS, or -1 for "-" (HTTP mode)
	IDs     []int64 // OK
	ErrKind string  // Err
	Calls   int     // Done
	Errors  int     // Done
	Raw     string
	Problem string // Bad: why the line is not one of the protocol
}

// ParseLine parses one line of a driver's standard output (without its
// newline). A line that is not one of the protocol's has Kind Bad and says
// why in Problem.
func ParseLine(s string) Line {
	l := Line{Raw: s}
	bad := func(format string, args ...any) Line {
		l.Kind, l.Problem = Bad, fmt.Sprintf(format, args...)
		return l
	}
	word, rest, _ := strings.Cut(s, " ")
	switch word {
	case "ok":
		f := strings.Fields(rest)
		if len(f) < 4 {
			return bad("an ok line needs NODE VERSION VALIDUNTILMS and at least one ID")
		}
		node, err := strconv.Atoi(f[0])
		if err != nil || node < 0 || node >= 1<<nodeBits {
			return bad("NODE %q is not a node ID", f[0])
		}
		version, err := strconv.ParseInt(f[1], 10, 64)
		if err != nil || version < 0 {
			return bad("VERSION %q is not a version", f[1])
		}
		valid := int64(-1)
		if f[2] != "-" {
			if valid, err = strconv.ParseInt(f[2], 10, 64); err != nil || valid < 0 {
				return bad("VALIDUNTILMS %q is neither - nor Unix milliseconds", f[2])
			}
		}
		ids := make([]int64, 0, len(f)-3)
		for _, x := range f[3:] {
			id, err := strconv.ParseInt(x, 10, 64)
			if err != nil || id < 0 {
				return bad("ID %q is not a non-negative 63-bit decimal integer", x)
			}
			ids = append(ids, id)
		}
		l.Kind, l.Node, l.Version, l.ValidMs, l.IDs = OK, node, version, valid, ids
	case "err":
		kind, _, _ := strings.Cut(rest, " ")
		known := false
		for _, k := range ErrKinds {
			known = known || k == kind
		}
		if !known {
			return bad("err KIND %q is not one of %v", kind, ErrKinds)
		}
		l.Kind, l.ErrKind = Err, kind
	case "done":
		f := strings.Fields(rest)
		if len(f) != 2 {
			return bad("a done line is done CALLS ERRORS")
		}
		calls, err1 := strconv.Atoi(f[0])
		errs, err2 := strconv.Atoi(f[1])
		if err1 != nil || err2 != nil || calls < 0 || errs < 0 || errs > calls {
			return bad("CALLS %q and ERRORS %q are not counts", f[0], f[1])
		}
		l.Kind, l.Calls, l.Errors = Done, calls, errs
	default:
		return bad("not an ok, err or done line")
	}
	return l
}

// Stream is what one process issued, in order: a driver's output, or the
// answers one caller got from a broker's /ids (as ok lines, ValidMs -1).
type Stream struct {
	Name  string
	Lines []Line
	// Driver: the lines are a driver's standard output, which the protocol
	// checks apply to.
	Driver bool
	// IDFile: the driver ran in id-file mode (one claim per process; every
	// ok line carries the validUntilMs it was issued under).
	IDFile bool
	// Batch is the driver's --batch: every ok line has this many IDs. 0:
	// not checked (a broker's answers).
	Batch int
	// Ended: the driver was stopped in a way that ends with a done line
	// (its --duration-ms, SIGTERM, stdin closed), not killed.
	Ended bool
}

// Claim is a node ID and version known to have been handed out, with its
// floor: a broker's (from its log) or a scripted id file's.
type Claim struct {
	Node    int
	Version int64
	FloorMs int64
	// RemovedMs, when not 0, is when its broker removed the id file for
	// good (Unix ms, the host's clock): an id-file process re-reads the
	// file at least every second, so it issues nothing under the claim
	// stamped later than RemovedMs + RemovalSlackMs.
	RemovedMs int64
}

// RemovalSlackMs is how long after the id file's removal an id-file process
// may still stamp IDs under its claim: the re-read period (1 s), and 1.5 s
// for a process descheduled between its check and its clock reading on a
// loaded machine.
const RemovalSlackMs = 2500

// Run is everything one scenario collected.
type Run struct {
	Streams []*Stream
	// Claims, when not nil, are every claim of the run: an ok line naming
	// another is a violation, and IDs are checked against their claim's
	// floor.
	Claims []Claim
}

// The kinds of [Violation].
const (
	// KindDuplicate: an ID issued twice, by one process or two.
	KindDuplicate = "duplicate"
	// KindNotIncreasing: an ID not above the one its process issued before.
	KindNotIncreasing = "not-increasing"
	// KindPastValidUntil: an id-file ID stamped at or past the validUntilMs
	// of the line that reported it.
	KindPastValidUntil = "past-valid-until"
	// KindNodeBits: an ID whose node bits are not the NODE its line reports.
	KindNodeBits = "node-bits"
	// KindBelowFloor: an ID stamped at or below its claim's floorMs.
	KindBelowFloor = "below-floor"
	// KindUnknownClaim: an ok line naming a node and version nobody handed
	// out.
	KindUnknownClaim = "unknown-claim"
	// KindClaimChanged: an id-file process that issued under two claims
	// (rule 3: it stops for good at the first change).
	KindClaimChanged = "claim-changed"
	// KindAfterVersionChanged: an ok line after err VersionChanged in one
	// process.
	KindAfterVersionChanged = "ok-after-version-changed"
	// KindAfterRemoval: an id-file ID stamped more than RemovalSlackMs
	// after its broker removed the id file (rules 2 and 5: the process
	// re-reads the file every second and stops while it is missing).
	KindAfterRemoval = "after-removal"
	// KindBatch: an ok line without exactly --batch IDs (rule 7).
	KindBatch = "batch-size"
	// KindProtocol: a line that is not the protocol's, a line after done, a
	// done line whose counts are not the lines', or no done line from a
	// driver that was stopped (not killed).
	KindProtocol = "protocol"
)

// Kinds lists the kinds of violation.
var Kinds = []string{KindDuplicate, KindNotIncreasing, KindPastValidUntil, KindNodeBits, KindBelowFloor,
	KindUnknownClaim, KindClaimChanged, KindAfterVersionChanged, KindAfterRemoval, KindBatch, KindProtocol}

// Violation is one broken rule.
type Violation struct {
	Kind   string
	Stream string
	Msg    string
}

func (v Violation) String() string { return v.Kind + ": " + v.Stream + ": " + v.Msg }

// Report is the result of [Check].
type Report struct {
	IDs        int // IDs checked
	OKLines    int
	ErrLines   map[string]int // err lines by KIND
	Counts     map[string]int // violations by kind, each counted
	Violations []Violation    // the first few of each kind and stream
}

// keepPerKind bounds the violations a report keeps per kind and stream.
const keepPerKind = 5

// Has reports whether the report counts a violation of kind.
func (r *Report) Has(kind string) bool { return r.Counts[kind] > 0 }

// OK reports whether no rule was broken.
func (r *Report) OK() bool { return len(r.Counts) == 0 }

// String summarises the report: its counts, then the violations kept.
func (r *Report) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%d IDs in %d ok lines, err lines %v", r.IDs, r.OKLines, r.ErrLines)
	if r.OK() {
		b.WriteString(", no violation")
		return b.String()
	}
	kinds := make([]string, 0, len(r.Counts))
	for k := range r.Counts {
		kinds = append(kinds, k)
	}
	sort.Strings(kinds)
	for _, k := range kinds {
		fmt.Fprintf(&b, "\n%d x %s", r.Counts[k], k)
	}
	for _, v := range r.Violations {
		b.WriteString("\n  " + v.String())
	}
	return b.String()
}

type reporter struct {
	r    *Report
	kept map[[2]string]int
}

func (p *reporter) add(kind, stream, format string, args ...any) {
	p.r.Counts[kind]++
	key := [2]string{kind, stream}
	if p.kept[key] < keepPerKind {
		p.kept[key]++
		p.r.Violations = append(p.r.Violations, Violation{Kind: kind, Stream: stream, Msg: fmt.Sprintf(format, args...)})
	}
}

// Check checks a run's streams against the rules every client keeps: no ID
// twice across all streams, each stream's IDs strictly increasing, node bits
// equal to the reported node, no id-file ID stamped at or past the
// validUntilMs it was issued under nor at or below its claim's floor, one
// claim per id-file process and no ok line after VersionChanged, --batch IDs
// per ok line, and the protocol's lines (a done line whose counts match).
// It is a pure function of its input.
func Check(run Run) *Report {
	rep := &Report{ErrLines: map[string]int{}, Counts: map[string]int{}}
	p := &reporter{r: rep, kept: map[[2]string]int{}}
	claims := map[[2]int64]Claim{}
	for _, c := range run.Claims {
		claims[[2]int64{int64(c.Node), c.Version}] = c
	}
	seen := map[int64]string{} // ID -> the stream that issued it first
	for _, s := range run.Streams {
		checkStream(p, s, run.Claims != nil, claims, seen)
	}
	return rep
}

func checkStream(p *reporter, s *Stream, knowClaims bool, claims map[[2]int64]Claim, seen map[int64]string) {
	var (
		last        = int64(-1)
		claim       *[2]int64
		versionDead = -1 // index of the first err VersionChanged
		calls, errs int
		doneAt      = -1
	)
	for i, l := range s.Lines {
		if doneAt >= 0 {
			p.add(KindProtocol, s.Name, "line %d after the done line: %q", i+1, l.Raw)
		}
		switch l.Kind {
		case Bad:
			p.add(KindProtocol, s.Name, "line %d %q: %s", i+1, l.Raw, l.Problem)
		case Done:
			if doneAt < 0 {
				doneAt = i
				if l.Calls != calls || l.Errors != errs {
					p.add(KindProtocol, s.Name, "done %d %d, but %d ok or err lines of which %d err", l.Calls, l.Errors, calls, errs)
				}
			}
		case Err:
			calls++
			errs++
			p.r.ErrLines[l.ErrKind]++
			if l.ErrKind == "VersionChanged" && versionDead < 0 {
				versionDead = i
			}
		case OK:
			calls++
			p.r.OKLines++
			p.r.IDs += len(l.IDs)
			key := [2]int64{int64(l.Node), l.Version}
			if versionDead >= 0 {
				p.add(KindAfterVersionChanged, s.Name, "line %d is ok (node %d version %d) after err VersionChanged on line %d", i+1, l.Node, l.Version, versionDead+1)
			}
			if s.IDFile {
				if claim != nil && *claim != key {
					p.add(KindClaimChanged, s.Name, "line %d issues under node %d version %d, the process used node %d version %d before", i+1, l.Node, l.Version, claim[0], claim[1])
				}
				if claim == nil {
					claim = &key
				}
			}
			c, known := claims[key]
			if knowClaims && !known {
				p.add(KindUnknownClaim, s.Name, "line %d names node %d version %d, which no broker or id file handed out", i+1, l.Node, l.Version)
			}
			if s.Batch > 0 && len(l.IDs) != s.Batch {
				p.add(KindBatch, s.Name, "line %d has %d IDs, --batch is %d", i+1, len(l.IDs), s.Batch)
			}
			for _, id := range l.IDs {
				ts := TimeMs(id)
				if id <= last {
					p.add(KindNotIncreasing, s.Name, "line %d: ID %d (%s) is not above the one before, %d (%s)", i+1, id, describe(id), last, describe(last))
				}
				last = max(last, id)
				if first, dup := seen[id]; dup {
					p.add(KindDuplicate, s.Name, "line %d: ID %d (%s) was issued before by %s", i+1, id, describe(id), first)
				} else {
					seen[id] = s.Name
				}
				if NodeOf(id) != l.Node {
					p.add(KindNodeBits, s.Name, "line %d: ID %d has node bits %d, the line says node %d", i+1, id, NodeOf(id), l.Node)
				}
				if s.IDFile && l.ValidMs >= 0 && ts >= l.ValidMs {
					p.add(KindPastValidUntil, s.Name, "line %d: ID %d is stamped %d, at or past validUntilMs %d (by %d ms)", i+1, id, ts, l.ValidMs, ts-l.ValidMs)
				}
				if known && s.IDFile && c.RemovedMs > 0 && ts > c.RemovedMs+RemovalSlackMs {
					p.add(KindAfterRemoval, s.Name, "line %d: ID %d is stamped %d, %d ms after node %d version %d's id file was removed", i+1, id, ts, ts-c.RemovedMs, l.Node, l.Version)
				}
				if known && ts <= c.FloorMs {
					p.add(KindBelowFloor, s.Name, "line %d: ID %d is stamped %d, at or below node %d version %d's floorMs %d (by %d ms)", i+1, id, ts, l.Node, l.Version, c.FloorMs, c.FloorMs-ts)
				}
			}
		}
	}
	if s.Driver && s.Ended && doneAt < 0 {
		p.add(KindProtocol, s.Name, "no done line from a driver that was stopped (not killed), after %d lines", len(s.Lines))
	}
}

// describe shows an ID's parts.
func describe(id int64) string {
	return fmt.Sprintf("ms %d node %d seq %d", TimeMs(id), NodeOf(id), id&(1<<seqBits-1))
}
