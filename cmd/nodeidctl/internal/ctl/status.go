package ctl

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

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
	// Leases has one entry per ID below the cluster size, then one per lease
	// object found at or above it (Extra), sorted by node ID.
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
	ClusterSize   int    `json:"clusterSize,omitempty"`
	TimestampBits int    `json:"timestampBits,omitempty"`
	NodeBits      int    `json:"nodeBits,omitempty"`
	SequenceBits  int    `json:"sequenceBits,omitempty"`
	EpochMs       *int64 `json:"epochMs,omitempty"`
	// CreatedAt is the creator's wall clock, for humans.
	CreatedAt time.Time `json:"createdAt,omitzero"`
	// Filled is the manifest's filled flag (present when State is "ok"): true
	// once every lease object below the cluster size has been created. While
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
	// Extra marks an object at or above the manifest's cluster size.
	Extra bool `json:"extra,omitempty"`
	// Error says why the object is corrupt or could not be read.
	Error string `json:"error,omitempty"`
}

func statusCommand() *command {
	return &command{
		name:     "status",
		synopsis: "[--json] [common flags]",
		summary:  "print the cluster manifest and the lease table (never writes)",
		help: `
Reads the cluster manifest, lists the prefix and GETs every lease object (16 in
flight), then prints the manifest (with its filled flag) and one line per node
ID: its state (free, held, expired, corrupt, unused, missing, or unknown when it
could not be read), holder, version, age and lease, and reservation. An ID
without a lease object is unused while the manifest is not filled (never
created: free, a task takes it by creating it) and missing once it is filled,
or when a record's gossip map has seen a version of it (deleted: no task takes
it until nodeidctl repair --id N --floor MS restores it). Held and expired are judged on the
store's clock only: Date - Last-Modified of the object's own GET against
leaseMillis + 1s + --clock-margin. Objects above the cluster size are listed
apart; other keys under the prefix are named in a note. A free or expired
lease whose reservation (the floor a successor starts above) is more than 5s
ahead of the store's clock is named after the table (floorAheadMs in --json):
its last holder's clock was ahead, and tasks skip it until their clock is
within MaxClockWait of the floor. status never writes.

Exit 0 when every object was read (whatever its state), 1 when some could not be.`,
		run: runStatus,
	}
}

func runStatus(a *app, ctx context.Context, cmd *command, args []string) error {
	var c commonFlags
	f := a.newFlagSet(cmd)
	c.register(f)
	asJSON := f.Bool("json", false, "print JSON (the shape is documented in docs/nodeidctl.md)")
	st, err := a.setup(ctx, f, &c, args, nil)
	if err != nil {
		return err
	}
	s, err := scan(ctx, st, c.rules())
	if err != nil {
		return err
	}
	out := s.toJSON(c.bucket, c.prefix)
	if *asJSON {
		enc := json.NewEncoder(a.stdout)
		enc.SetIndent("", "  ")
		if err := enc.Encode(out); err != nil {
			return err
		}
	} else {
		printStatus(a.stdout, s, &out)
	}
	if len(s.foreign) > 0 {
		a.note("%d other object(s) under the prefix, ignored by nodeid: %s", len(s.foreign), shortList(s.foreign, 10))
	}
	if n := out.Counts[StateUnknown]; n > 0 {
		return fmt.Errorf("%d lease object(s) could not be read: the table is incomplete", n)
	}
	return nil
}

// toJSON returns the documented JSON form of s.
func (s *snapshot) toJSON(bucket, prefix string) StatusJSON {
	out := StatusJSON{
		Bucket: bucket, Prefix: prefix,
		Manifest:    manifestJSON(s.manifest),
		Leases:      make([]LeaseJSON, 0, len(s.objects)),
		Counts:      map[State]int{},
		ForeignKeys: append([]string{}, s.foreign...),
	}
	for _, o := range s.objects {
		out.Leases = append(out.Leases, leaseJSON(&o))
		out.Counts[o.state]++
	}
	return out
}

func manifestJSON(mv manifestView) ManifestJSON {
	j := ManifestJSON{State: mv.state, AgeMs: ageMs(mv.meta)}
	switch mv.state {
	case manifestOK:
		m := mv.m
		j.ClusterSize, j.TimestampBits, j.NodeBits, j.SequenceBits = m.ClusterSize, m.Layout.TimestampBits, m.Layout.NodeBits, m.Layout.SequenceBits
		j.EpochMs, j.CreatedAt, j.Filled = &m.Layout.EpochMs, m.CreatedAt.UTC(), &m.Filled
	case StateCorrupt:
		j.Error = mv.err.Error()
	}
	return j
}

func leaseJSON(o *object) LeaseJSON {
	j := LeaseJSON{NodeID: o.id, State: o.state, Extra: o.extra}
	if o.state != StateMissing && o.state != StateUnused && o.state != StateUnknown {
		j.AgeMs = ageMs(o.meta)
	}
	if o.decoded() {
		r := o.rec
		j.Holder, j.Version, j.LeaseMillis, j.ReservedUntilMs = &r.Holder, &r.Version, &r.LeaseMillis, &r.ReservedUntilMs
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

// printStatus prints s as text: the manifest, the lease table, a summary.
func printStatus(w io.Writer, s *snapshot, j *StatusJSON) {
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
		fmt.Fprintf(w, "  cluster size  %d\n", m.ClusterSize)
		fmt.Fprintf(w, "  layout        %d/%d/%d bits (timestamp/node/sequence)\n", m.Layout.TimestampBits, m.Layout.NodeBits, m.Layout.SequenceBits)
		fmt.Fprintf(w, "  epoch         %s\n", fmtMs(m.Layout.EpochMs))
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
	fmt.Fprintln(w)
	printTable(w, main)
	if len(extra) > 0 {
		fmt.Fprintf(w, "\nlease objects at or above the cluster size %d (their holders keep them until they stop; no new task takes them):\n", s.size)
		printTable(w, extra)
	}
	fmt.Fprintf(w, "\n%d lease objects: %s\n", len(j.Leases), summary(j.Counts))
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
	fmt.Fprintln(tw, "ID\tSTATE\tVERSION\tAGE\tLEASE\tRESERVED UNTIL\tHOLDER")
	for _, l := range ls {
		cols := []string{fmt.Sprint(l.NodeID), string(l.State), "-", "-", "-", "-", ""}
		if l.Version != nil {
			cols[2] = fmt.Sprint(*l.Version)
		}
		if l.AgeMs != nil {
			cols[3] = fmtAge(*l.AgeMs)
		}
		if l.LeaseMillis != nil && *l.LeaseMillis > 0 {
			cols[4] = fmtAge(*l.LeaseMillis)
		}
		if l.ReservedUntilMs != nil && *l.ReservedUntilMs > 0 {
			cols[5] = fmtMs(*l.ReservedUntilMs)
		}
		switch {
		case l.Error != "":
			cols[6] = "error: " + l.Error
		case l.Holder != nil:
			cols[6] = *l.Holder
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

// fmtAge formats a duration in ms for humans, to the second above 10 s.
func fmtAge(ms int64) string {
	d := time.Duration(ms) * time.Millisecond
	if d >= 10*time.Second || d <= -10*time.Second {
		d = d.Round(time.Second)
	}
	return d.String()
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
