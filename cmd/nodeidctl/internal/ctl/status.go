package ctl

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/nodeid/nodeid/cmd/internal/envflag"
	"github.com/nodeid/nodeid/lease"
	"github.com/nodeid/nodeid/nodeid"
)

// StatusJSON is the output of status --json. The shape is a contract
// (docs/nodeidctl.md): fields may be added, never renamed or removed.
type StatusJSON struct {
	// Bucket and Prefix say where the objects were read.
	Bucket string `json:"bucket"`
	Prefix string `json:"prefix"`
	// Manifest is the cluster manifest.
	Manifest ManifestJSON `json:"manifest"`
	// Leases has one entry per ID of the cluster's range, then one per lease
	// object found outside it (Extra: outside the range), sorted by node ID.
	Leases []LeaseJSON `json:"leases"`
	// Counts is the number of entries of Leases in each state.
	Counts map[State]int `json:"counts"`
	// ForeignKeys are keys under the prefix that are neither the manifest nor a
	// lease object; nodeid ignores them. Never null.
	ForeignKeys []string `json:"foreignKeys"`
}

// ManifestJSON is the cluster manifest in [StatusJSON]. When State is "ok",
// every field but Error is set (AgeMs when the store reports its clock); when
// "missing", only State; when "corrupt", State, Error and AgeMs.
type ManifestJSON struct {
	// State is "ok", "missing" or "corrupt".
	State State `json:"state"`
	// ClusterSize, the layout and EpochMs are the manifest's fields.
	ClusterSize int `json:"clusterSize,omitempty"`
	// FirstNodeID is the lowest node ID of the cluster's range (0 unless set).
	FirstNodeID   *int   `json:"firstNodeId,omitempty"`
	TimestampBits int    `json:"timestampBits,omitempty"`
	NodeBits      int    `json:"nodeBits,omitempty"`
	SequenceBits  int    `json:"sequenceBits,omitempty"`
	EpochMs       *int64 `json:"epochMs,omitempty"`
	// KeepAlive is how the cluster's holders keep their leases alive,
	// "write" or "read" (present when State is "ok"); WindowMs and
	// BackstopMs are read mode's W and B (the lease every record states).
	KeepAlive  lease.KeepAlive `json:"keepAlive,omitempty"`
	WindowMs   int64           `json:"windowMs,omitempty"`
	BackstopMs int64           `json:"backstopMs,omitempty"`
	// CreatedAt is the creator's wall clock, for humans.
	CreatedAt time.Time `json:"createdAt,omitzero"`
	// Filled is the manifest's filled flag (present when State is "ok"): true
	// once every lease object of the range has been created. While
	// false, a missing lease object was never created (state unused).
	Filled *bool `json:"filled,omitempty"`
	// AgeMs is the time since the manifest was last written, on the store's
	// clock (Date - Last-Modified of the GET).
	AgeMs *int64 `json:"ageMs,omitempty"`
	// Error says why a corrupt manifest does not decode.
	Error string `json:"error,omitempty"`
}

// LeaseJSON is one lease object in [StatusJSON]. Holder, Version, LeaseMillis
// and ReservedUntilMs are present when the record decodes (states free, held,
// expired); AgeMs whenever the object exists; Error for corrupt and unknown.
type LeaseJSON struct {
	// NodeID is the ID the object leases.
	NodeID int `json:"nodeId"`
	// State is free, held, expired, corrupt, unused (never created), missing
	// (deleted) or unknown (unreadable).
	State State `json:"state"`
	// Holder is the holder's task identity, "" when free.
	Holder *string `json:"holder,omitempty"`
	// Version is nodeIdVersion, the fencing token.
	Version *int64 `json:"version,omitempty"`
	// AgeMs is Date - Last-Modified of the GET: how long ago, on the store's
	// clock, the object was last written.
	AgeMs *int64 `json:"ageMs,omitempty"`
	// ExpiresInMs is present for a held lease on a store that reports its
	// clock: how long after the GET, on the store's clock, a task may judge
	// it expired unless it is renewed first (the first whole-second Date
	// past Last-Modified + leaseMillis + 1s + --clock-margin).
	ExpiresInMs *int64 `json:"expiresInMs,omitempty"`
	// LeaseMillis is the lease duration the record states.
	LeaseMillis *int64 `json:"leaseMillis,omitempty"`
	// ReservedUntilMs is the highest Snowflake timestamp (Unix ms) the holder
	// may issue; a successor issues only above it.
	ReservedUntilMs *int64 `json:"reservedUntilMs,omitempty"`
	// FloorAheadMs is present for a free or expired lease whose reservation
	// (the floor a successor must start above) is more than farFloor ahead of
	// the store's clock (the GET's Date): its last holder's clock was ahead.
	// Tasks skip such an ID, as an anomaly, while their wall clock is more
	// than MaxClockWait behind the floor; it is how far ahead, in ms.
	FloorAheadMs *int64 `json:"floorAheadMs,omitempty"`
	// Challenge is present on a challenge or a confirm of read mode (the
	// holder's record copied by a task that wants the ID): who wrote it,
	// the writeId it names, and whether it is the confirm (then ExpiresInMs
	// counts its window: the ID may be taken then unless the holder
	// answers).
	Challenge *ChallengeJSON `json:"challenge,omitempty"`
	// Extra marks an object outside the manifest's range.
	Extra bool `json:"extra,omitempty"`
	// Error says why the object is corrupt or could not be read.
	Error string `json:"error,omitempty"`
}

func statusCommand() *command {
	return &command{
		name:     "status",
		synopsis: "[--json] [--state LIST] [--fail-on-anomalies] [common flags]",
		summary:  "print the cluster manifest and the lease table (never writes)",
		help: `
Reads the cluster manifest, lists the prefix and GETs every lease object (16 in
flight), then prints the manifest (with its filled flag), a summary line (the
IDs in each state, and the anomalies), and one line per node ID: its state
(free, held, expired, corrupt, unused, missing, or unknown when it could not be
read), holder, version, age, when a held lease expires unless renewed, lease,
and reservation. --state held,expired lists only the IDs in those states (the
summary and the counts stay whole). An ID
without a lease object is unused while the manifest is not filled (never
created: free, a task takes it by creating it) and missing once it is filled,
or when a record's gossip map has seen a version of it (deleted: no task takes
it until nodeidctl repair --id N --floor MS restores it). Held and expired are judged on the
store's clock only: Date - Last-Modified of the object's own GET against
leaseMillis + 1s + --clock-margin. Objects outside the cluster's range are listed
apart; other keys under the prefix are named in a note. A free or expired
lease whose reservation (the floor a successor starts above) is more than 5s
ahead of the store's clock is named after the table (floorAheadMs in --json):
its last holder's clock was ahead, and tasks skip it until their clock is
within MaxClockWait of the floor. status never writes.

A prefix with neither a cluster manifest nor a lease object holds no cluster
(a mistyped --prefix or --bucket, most often): status says so in one line,
naming the bucket and the prefix, instead of an empty table (with --json, in a
note on stderr).

Exit 0 when every object was read (whatever its state), 1 when some could not be;
with --fail-on-anomalies, 1 also when there is an anomaly: a corrupt or missing
lease object, a floor far ahead, a corrupt manifest, or no cluster at all (for
monitoring and scripts).`,
		run: runStatus,
	}
}

func runStatus(a *app, ctx context.Context, cmd *command, args []string) error {
	var c commonFlags
	f := a.newFlagSet(cmd)
	c.register(f)
	asJSON := f.Bool("json", false, "print JSON (the shape is documented in docs/nodeidctl.md)")
	stateList := f.String("state", "", "comma-separated states to list (free, held, expired, corrupt, unused, missing, unknown); empty: all")
	failOnAnomalies := f.Bool("fail-on-anomalies", false, "exit 1 when an anomaly is found (corrupt or missing lease objects, far floors, a corrupt manifest) or no cluster (no manifest and no lease object under the prefix)")
	var only map[State]bool
	st, err := a.setup(ctx, f, &c, args, func() (err error) {
		only, err = parseStates(f.Source("state"), *stateList)
		return err
	})
	if err != nil {
		return err
	}
	s, err := scan(ctx, st, c.rules())
	if err != nil {
		return err
	}
	out := s.toJSON(c.bucket, c.prefix, c.rules())
	anomalies := out.anomalies()
	sum := summaryLine(&out, anomalies) // of every ID, whatever --state lists
	out.Leases = filterStates(out.Leases, only)
	none := ""
	if s.noCluster() {
		none = noClusterAt(&c, f)
	}
	switch {
	case *asJSON:
		enc := json.NewEncoder(a.stdout)
		enc.SetIndent("", "  ")
		if err := enc.Encode(out); err != nil {
			return err
		}
	case none != "":
		a.out("%s", none) // an empty table would say "no anomalies"
	default:
		printStatus(a.stdout, s, &out, sum)
	}
	if len(s.foreign) > 0 {
		a.note("%d other object(s) under the prefix, ignored by nodeid: %s", len(s.foreign), shortList(s.foreign, 10))
	}
	if none != "" {
		if *failOnAnomalies {
			return errors.New(none)
		}
		if *asJSON {
			a.note("%s", none)
		}
	}
	if n := out.Counts[StateUnknown]; n > 0 {
		return fmt.Errorf("%d lease object(s) could not be read: the table is incomplete", n)
	}
	if *failOnAnomalies && len(anomalies) > 0 {
		return fmt.Errorf("%d anomalies: %s", len(anomalies), shortList(anomalies, 10))
	}
	return nil
}

// noCluster reports whether s found no cluster: no cluster manifest and no
// lease object under the prefix (other keys aside), as under a mistyped
// --prefix or --bucket.
func (s *snapshot) noCluster() bool {
	return s.manifest.state == StateMissing && len(s.objects) == 0
}

// noClusterAt says that there is no cluster where the common flags c (parsed
// by f) point, naming the bucket and the prefix, and the flags or variables
// to check.
func noClusterAt(c *commonFlags, f *flagSet) string {
	return fmt.Sprintf("no cluster %s: no cluster manifest %s%s and no lease object there; check %s, or create the cluster with nodeidctl init",
		c.where(), c.prefix, lease.ManifestKey, c.aimedBy(f))
}

// parseStates parses --state (named src in messages): nil for all states.
func parseStates(src, list string) (map[State]bool, error) {
	if strings.TrimSpace(list) == "" {
		return nil, nil
	}
	known := []State{StateFree, StateHeld, StateExpired, StateCorrupt, StateUnused, StateMissing, StateUnknown}
	only := map[State]bool{}
	for _, s := range strings.Split(list, ",") {
		st := State(strings.TrimSpace(s))
		if !slices.Contains(known, st) {
			return nil, usagef("%s %q: want states among %v, comma-separated", src, list, known)
		}
		only[st] = true
	}
	return only, nil
}

// filterStates returns the leases in the states of only (all of them when
// only is nil).
func filterStates(ls []LeaseJSON, only map[State]bool) []LeaseJSON {
	if only == nil {
		return ls
	}
	return slices.DeleteFunc(ls, func(l LeaseJSON) bool { return !only[l.State] })
}

// anomalies names what in the cluster needs an operator, one entry per
// object: a corrupt manifest, corrupt, missing or unreadable lease objects,
// and floors far ahead of the store's clock.
func (j *StatusJSON) anomalies() []string {
	var out []string
	if j.Manifest.State == StateCorrupt {
		out = append(out, "the manifest is corrupt")
	}
	for _, l := range j.Leases {
		switch {
		case l.State == StateCorrupt || l.State == StateMissing || l.State == StateUnknown:
			out = append(out, fmt.Sprintf("%d %s", l.NodeID, l.State))
		case l.FloorAheadMs != nil:
			out = append(out, fmt.Sprintf("%d floor %s ahead", l.NodeID, fmtAge(*l.FloorAheadMs)))
		}
	}
	return out
}

// toJSON returns the documented JSON form of s, judged by r.
func (s *snapshot) toJSON(bucket, prefix string, r judgeRules) StatusJSON {
	out := StatusJSON{
		Bucket: bucket, Prefix: prefix,
		Manifest:    manifestJSON(s.manifest),
		Leases:      make([]LeaseJSON, 0, len(s.objects)),
		Counts:      map[State]int{},
		ForeignKeys: append([]string{}, s.foreign...),
	}
	for _, o := range s.objects {
		out.Leases = append(out.Leases, leaseJSON(&o, r))
		out.Counts[o.state]++
	}
	return out
}

func manifestJSON(mv manifestView) ManifestJSON {
	j := ManifestJSON{State: mv.state, AgeMs: ageMs(mv.meta)}
	switch mv.state {
	case manifestOK:
		m := mv.m
		j.ClusterSize, j.FirstNodeID, j.TimestampBits, j.NodeBits, j.SequenceBits = m.ClusterSize, &m.FirstNodeID, m.Layout.TimestampBits, m.Layout.NodeBits, m.Layout.SequenceBits
		j.EpochMs, j.CreatedAt, j.Filled = &m.Layout.EpochMs, m.CreatedAt.UTC(), &m.Filled
		j.KeepAlive, j.WindowMs, j.BackstopMs = m.KeepAlive.Mode(), m.WindowMillis, m.BackstopMillis
	case StateCorrupt:
		j.Error = mv.err.Error()
	}
	return j
}

// ChallengeJSON is a standing challenge in [LeaseJSON].
type ChallengeJSON struct {
	// By is the challenger's task identity.
	By string `json:"by"`
	// Of is the writeId of the holder's write it challenges.
	Of string `json:"of"`
	// Confirmed: the confirm was written; its window runs.
	Confirmed bool `json:"confirmed"`
	// WindowMs is the cluster's window W.
	WindowMs int64 `json:"windowMs"`
}

func leaseJSON(o *object, r judgeRules) LeaseJSON {
	j := LeaseJSON{NodeID: o.id, State: o.state, Extra: o.extra}
	if o.state != StateMissing && o.state != StateUnused && o.state != StateUnknown {
		j.AgeMs = ageMs(o.meta)
	}
	if o.state == StateHeld && !o.meta.Date.IsZero() && !o.meta.LastModified.IsZero() {
		in := lease.FirstExpiredDate(o.meta.LastModified, o.rec.TakeableAfter(), r.clockMargin).Sub(o.meta.Date).Milliseconds()
		j.ExpiresInMs = &in
	}
	if o.decoded() {
		r := o.rec
		j.Holder, j.Version, j.LeaseMillis, j.ReservedUntilMs = &r.Holder, &r.Version, &r.LeaseMillis, &r.ReservedUntilMs
		if c := r.Challenge; c != nil {
			j.Challenge = &ChallengeJSON{By: c.By, Of: c.Of, Confirmed: c.Confirmed, WindowMs: c.WindowMillis}
		}
	}
	if ahead, ok := floorAhead(o); ok {
		j.FloorAheadMs = &ahead
	}
	if o.err != nil {
		j.Error = o.err.Error()
	}
	return j
}

// farFloor is how far ahead of the store's clock a free or expired lease's
// floor is reported: nodeid's default MaxClockWait, beyond which a task whose
// clock agrees with the store's skips the ID.
var farFloor = nodeid.DefaultConfig().MaxClockWait

// floorAhead returns how far (ms) the floor of a free or expired lease is ahead
// of the Date of its GET, when that is more than farFloor.
func floorAhead(o *object) (int64, bool) {
	if (o.state != StateFree && o.state != StateExpired) || o.meta.Date.IsZero() {
		return 0, false
	}
	ahead := o.rec.ReservedUntilMs - o.meta.Date.UnixMilli()
	return ahead, ahead > farFloor.Milliseconds()
}

// ageMs returns Date - Last-Modified in ms, or nil when either is unknown.
func ageMs(m lease.Meta) *int64 {
	age, ok := lease.StoreAge(m.LastModified, m.Date)
	if !ok {
		return nil
	}
	ms := age.Milliseconds()
	return &ms
}

// summaryLine is the line status prints above the table: the IDs below the
// cluster size by state, and the anomalies.
func summaryLine(j *StatusJSON, anomalies []string) string {
	n := 0
	for _, l := range j.Leases {
		if !l.Extra {
			n++
		}
	}
	return fmt.Sprintf("summary: %d node IDs: %s; %s", n, summary(j.Counts), anomalyNote(anomalies))
}

// printStatus prints s as text: the manifest, the summary line sum, the
// lease table (of the IDs in j), notes.
func printStatus(w io.Writer, s *snapshot, j *StatusJSON, sum string) {
	mv := s.manifest
	fmt.Fprintf(w, "cluster manifest %s%s in bucket %s:", j.Prefix, lease.ManifestKey, j.Bucket)
	switch mv.state {
	case StateMissing:
		fmt.Fprintln(w, " missing (create it with nodeidctl init)")
	case StateCorrupt:
		fmt.Fprintf(w, " CORRUPT: %v\n", mv.err)
	default:
		m := mv.m
		fmt.Fprintln(w)
		fmt.Fprintf(w, "  cluster size  %d (node IDs %s)\n", m.ClusterSize, m.RangeString())
		fmt.Fprintf(w, "  layout        %d/%d/%d bits (timestamp/node/sequence)\n", m.Layout.TimestampBits, m.Layout.NodeBits, m.Layout.SequenceBits)
		fmt.Fprintf(w, "  epoch         %s\n", fmtMs(m.Layout.EpochMs))
		fmt.Fprintf(w, "  keep-alive    %s\n", strings.TrimPrefix(m.KeepAliveString(), "keep-alive "))
		fmt.Fprintf(w, "  created       %s (creator's clock)", fmtTime(m.CreatedAt))
		if a := ageMs(mv.meta); a != nil {
			fmt.Fprintf(w, ", last written %s ago (store clock)", fmtAge(*a))
		}
		fmt.Fprintln(w)
		if m.Filled {
			fmt.Fprintln(w, "  filled        yes (every lease object was created; a missing one was deleted)")
		} else {
			fmt.Fprintln(w, "  filled        no (an ID without a lease object was never created: unused, free)")
		}
	}
	var main, extra []LeaseJSON
	for _, l := range j.Leases {
		if l.Extra {
			extra = append(extra, l)
		} else {
			main = append(main, l)
		}
	}
	fmt.Fprintf(w, "\n%s\n\n", sum)
	printTable(w, main)
	if len(extra) > 0 {
		fmt.Fprintf(w, "\nlease objects outside the cluster's node IDs %s (their holders keep them until they stop; no new task takes them):\n", s.manifest.m.RangeString())
		printTable(w, extra)
	}
	fmt.Fprintf(w, "\n%d lease objects: %s\n", total(j.Counts), summary(j.Counts))
	if j.Counts[StateCorrupt] > 0 {
		fmt.Fprintln(w, "corrupt objects are never taken; rewrite one with nodeidctl repair --id N --floor MS")
	}
	if j.Counts[StateUnused] > 0 {
		fmt.Fprintln(w, "unused IDs were never created: they are free, and a task takes one by creating its lease object")
	}
	var far []string
	for _, l := range j.Leases {
		if l.FloorAheadMs != nil {
			far = append(far, fmt.Sprintf("%d (%s ahead)", l.NodeID, fmtAge(*l.FloorAheadMs)))
		}
	}
	if len(far) > 0 {
		fmt.Fprintf(w, "free or expired IDs whose floor (reservation) is more than %v ahead of the store's clock: %s; "+
			"their last holder's clock was ahead and may have issued IDs up to it, so tasks skip them (an anomaly) until their clock is within MaxClockWait of the floor\n",
			farFloor, shortList(far, 10))
	}
	if j.Counts[StateMissing] > 0 {
		fmt.Fprintln(w, "missing objects were deleted (the cluster is filled, or a version of them was seen): no task takes them until nodeidctl repair --id N --floor MS restores them")
	}
}

// printTable prints lease entries as aligned columns.
func printTable(w io.Writer, ls []LeaseJSON) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tSTATE\tVERSION\tAGE\tEXPIRES IN\tLEASE\tRESERVED UNTIL\tHOLDER")
	for _, l := range ls {
		cols := []string{fmt.Sprint(l.NodeID), string(l.State), "-", "-", "-", "-", "-", ""}
		if l.Version != nil {
			cols[2] = fmt.Sprint(*l.Version)
		}
		if l.AgeMs != nil {
			cols[3] = fmtAge(*l.AgeMs)
		}
		if l.ExpiresInMs != nil {
			cols[4] = fmtAge(*l.ExpiresInMs)
		}
		if l.LeaseMillis != nil && *l.LeaseMillis > 0 {
			cols[5] = fmtAge(*l.LeaseMillis)
		}
		if l.ReservedUntilMs != nil && *l.ReservedUntilMs > 0 {
			cols[6] = fmtMs(*l.ReservedUntilMs)
		}
		switch {
		case l.Error != "":
			cols[7] = "error: " + l.Error
		case l.Holder != nil && l.Challenge != nil:
			cols[7] = fmt.Sprintf("%s, %s by %s", *l.Holder, map[bool]string{false: "challenged", true: "confirmed challenge"}[l.Challenge.Confirmed], l.Challenge.By)
		case l.Holder != nil:
			cols[7] = *l.Holder
		}
		fmt.Fprintln(tw, strings.Join(cols, "\t"))
	}
	_ = tw.Flush()
}

// summary formats the state counts in a fixed order.
func summary(counts map[State]int) string {
	var parts []string
	for _, s := range []State{StateFree, StateUnused, StateHeld, StateExpired, StateCorrupt, StateMissing, StateUnknown} {
		if n := counts[s]; n > 0 {
			parts = append(parts, fmt.Sprintf("%d %s", n, s))
		}
	}
	if len(parts) == 0 {
		return "none"
	}
	return strings.Join(parts, ", ")
}

// anomalyNote says how many anomalies there are, for the summary line.
func anomalyNote(a []string) string {
	switch len(a) {
	case 0:
		return "no anomalies"
	case 1:
		return fmt.Sprintf("1 anomaly (%s): see below", a[0])
	}
	return fmt.Sprintf("%d anomalies (%s): see below", len(a), shortList(a, 5))
}

// total is the number of entries counts counts.
func total(counts map[State]int) int {
	n := 0
	for _, c := range counts {
		n += c
	}
	return n
}

// fmtAge formats a duration in ms for humans, to the second above 10 s, as
// people write it (2m, not 2m0s).
func fmtAge(ms int64) string {
	d := time.Duration(ms) * time.Millisecond
	if d >= 10*time.Second || d <= -10*time.Second {
		d = d.Round(time.Second)
	}
	return envflag.FormatDuration(d)
}

// fmtMs formats Unix ms as the number and its UTC time.
func fmtMs(ms int64) string {
	return fmt.Sprintf("%d (%s)", ms, time.UnixMilli(ms).UTC().Format("2006-01-02T15:04:05.000Z"))
}

// fmtTime formats a wall-clock time in UTC, or "-" when zero.
func fmtTime(t time.Time) string {
	if t.IsZero() {
		return "-"
	}
	return t.UTC().Format("2006-01-02T15:04:05.000Z")
}

// shortList joins at most n strings and says how many more there are.
func shortList(ss []string, n int) string {
	if len(ss) <= n {
		return strings.Join(ss, ", ")
	}
	return fmt.Sprintf("%s and %d more", strings.Join(ss[:n], ", "), len(ss)-n)
}
