package gossip

import (
	"encoding/json"
	"fmt"
)

// MaxNodeID is the highest node ID a member may advertise: the widest
// Snowflake layout has 22 node bits (lease.MaxNodeID; gossip imports nothing
// of nodeid's). A member advertising more is misbehaving (a bug, an
// incompatible release): its claim is dropped and reported, never passed on,
// so that one bad member cannot put an entry into every task's records.
const MaxNodeID = 1<<22 - 1

// claim is a node ID and its version, as one member advertises it.
type claim struct {
	nodeID  int
	version int64
}

// metaJSON is the node metadata: {"nodeId":3,"version":7,"cluster":"…"}, or
// {"nodeId":-1,"cluster":"…"} for a member that holds no ID. Cluster is the
// member's Config.Label (its cluster identity, hashed when long); absent for a
// member without one. Unknown fields are ignored, so that later releases can
// add some.
type metaJSON struct {
	NodeID  *int   `json:"nodeId"`
	Version *int64 `json:"version,omitempty"`
	Cluster string `json:"cluster,omitempty"`
}

// encodeMeta returns the metadata advertising c (nil: no ID) in cluster.
func encodeMeta(c *claim, cluster string) []byte {
	none := -1
	m := metaJSON{NodeID: &none, Cluster: cluster}
	if c != nil {
		m = metaJSON{NodeID: &c.nodeID, Version: &c.version, Cluster: cluster}
	}
	b, err := json.Marshal(m)
	if err != nil {
		panic(err) // two integers and a string always marshal
	}
	return b
}

// decodeMeta returns the claim a member advertises, and false when it
// advertises none: empty, garbage, a negative node ID (none held) or a claim
// that checkClaim refuses.
func decodeMeta(b []byte) (claim, bool) {
	c, ok, _ := parseMeta(b)
	return c, ok
}

// parseMeta is decodeMeta, and says why a claim that is there was refused:
// bad is empty for metadata that advertises a valid claim or none at all.
func parseMeta(b []byte) (c claim, ok bool, bad string) {
	if len(b) == 0 {
		return claim{}, false, ""
	}
	var m metaJSON
	if json.Unmarshal(b, &m) != nil || m.NodeID == nil || *m.NodeID < 0 {
		return claim{}, false, ""
	}
	if m.Version == nil {
		return claim{}, false, fmt.Sprintf("node ID %d without a version", *m.NodeID)
	}
	c = claim{nodeID: *m.NodeID, version: *m.Version}
	if bad := checkClaim(c); bad != "" {
		return claim{}, false, bad
	}
	return c, true, ""
}

// checkClaim returns why c cannot be a node ID claim, "" when it can: node
// IDs 0..MaxNodeID, versions not negative.
func checkClaim(c claim) string {
	switch {
	case c.nodeID < 0 || c.nodeID > MaxNodeID:
		return fmt.Sprintf("node ID %d outside 0..%d", c.nodeID, MaxNodeID)
	case c.version < 0:
		return fmt.Sprintf("negative version %d of node ID %d", c.version, c.nodeID)
	}
	return ""
}

// metaCluster returns the cluster a member's metadata names ("" for none, or
// for metadata that is not ours at all).
func metaCluster(b []byte) string {
	var m metaJSON
	if len(b) == 0 || json.Unmarshal(b, &m) != nil {
		return ""
	}
	return m.Cluster
}
