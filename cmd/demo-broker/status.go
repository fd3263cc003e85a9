package main

// StatusResponse is the JSON body of GET /status: a contract that the demo,
// nodeidctl's tests and black-box tests rely on.
type StatusResponse struct {
	// Task is the broker's task identity (the lease holder).
	Task string `json:"task"`
	// State is "acquiring", "held", "fenced", "lost" or "released".
	State string `json:"state"`
	// NodeID and Version are -1 and 0 before an ID is held.
	NodeID  int   `json:"nodeId"`
	Version int64 `json:"version"`
	// LeaseAgeMs is the time since the last successful lease write, on the
	// store's clock when known (Date of the write's response plus the local
	// monotonic time since), in ms.
	LeaseAgeMs int64 `json:"leaseAgeMs"`
	// FloorMs and ReservedUntilMs are the Snowflake floor and reservation (Unix ms).
	FloorMs         int64 `json:"floorMs"`
	ReservedUntilMs int64 `json:"reservedUntilMs"`
	// KnownNodes is the gossip view: node ID (decimal string) -> version.
	KnownNodes map[string]int64 `json:"knownNodes"`
	// IDsIssued counts the IDs this broker handed out.
	IDsIssued int64 `json:"idsIssued"`
	// Ready reports the readiness gate.
	Ready bool `json:"ready"`
	// Error says why the broker is not serving, when it is not.
	Error string `json:"error,omitempty"`
}

// IDsResponse is the JSON body of GET /ids?n=K. IDs are decimal strings:
// JavaScript loses precision above 2^53.
type IDsResponse struct {
	NodeID  int      `json:"nodeId"`
	Version int64    `json:"version"`
	IDs     []string `json:"ids"`
}
