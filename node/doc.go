// Package node runs a whole nodeid node: the one safe composition of a node
// ID claim (package nodeid), the Snowflake generator it fences (package
// snowflake), gossip (package gossip), the id file, health, readiness,
// metrics and an HTTP API. nodeid-broker serve and the terminal demo are thin
// users of it; a Go service embeds it the same way.
//
// # What the composition guarantees
//
// The generator issues IDs only while the claim's monotonic fence is up and
// the node is not closing; its floor is the predecessor's reservation, and
// it never issues above the reservation of the claim's last write. The
// generator reads the clock the reservations are stamped with
// (nodeid.SnowflakeClock). A peer gossiping this node's ID with a higher
// version fences the claim at once. After taking over an expired lease,
// readiness waits for peers to see the new version (bounded). Close keeps
// the order that makes a graceful handover safe: fence, remove the id file,
// give the application its grace, release (lowering the reservation only to
// what was really issued), leave gossip. Health answers 503 with a reason
// before a claim exists, while closing, once fenced or lost, and when the
// generator has been unable to issue for longer than MaxIssueStall.
//
// # Use
//
//	n, err := node.New(store, node.DefaultConfig())
//	if err != nil { ... }
//	go http.ListenAndServe(":8080", n.Handler()) // 503 until Start has an ID
//	err = n.Run(ctx) // store.Check, probe, acquire; then until ctx ends or the lease is lost
//	switch {
//	case errors.Is(err, nodeid.ErrLeaseLost):
//		os.Exit(3) // let the orchestrator replace the task
//	case err != nil:
//		os.Exit(1) // start-up failed: the error says what to fix
//	}
//
// Start checks the store first (lease.Check: one request, bounded by the
// store's RequestTimeout, 5 s by default, and fails at once with the store's
// error when it gets no answer or a refusal), then probes it, then blocks
// until the node serves IDs (up to Provider.AcquireTimeout);
// Run is Start, then a wait for ctx or a loss, then Close. Next and NextN
// issue IDs in process; Handler serves /ids, /status, /health, /ready and
// /metrics. RunChild is Run with a child process as the ID's user (see
// Supervise): started past the floor, stopped before the fence, killed with
// the process.
//
// docs/evidence/design.md in the repository states the protocol and the safety
// argument.
package node
