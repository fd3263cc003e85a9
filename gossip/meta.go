package gossip

import "encoding/json"

// claim is a node ID and its version, as one member advertises it.
type claim struct {
	nodeID  int
	version int64
}

// metaJSON is the node metadata: {"nodeId":3,"version":7}, or {"nodeId":-1}
// for a member that holds no ID. Unknown fields are ignored, so that later
// releases can add some.
type metaJSON struct {
	NodeID  *int   `json:"nodeId"`
	Version *int64 `json:"version,omitempty"`
}

// encodeMeta returns the metadata advertising c (nil: no ID).
func encodeMeta(c *claim) []byte {
	none := -1
	m := metaJSON{NodeID: &none}
	if c != nil {
		m = metaJSON{NodeID: &c.nodeID, Version: &c.version}
	}
	b, err := json.Marshal(m)
	if err != nil {
		panic(err) // two integers always marshal
	}
	return b
}

// decodeMeta returns the claim a member advertises, and false when it
// advertises none: empty, garbage, a negative node ID or a missing or negative
// version.
func decodeMeta(b []byte) (claim, bool) {
	if len(b) == 0 {
		return claim{}, false
	}
	var m metaJSON
	if json.Unmarshal(b, &m) != nil || m.NodeID == nil || *m.NodeID < 0 || m.Version == nil || *m.Version < 0 {
		return claim{}, false
	}
	return claim{nodeID: *m.NodeID, version: *m.Version}, true
}
