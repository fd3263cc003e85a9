// Package faults is nodeid's Jepsen-style fault suite: real nodeid-broker
// processes on a real MinIO, each behind its own fault-injecting HTTP proxy
// ([Proxy]), under a seeded schedule of kills, pauses, partitions, ambiguous
// writes, 409 storms, 5xx answers, clock skew and MinIO restarts. Every ID the
// brokers hand out is recorded with the broker, the time and the broker's
// health, and the history is checked afterwards ([Check]): no ID twice, lease
// versions that only grow, no ID from a broker after its /health went 503 or
// after a successor took its node ID over, the right exit codes, released
// leases, no corrupt object. Every broker also campaigns for one election
// (--elect jobs) and its /leader answers are checked: no two brokers answer
// self for one term, and terms only go up, so that a deposed leader
// answering self after its successor did is caught (the election's fence).
// TestMutationNoFence asserts that these checks, and the node ID's, catch
// the broker built with the fence broken (NODEID_MUTATION=nofence) when the
// leader is stalled for longer than the store takes to elect its successor.
// The Read scenarios (TestFaultsRead, TestStormsRead, TestMutationNoFenceRead,
// TestClockFaultsRead) run the brokers with keep-alive by reads
// (--keepalive read): conditional GETs answered 304 are in the checked store
// history, and the run counts the challenges, confirms and answers the store
// applied (CountChallenges).
//
// The proxy, the schedule and the checker are ordinary code, unit-tested by
// `go test ./test/faults`. The scenarios need the MinIO binary and take minutes,
// so they build only with the faults tag: `go test -tags faults ./test/faults`.
// See docs/evidence/faults.md.
package faults
