package snowflake

import (
	"fmt"
	"math"
	"time"
)

// DefaultEpochMs is the epoch of DefaultLayout: 2025-01-01T00:00:00Z in Unix
// milliseconds. With 41 timestamp bits the layout lasts until 2094.
const DefaultEpochMs int64 = 1735689600000

// maxUnixMs is the last Unix millisecond whose nanoseconds fit an int64 (in
// 2262): the generator works in nanoseconds, so every instant it handles must.
const maxUnixMs = math.MaxInt64 / int64(time.Millisecond)

// A Layout is the bit split and the epoch of an ID space. An ID is a
// non-negative int64, most significant bits first:
//
//	0 | timestamp (TimestampBits) | node ID (NodeBits) | sequence (SequenceBits)
//
// The timestamp counts milliseconds since EpochMs. Every generator that
// shares an ID space must use the same Layout: two layouts in one space
// collide, which is why nodeid records the layout in the cluster manifest.
// The zero Layout is invalid; start from DefaultLayout.
type Layout struct {
	// TimestampBits is the width of the millisecond timestamp. 41 bits
	// (the default) last 69 years from the epoch. At least 32.
	TimestampBits int
	// NodeBits is the width of the node ID: 2^NodeBits node IDs, 0 to
	// 2^NodeBits-1. Default 10 (1024 nodes). May be 0 (a single node).
	NodeBits int
	// SequenceBits is the width of the per-millisecond sequence: one node
	// issues at most 2^SequenceBits IDs per millisecond. Default 12 (4096,
	// so 4,096,000 IDs per second per node). At least 1.
	SequenceBits int
	// EpochMs is the instant of timestamp 0, in Unix milliseconds. Default
	// DefaultEpochMs (2025-01-01T00:00:00Z). A later epoch leaves more of
	// the timestamp range for the future; it cannot change once IDs exist.
	EpochMs int64
}

// DefaultLayout returns the classic Snowflake split, 41/10/12, with the epoch
// DefaultEpochMs.
func DefaultLayout() Layout {
	return Layout{TimestampBits: 41, NodeBits: 10, SequenceBits: 12, EpochMs: DefaultEpochMs}
}

// Validate reports whether l is usable: the three widths sum to 63 (the sign
// bit stays 0, so IDs are positive int64s), TimestampBits is at least 32,
// SequenceBits at least 1, NodeBits at least 0, and EpochMs is between 0 and
// the year 2262. Errors wrap ErrInvalidLayout.
func (l Layout) Validate() error {
	switch {
	case l.TimestampBits < 32:
		return fmt.Errorf("%w: TimestampBits is %d, want at least 32", ErrInvalidLayout, l.TimestampBits)
	case l.NodeBits < 0:
		return fmt.Errorf("%w: NodeBits is %d, want at least 0", ErrInvalidLayout, l.NodeBits)
	case l.SequenceBits < 1:
		return fmt.Errorf("%w: SequenceBits is %d, want at least 1", ErrInvalidLayout, l.SequenceBits)
	case l.TimestampBits+l.NodeBits+l.SequenceBits != 63:
		return fmt.Errorf("%w: TimestampBits+NodeBits+SequenceBits is %d+%d+%d=%d, want 63",
			ErrInvalidLayout, l.TimestampBits, l.NodeBits, l.SequenceBits,
			l.TimestampBits+l.NodeBits+l.SequenceBits)
	case l.EpochMs < 0 || l.EpochMs > maxUnixMs:
		return fmt.Errorf("%w: EpochMs is %d, want 0 to %d", ErrInvalidLayout, l.EpochMs, maxUnixMs)
	}
	return nil
}

// MaxNodeID returns the highest node ID of l: 2^NodeBits-1.
func (l Layout) MaxNodeID() int64 { return 1<<l.NodeBits - 1 }

// MaxSequence returns the highest sequence number of l: 2^SequenceBits-1.
func (l Layout) MaxSequence() int64 { return 1<<l.SequenceBits - 1 }

// MaxTimeMs returns the last Unix millisecond that l can encode (capped at
// the year 2262, where Unix nanoseconds leave int64).
func (l Layout) MaxTimeMs() int64 {
	rel := int64(1)<<l.TimestampBits - 1
	if rel > maxUnixMs-l.EpochMs {
		return maxUnixMs
	}
	return l.EpochMs + rel
}

// String returns the layout as "41/10/12 epoch 2025-01-01T00:00:00Z", the
// form nodeid uses in error messages about mismatched layouts.
func (l Layout) String() string {
	return fmt.Sprintf("%d/%d/%d epoch %s", l.TimestampBits, l.NodeBits, l.SequenceBits,
		time.UnixMilli(l.EpochMs).UTC().Format("2006-01-02T15:04:05.000Z07:00"))
}

// Parts are the three fields of an ID, decoded with a Layout.
type Parts struct {
	// TimeMs is the timestamp in Unix milliseconds (the layout's epoch
	// already added).
	TimeMs int64
	// NodeID is the node ID of the generator that issued the ID.
	NodeID int64
	// Seq is the sequence number within the millisecond.
	Seq int64
}

// Time returns TimeMs as a time.Time.
func (p Parts) Time() time.Time { return time.UnixMilli(p.TimeMs) }

// Compose builds the ID with the given parts. It fails, wrapping
// ErrInvalidID, when a part does not fit l (a time before the epoch or past
// MaxTimeMs, a node ID or sequence number out of range), and with
// ErrInvalidLayout when l is invalid. Compose is the inverse of Decode.
func (l Layout) Compose(p Parts) (ID, error) {
	if err := l.Validate(); err != nil {
		return 0, err
	}
	switch {
	case p.TimeMs < l.EpochMs || p.TimeMs > l.MaxTimeMs():
		return 0, fmt.Errorf("%w: time %d ms is outside the layout's range %d to %d", ErrInvalidID, p.TimeMs, l.EpochMs, l.MaxTimeMs())
	case p.NodeID < 0 || p.NodeID > l.MaxNodeID():
		return 0, fmt.Errorf("%w: node ID %d is outside 0 to %d", ErrInvalidID, p.NodeID, l.MaxNodeID())
	case p.Seq < 0 || p.Seq > l.MaxSequence():
		return 0, fmt.Errorf("%w: sequence %d is outside 0 to %d", ErrInvalidID, p.Seq, l.MaxSequence())
	}
	ts := p.TimeMs - l.EpochMs
	return ID(ts<<(l.NodeBits+l.SequenceBits) | p.NodeID<<l.SequenceBits | p.Seq), nil
}

// Decode splits id into its parts under l. It fails, wrapping ErrInvalidID,
// for a negative id (never issued: the sign bit is always 0), a timestamp
// past the year 2262, and with ErrInvalidLayout when l is invalid.
func (l Layout) Decode(id ID) (Parts, error) {
	if err := l.Validate(); err != nil {
		return Parts{}, err
	}
	if id < 0 {
		return Parts{}, fmt.Errorf("%w: %d is negative", ErrInvalidID, int64(id))
	}
	ts := int64(id) >> (l.NodeBits + l.SequenceBits)
	if ts > maxUnixMs-l.EpochMs {
		return Parts{}, fmt.Errorf("%w: %d has a timestamp past the year 2262", ErrInvalidID, int64(id))
	}
	return Parts{
		TimeMs: l.EpochMs + ts,
		NodeID: int64(id) >> l.SequenceBits & l.MaxNodeID(),
		Seq:    int64(id) & l.MaxSequence(),
	}, nil
}

// Parse parses the decimal form of an ID (see the package-level Parse) and
// decodes it under l.
func (l Layout) Parse(s string) (Parts, error) {
	id, err := Parse(s)
	if err != nil {
		return Parts{}, err
	}
	return l.Decode(id)
}
