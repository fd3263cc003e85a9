package lease

import (
	"encoding/json"
	"fmt"
	"time"

	"github.com/nodeid/nodeid/snowflake"
)

// ManifestSchema is the schema version of the cluster manifest.
const ManifestSchema = 1

// Manifest is the cluster manifest, <prefix>cluster.json: created once by the
// first task, read by every task at start. Two Snowflake layouts or epochs in one
// ID space would collide, so a task whose own differ refuses to run.
type Manifest struct {
	// ClusterSize is the number of node IDs, FirstNodeID..FirstNodeID+ClusterSize-1.
	ClusterSize int
	// FirstNodeID is the lowest node ID of the cluster (0 unless set): clusters
	// whose Snowflake IDs must never collide (one per region or bucket) own
	// disjoint ranges. Immutable: a resize keeps it.
	FirstNodeID int
	// Layout is the Snowflake layout and epoch of the ID space. On the wire its
	// fields are flat keys of the manifest (timestampBits, nodeBits,
	// sequenceBits, epochMs). Validate is stricter than Layout.Validate: every
	// width is positive and NodeBits is at most 22.
	Layout snowflake.Layout
	// CreatedAt is the creator's wall clock, for humans only.
	CreatedAt time.Time
	// Filled is set once every lease object of the range has been created.
	// Before, a missing object was never created and is free: a task may take it
	// by creating it held (If-None-Match: *), which is what lets a whole fleet
	// start at once without creating every object N times. After, a missing
	// object was deleted by someone: nodeid leaves its ID out (no floor for it
	// is safe whatever the clocks) until an operator restores it with
	// nodeidctl repair. Before Filled, deletion is seen only when gossip knows a
	// version of the ID (nodeid then treats it as deleted too); an object
	// deleted while held and unknown to gossip is taken as never created.
	Filled bool
	// KeepAlive is how the cluster's holders keep their leases alive:
	// KeepAliveWrite (a conditional write every renewal; also the zero
	// value, and left out on the wire so that such manifests keep the bytes
	// they always had) or KeepAliveRead (mostly conditional reads,
	// docs/evidence/design.md section 11). Immutable, with WindowMillis and
	// BackstopMillis: a resize keeps them.
	KeepAlive KeepAlive
	// WindowMillis is W in read mode, the time a holder's read or write keeps
	// its fence up (less its safety margin); zero in write mode.
	WindowMillis int64
	// BackstopMillis is B in read mode, the lease every record states
	// (leaseMillis): the ordinary expiry rule takes a silent holder's ID only
	// after it. Zero in write mode.
	BackstopMillis int64
	// WriteID is new at every write, as in Record.
	WriteID string
}

// KeepAlive is how the holders of a cluster keep their leases alive: the
// manifest's keepAlive.
type KeepAlive string

const (
	// KeepAliveWrite renews every lease with a conditional write (the
	// default). The empty KeepAlive means it too.
	KeepAliveWrite KeepAlive = "write"
	// KeepAliveRead keeps a lease alive mostly with conditional reads of the
	// holder's own object, and a backstop write now and then
	// (docs/evidence/design.md section 11).
	KeepAliveRead KeepAlive = "read"
)

// Mode returns k, or KeepAliveWrite for the empty KeepAlive.
func (k KeepAlive) Mode() KeepAlive {
	if k == "" {
		return KeepAliveWrite
	}
	return k
}

// maxBackstopMillis bounds BackstopMillis: a day, as MaxLeaseDuration.
const maxBackstopMillis = 24 * 60 * 60 * 1000

type manifestWire struct {
	Schema         *int      `json:"schema"`
	ClusterSize    int       `json:"clusterSize"`
	FirstNodeID    int       `json:"firstNodeId,omitempty"`
	TimestampBits  int       `json:"timestampBits"`
	NodeBits       int       `json:"nodeBits"`
	SequenceBits   int       `json:"sequenceBits"`
	EpochMs        int64     `json:"epochMs"`
	CreatedAt      time.Time `json:"createdAt,omitzero"`
	Filled         bool      `json:"filled,omitempty"`
	KeepAlive      KeepAlive `json:"keepAlive,omitempty"`
	WindowMillis   int64     `json:"windowMillis,omitempty"`
	BackstopMillis int64     `json:"backstopMillis,omitempty"`
	WriteID        string    `json:"writeId"`
}

// DecodeManifest decodes a cluster manifest strictly; errors wrap ErrCorrupt.
func DecodeManifest(data []byte) (Manifest, error) {
	var w manifestWire
	if err := decodeStrict(data, &w); err != nil {
		return Manifest{}, err
	}
	switch {
	case w.Schema == nil:
		return Manifest{}, corruptf("manifest schema missing")
	case *w.Schema != ManifestSchema:
		return Manifest{}, corruptf("unknown manifest schema %d (want %d)", *w.Schema, ManifestSchema)
	}
	m := Manifest{
		ClusterSize: w.ClusterSize, FirstNodeID: w.FirstNodeID,
		Layout: snowflake.Layout{
			TimestampBits: w.TimestampBits, NodeBits: w.NodeBits, SequenceBits: w.SequenceBits, EpochMs: w.EpochMs,
		},
		CreatedAt: w.CreatedAt, Filled: w.Filled, WriteID: w.WriteID,
		KeepAlive: w.KeepAlive, WindowMillis: w.WindowMillis, BackstopMillis: w.BackstopMillis,
	}
	if m.KeepAlive == KeepAliveWrite {
		m.KeepAlive = "" // the same mode; Encode leaves it out
	}
	if err := m.Validate(); err != nil {
		return Manifest{}, err
	}
	return m, nil
}

// Validate checks the layout and the cluster size; the error wraps ErrCorrupt.
func (m *Manifest) Validate() error {
	l := m.Layout
	switch {
	case l.TimestampBits < 1 || l.NodeBits < 1 || l.SequenceBits < 1 || l.NodeBits > 22:
		return corruptf("manifest layout %d/%d/%d has a width out of range", l.TimestampBits, l.NodeBits, l.SequenceBits)
	case l.TimestampBits+l.NodeBits+l.SequenceBits != 63:
		return corruptf("manifest layout %d+%d+%d bits does not sum to 63", l.TimestampBits, l.NodeBits, l.SequenceBits)
	case m.ClusterSize < 1 || m.ClusterSize > 1<<l.NodeBits:
		return corruptf("manifest clusterSize %d out of range 1..%d", m.ClusterSize, 1<<l.NodeBits)
	case m.FirstNodeID < 0 || m.FirstNodeID > 1<<l.NodeBits-m.ClusterSize:
		return corruptf("manifest node IDs %s leave 0..%d (2^nodeBits)", m.RangeString(), 1<<l.NodeBits-1)
	case l.EpochMs < 0 || l.EpochMs > maxUnixMillis:
		return corruptf("manifest epochMs %d out of range", l.EpochMs)
	case !validWriteID(m.WriteID):
		return corruptf("manifest writeId %q is not 16 lowercase hex digits", m.WriteID)
	case !encodableTime(m.CreatedAt):
		return corruptf("manifest createdAt outside years 1..9999")
	}
	return m.validateKeepAlive()
}

// validateKeepAlive checks the mode and its timings: W and B in read mode,
// 0 < W < B <= a day, and neither in write mode.
func (m *Manifest) validateKeepAlive() error {
	switch m.KeepAlive.Mode() {
	case KeepAliveWrite:
		if m.WindowMillis != 0 || m.BackstopMillis != 0 {
			return corruptf("manifest keepAlive %q with windowMillis %d and backstopMillis %d: only read mode has them",
				KeepAliveWrite, m.WindowMillis, m.BackstopMillis)
		}
	case KeepAliveRead:
		if m.WindowMillis < 1 || m.BackstopMillis <= m.WindowMillis || m.BackstopMillis > maxBackstopMillis {
			return corruptf("manifest keepAlive %q needs 0 < windowMillis < backstopMillis <= %d, not %d and %d",
				KeepAliveRead, maxBackstopMillis, m.WindowMillis, m.BackstopMillis)
		}
	default:
		return corruptf("manifest keepAlive %q is not %q or %q", m.KeepAlive, KeepAliveWrite, KeepAliveRead)
	}
	return nil
}

// Encode returns the JSON body of m after validating it.
func (m *Manifest) Encode() ([]byte, error) {
	if err := m.Validate(); err != nil {
		return nil, fmt.Errorf("encode manifest: %w", err)
	}
	schema, l := ManifestSchema, m.Layout
	return json.Marshal(manifestWire{
		Schema: &schema, ClusterSize: m.ClusterSize, FirstNodeID: m.FirstNodeID, TimestampBits: l.TimestampBits,
		NodeBits: l.NodeBits, SequenceBits: l.SequenceBits, EpochMs: l.EpochMs,
		CreatedAt: m.CreatedAt.UTC(), Filled: m.Filled, WriteID: m.WriteID,
		KeepAlive: keepAliveWire(m.KeepAlive), WindowMillis: m.WindowMillis, BackstopMillis: m.BackstopMillis,
	})
}

// keepAliveWire is the manifest's keepAlive on the wire: left out in write
// mode, so that the manifests of such clusters keep their bytes.
func keepAliveWire(k KeepAlive) KeepAlive {
	if k.Mode() == KeepAliveWrite {
		return ""
	}
	return k
}

// Owns reports whether node ID id is in the cluster's range.
func (m *Manifest) Owns(id int) bool { return id >= m.FirstNodeID && id-m.FirstNodeID < m.ClusterSize }

// RangeString formats the cluster's node IDs, "0..1023".
func (m *Manifest) RangeString() string {
	return fmt.Sprintf("%d..%d", m.FirstNodeID, m.FirstNodeID+m.ClusterSize-1)
}

// SameLayout reports whether m and o describe one ID space: the same three widths
// and the same epoch. Cluster size may differ.
func (m *Manifest) SameLayout(o *Manifest) bool { return m.Layout == o.Layout }

// SameKeepAlive reports whether m and o keep leases alive the same way: the
// same mode, and in read mode the same W and B.
func (m *Manifest) SameKeepAlive(o *Manifest) bool {
	return m.KeepAlive.Mode() == o.KeepAlive.Mode() && m.WindowMillis == o.WindowMillis && m.BackstopMillis == o.BackstopMillis
}

// KeepAliveString formats the keep-alive mode for messages: "keep-alive
// write", or "keep-alive read, window 15s, backstop 1m0s".
func (m *Manifest) KeepAliveString() string {
	if m.KeepAlive.Mode() != KeepAliveRead {
		return "keep-alive " + string(m.KeepAlive.Mode())
	}
	return fmt.Sprintf("keep-alive %s, window %v, backstop %v", KeepAliveRead,
		time.Duration(m.WindowMillis)*time.Millisecond, time.Duration(m.BackstopMillis)*time.Millisecond)
}

// LayoutString formats the layout and epoch for error messages.
func (m *Manifest) LayoutString() string {
	l := m.Layout
	return fmt.Sprintf("layout %d/%d/%d epoch %d", l.TimestampBits, l.NodeBits, l.SequenceBits, l.EpochMs)
}
