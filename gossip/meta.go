package gossip

import "encoding/json"

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

// metaCluster returns the cluster a member's metadata names ("" for none, or
// for metadata that is not ours at all).
func metaCluster(b []byte) string {
	var m metaJSON
	if len(b) == 0 || json.Unmarshal(b, &m) != nil {
		return ""
	}
	return m.Cluster
}
