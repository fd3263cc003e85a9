package node

import "github.com/nodeid/nodeid/health"

// StatusResponse is the JSON body of GET /status (and Node.Status): a
// contract that the demo, nodeidctl's tests and black-box tests rely on.
type StatusResponse struct {
	// Task is the node's task identity (the lease holder).
	Task string `json:"task"`
	// State is one of States: "acquiring", "held", "fenced", "jeopardy",
	// "lost" or "released".
	State string `json:"state"`
	// JeopardyMs is how long the lease has been in jeopardy (fenced,
	// renewing on its last write), in ms; omitted when it is not.
	JeopardyMs int64 `json:"jeopardyMs,omitempty"`
	// Challenged is true while the node answers a challenge of its lease
	// (read mode: a task that took it for dead wrote one; the node's next
	// write, at once, clears it); omitted when not.
	Challenged bool `json:"challenged,omitempty"`
	// NodeID and Version are -1 and 0 before an ID is held.
	NodeID  int   `json:"nodeId"`
	Version int64 `json:"version"`
	// LeaseAgeMs is the time since the last successful lease write was
	// sent, on this task's monotonic clock, in ms.
	LeaseAgeMs int64 `json:"leaseAgeMs"`
	// FloorMs and ReservedUntilMs are the Snowflake floor and reservation (Unix ms).
	FloorMs         int64 `json:"floorMs"`
	ReservedUntilMs int64 `json:"reservedUntilMs"`
	// AwaitingFloor is the node ID the node holds, before it serves it,
	// until this task's clock nears the ID's floor (its last holder's
	// reservation, up to a read-mode backstop ahead): state "acquiring", and
	// nodeId -1 until then. Omitted otherwise.
	AwaitingFloor *AwaitingFloorStatus `json:"awaitingFloor,omitempty"`
	// KnownNodes is the gossip view: node ID (decimal string) -> version.
	KnownNodes map[string]int64 `json:"knownNodes"`
	// ForeignMembers lists gossip members of another cluster (their metadata
	// names another cluster identity; see gossip.Config.Cluster), by name:
	// a gossip pool joined by mistake. They are reported here and never
	// obeyed: they are not in KnownNodes and fence nothing. Omitted when none.
	ForeignMembers []ForeignMember `json:"foreignMembers,omitempty"`
	// Leader is the leader of Config.Elect as this node knows it without
	// reading the store: itself while it leads. Omitted without --elect or
	// while another node (or none) leads; GET /leader says which.
	Leader *LeaderResponse `json:"leader,omitempty"`
	// Recoveries counts the times the claim recovered from a fence that
	// fell (as in IDsResponse); omitted while 0.
	Recoveries int64 `json:"recoveries,omitempty"`
	// IDsIssued counts the IDs this node handed out.
	IDsIssued int64 `json:"idsIssued"`
	// Ready reports the readiness check.
	Ready bool `json:"ready"`
	// Error says why the node is not serving, when it is not.
	Error string `json:"error,omitempty"`
	// StoreProbe is the result of the store probe run before taking an ID;
	// absent before it ran, or when Config.SkipProbe.
	StoreProbe *StoreProbeStatus `json:"storeProbe,omitempty"`
	// KeepAlive is how the node keeps its lease alive (Provider.KeepAlive)
	// and with which timings, as configured (the cluster manifest has the
	// same mode, window and backstop, or the node does not start).
	KeepAlive KeepAliveStatus `json:"keepAlive"`
}

// AwaitingFloorStatus is a node ID held until this task's clock nears its
// floor, in StatusResponse.
type AwaitingFloorStatus struct {
	NodeID  int   `json:"nodeId"`
	Version int64 `json:"version"`
	// FloorMs is the floor, Unix ms: no ID is issued below it.
	FloorMs int64 `json:"floorMs"`
	// WaitMs is how long the wait had left when last reported, in ms.
	WaitMs int64 `json:"waitMs"`
}

// KeepAliveStatus is the keep-alive of a node, in StatusResponse: the mode
// and its timings, in ms. Write mode has LeaseMs and RenewIntervalMs; read
// mode (docs/evidence/design.md section 11) WindowMs, BackstopMs (the lease every
// record states), BackstopIntervalMs (the time between backstop writes) and
// PollIntervalMs (the time between two conditional reads).
type KeepAliveStatus struct {
	// Mode is "write" or "read".
	Mode               string `json:"mode"`
	LeaseMs            int64  `json:"leaseMs,omitempty"`
	RenewIntervalMs    int64  `json:"renewIntervalMs,omitempty"`
	WindowMs           int64  `json:"windowMs,omitempty"`
	BackstopMs         int64  `json:"backstopMs,omitempty"`
	BackstopIntervalMs int64  `json:"backstopIntervalMs,omitempty"`
	PollIntervalMs     int64  `json:"pollIntervalMs,omitempty"`
}

// ForeignMember is a gossip member of another cluster, in StatusResponse.
type ForeignMember struct {
	Name    string `json:"name"`
	Addr    string `json:"addr"`
	Cluster string `json:"cluster"`
}

// IDsResponse is the JSON body of GET /ids?n=K. IDs are decimal strings:
// JavaScript loses precision above 2^53.
type IDsResponse struct {
	NodeID  int      `json:"nodeId"`
	Version int64    `json:"version"`
	IDs     []string `json:"ids"`
	// Recoveries counts the times the claim's fence fell and a write on
	// its own last ETag lifted it (jeopardy, then recovered), read in the
	// same instant as the validity that let these IDs out; omitted while
	// 0. An answer of /health or /ids that was fenced, and a later one that
	// was not, carry different counts: IDs with the count of an earlier
	// fenced answer were issued between the fence and a recovery, which
	// never happens.
	Recoveries int64 `json:"recoveries,omitempty"`
}

// HealthResponse is the JSON body of GET /health and GET /ready: the health
// package's answer with the claim's count of recoveries (as in IDsResponse),
// read in the same instant as the check; omitted while 0.
type HealthResponse struct {
	health.Response
	Recoveries int64 `json:"recoveries,omitempty"`
}

// ErrorResponse is the JSON body of a 400 or 503 from /ids, the same shape as
// the health handlers' (package health): status "bad_request" or
// "unavailable" and a reason.
type ErrorResponse struct {
	Status string `json:"status"`
	Reason string `json:"reason"`
}
