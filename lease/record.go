package lease

import (
	"encoding/json"
	"fmt"
	"net"
	"strconv"
	"time"
)

// RecordSchema is the schema version of lease records this package reads and writes.
const RecordSchema = 1

// Sanity bounds of the codec. They reject garbage, not configuration: the provider
// applies its own, tighter, maximum lease duration.
const (
	// MaxLeaseMillis is the longest lease a record may state (24 hours).
	MaxLeaseMillis = 24 * 60 * 60 * 1000
	// MaxNodeID is the highest node ID a record or manifest may name (22 node bits).
	MaxNodeID = 1<<22 - 1
	// MaxHolderLen is the longest holder identity, in bytes.
	MaxHolderLen = 1024
	// MaxValueLen is the longest holder value, in bytes.
	MaxValueLen = 4096
	// MaxGossipLen is the longest gossip address, in bytes: a DNS name of
	// 253 bytes, a colon and a port.
	MaxGossipLen = 259
	// maxUnixMillis bounds timestamps: 2^53 ms, beyond any 41-bit layout.
	maxUnixMillis = 1 << 53
)

// Record is the content of one lease object, <prefix><nodeId>.json.
type Record struct {
	// NodeID is the ID this object leases; it must equal the ID in its key.
	NodeID int
	// Holder is the task identity of the holder; empty means free.
	Holder string
	// Value is an opaque string the holder publishes with its lease (an
	// election's campaign value, such as the leader's address); empty when
	// free. Absent on the wire when empty, so records without one are byte for
	// byte what older versions wrote.
	Value string
	// Gossip is the address ("host:port") of the holder's gossip member, for
	// other tasks to join: advisory, a seed list kept in the bucket, never
	// trusted for safety. Empty when free or when the holder gossips not;
	// absent on the wire when empty, so records without one are byte for
	// byte what older versions wrote.
	Gossip string
	// Version is nodeIdVersion: +1 at every acquisition, never decreases. It is
	// the fencing token of the holder.
	Version int64
	// LeaseMillis is the lease duration the holder promises to honour, in ms.
	LeaseMillis int64
	// RenewedAt and ExpiresAt are the holder's wall clock, for humans and
	// dashboards only; nothing uses them for safety. Zero when free.
	RenewedAt, ExpiresAt time.Time
	// ReservedUntilMs is the highest Snowflake timestamp (Unix ms) the holder may
	// issue until its next write; a successor issues only timestamps above it.
	ReservedUntilMs int64
	// KnownNodes maps node ID to version as the holder last saw them via gossip.
	KnownNodes map[int]int64
	// WriteID is new at every write (16 hex digits): it makes every body unique
	// and lets a write whose outcome is unknown be recognised on read-back.
	WriteID string
	// Challenge is set on a challenge or a confirm of read mode (see
	// Challenge); nil on every other record, and then absent on the wire.
	Challenge *Challenge
}

// Challenge is what a challenge of read mode adds to the holder's record,
// which it copies otherwise unchanged (docs/evidence/design.md section 11): a task
// that wants a held ID writes the challenge by CAS on the holder's record,
// then, once that write is answered 2xx, the confirm by CAS on the
// challenge. The holder answers either by a write of its own on its ETag;
// anyone may take a confirm that stood its window on the store's clock.
type Challenge struct {
	// Of is the writeId of the holder's write that the challenge copies.
	Of string
	// By is the challenger's task identity.
	By string
	// Confirmed marks the confirm; false on the challenge.
	Confirmed bool
	// WindowMillis is the cluster's window W, in ms: a confirm may be taken
	// once its age on the store's clock passes it (see Record.TakeableAfter).
	WindowMillis int64
}

// challengeWire is the JSON form of a Challenge.
type challengeWire struct {
	Of           string `json:"of"`
	By           string `json:"by"`
	Confirmed    bool   `json:"confirmed,omitempty"`
	WindowMillis int64  `json:"windowMillis"`
}

// TakeableAfter is how long after its last write, on the store's clock, the
// record may be judged expired (Expired): its lease, or on a confirm the
// window.
func (r *Record) TakeableAfter() time.Duration {
	if c := r.Challenge; c != nil && c.Confirmed {
		return time.Duration(c.WindowMillis) * time.Millisecond
	}
	return r.Lease()
}

// Free reports whether no one holds the lease.
func (r *Record) Free() bool { return r.Holder == "" }

// Lease returns the lease duration the record states.
func (r *Record) Lease() time.Duration { return time.Duration(r.LeaseMillis) * time.Millisecond }

// recordWire is the JSON form; pointers mark the fields that must be present.
type recordWire struct {
	Schema          *int           `json:"schema"`
	NodeID          *int           `json:"nodeId"`
	Holder          string         `json:"holder"`
	Value           string         `json:"value,omitempty"`
	Gossip          string         `json:"gossip,omitempty"`
	Version         *int64         `json:"version"`
	LeaseMillis     int64          `json:"leaseMillis"`
	RenewedAt       time.Time      `json:"renewedAt,omitzero"`
	ExpiresAt       time.Time      `json:"expiresAt,omitzero"`
	ReservedUntilMs int64          `json:"reservedUntilMs"`
	KnownNodes      map[int]int64  `json:"knownNodes,omitempty"`
	WriteID         *string        `json:"writeId"`
	Challenge       *challengeWire `json:"challenge,omitempty"`
}

// DecodeRecord decodes the body of the lease object for node ID id. Anything but
// a well-formed schema-1 record for that ID gives an error wrapping ErrCorrupt.
func DecodeRecord(data []byte, id int) (Record, error) {
	var w recordWire
	if err := decodeStrict(data, &w); err != nil {
		return Record{}, err
	}
	switch {
	case w.Schema == nil:
		return Record{}, corruptf("schema missing")
	case *w.Schema != RecordSchema:
		return Record{}, corruptf("unknown schema %d (want %d)", *w.Schema, RecordSchema)
	case w.NodeID == nil:
		return Record{}, corruptf("nodeId missing")
	case *w.NodeID != id:
		return Record{}, corruptf("nodeId %d does not match its key's ID %d", *w.NodeID, id)
	case w.Version == nil:
		return Record{}, corruptf("version missing")
	case w.WriteID == nil:
		return Record{}, corruptf("writeId missing")
	}
	r := Record{
		NodeID: *w.NodeID, Holder: w.Holder, Value: w.Value, Gossip: w.Gossip, Version: *w.Version, LeaseMillis: w.LeaseMillis,
		RenewedAt: w.RenewedAt, ExpiresAt: w.ExpiresAt, ReservedUntilMs: w.ReservedUntilMs,
		KnownNodes: w.KnownNodes, WriteID: *w.WriteID,
	}
	if c := w.Challenge; c != nil {
		r.Challenge = &Challenge{Of: c.Of, By: c.By, Confirmed: c.Confirmed, WindowMillis: c.WindowMillis}
	}
	if err := r.Validate(); err != nil {
		return Record{}, err
	}
	return r, nil
}

// Validate checks every field against the codec's bounds; the error wraps ErrCorrupt.
func (r *Record) Validate() error {
	switch {
	case r.NodeID < 0 || r.NodeID > MaxNodeID:
		return corruptf("nodeId %d out of range 0..%d", r.NodeID, MaxNodeID)
	case r.Version < 0:
		return corruptf("negative version %d", r.Version)
	case len(r.Holder) > MaxHolderLen:
		return corruptf("holder of %d bytes exceeds %d", len(r.Holder), MaxHolderLen)
	case len(r.Value) > MaxValueLen:
		return corruptf("value of %d bytes exceeds %d", len(r.Value), MaxValueLen)
	case r.Holder == "" && r.Value != "":
		return corruptf("a value without a holder")
	case r.Holder == "" && r.Gossip != "":
		return corruptf("a gossip address without a holder")
	case r.Gossip != "" && !ValidGossip(r.Gossip):
		return corruptf("gossip %q is not host:port of at most %d bytes", r.Gossip, MaxGossipLen)
	case r.LeaseMillis < 0 || r.LeaseMillis > MaxLeaseMillis:
		return corruptf("leaseMillis %d out of range 0..%d", r.LeaseMillis, MaxLeaseMillis)
	case r.Holder != "" && r.LeaseMillis == 0:
		return corruptf("held by %q with leaseMillis 0", r.Holder)
	case r.ReservedUntilMs < 0 || r.ReservedUntilMs > maxUnixMillis:
		return corruptf("reservedUntilMs %d out of range", r.ReservedUntilMs)
	case !validWriteID(r.WriteID):
		return corruptf("writeId %q is not 16 lowercase hex digits", r.WriteID)
	case !encodableTime(r.RenewedAt) || !encodableTime(r.ExpiresAt):
		return corruptf("renewedAt or expiresAt outside years 1..9999")
	}
	for id, v := range r.KnownNodes {
		if !KnownNodeValid(id, v) {
			return corruptf("knownNodes entry %d -> %d out of range", id, v)
		}
	}
	return r.validChallenge()
}

// validChallenge checks r's challenge, if any: on a held record, naming a
// writeId, by a task, with a window below the lease.
func (r *Record) validChallenge() error {
	c := r.Challenge
	switch {
	case c == nil:
		return nil
	case r.Holder == "":
		return corruptf("a challenge of a free record")
	case !validWriteID(c.Of) || c.Of == r.WriteID:
		return corruptf("challenge of writeId %q: not 16 lowercase hex digits, or the challenge's own", c.Of)
	case c.By == "" || len(c.By) > MaxHolderLen:
		return corruptf("challenger of %d bytes: must be 1..%d", len(c.By), MaxHolderLen)
	case c.WindowMillis <= 0 || c.WindowMillis >= r.LeaseMillis:
		return corruptf("challenge windowMillis %d out of range 1..%d (below leaseMillis)", c.WindowMillis, r.LeaseMillis-1)
	}
	return nil
}

// ValidGossip reports whether addr may be a record's gossip address: "host:port"
// with a host and a port 1..65535, at most MaxGossipLen bytes.
func ValidGossip(addr string) bool {
	host, port, err := net.SplitHostPort(addr)
	if err != nil || host == "" || len(addr) > MaxGossipLen {
		return false
	}
	p, err := strconv.Atoi(port)
	return err == nil && p >= 1 && p <= 65535
}

// KnownNodeValid reports whether a record may carry the knownNodes entry id
// -> version: node IDs 0..MaxNodeID, versions not negative. Gossip is
// advisory: an entry that fails it is dropped before a write, never written.
func KnownNodeValid(id int, version int64) bool {
	return id >= 0 && id <= MaxNodeID && version >= 0
}

// Encode returns the JSON body of r after validating it; it refuses (with an error
// wrapping ErrCorrupt) to encode a record that DecodeRecord would reject.
func (r *Record) Encode() ([]byte, error) {
	if err := r.Validate(); err != nil {
		return nil, fmt.Errorf("encode record %d: %w", r.NodeID, err)
	}
	schema, id, version, writeID := RecordSchema, r.NodeID, r.Version, r.WriteID
	var challenge *challengeWire
	if c := r.Challenge; c != nil {
		challenge = &challengeWire{Of: c.Of, By: c.By, Confirmed: c.Confirmed, WindowMillis: c.WindowMillis}
	}
	return json.Marshal(recordWire{
		Schema: &schema, NodeID: &id, Holder: r.Holder, Value: r.Value, Gossip: r.Gossip, Version: &version,
		LeaseMillis: r.LeaseMillis, RenewedAt: r.RenewedAt.UTC(), ExpiresAt: r.ExpiresAt.UTC(),
		ReservedUntilMs: r.ReservedUntilMs, KnownNodes: r.KnownNodes, WriteID: &writeID, Challenge: challenge,
	})
}

// encodableTime reports whether t is zero or has a UTC year that RFC 3339 can write.
func encodableTime(t time.Time) bool {
	y := t.UTC().Year()
	return t.IsZero() || (y >= 1 && y <= 9999)
}
