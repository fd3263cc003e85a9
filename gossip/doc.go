// Package gossip tells the tasks of a nodeid cluster which node ID, at which
// version, each of them holds, over hashicorp/memberlist.
//
// Gossip is advisory: the lease objects in the bucket are the only authority
// over who holds a node ID. Nothing here ever grants or keeps an ID. Gossip
// serves three purposes, each of which is safe to lose:
//
//   - Hints. KnownNodes returns the highest version seen per node ID among the
//     live members. A nodeid.Provider (a Node satisfies nodeid.PeerHints) does
//     not read those IDs' leases unless the listing shows one unwritten for a
//     lease, and writes the map into its lease record. Freed closes when a
//     peer's ID leaves KnownNodes, and Rank orders the members holding no ID: a
//     waiting Acquire looks when an ID is freed, and members waiting together
//     spread their picks by rank.
//   - A second line of defence. When another member advertises this node's own
//     ID with a higher version, Config.OnConflict is called. The caller passes
//     the version to (*nodeid.Claim).ObserveVersion, which fences the claim at once.
//   - A readiness gate. After a task takes over an expired lease, WaitSeen (or
//     StartGate) holds readiness until the other members report that their
//     gossip shows the new version, or until a timeout passes.
//
// # The readiness gate
//
// memberlist cannot say whether a peer has received this member's latest
// metadata, and a peer's own metadata (512 bytes) cannot echo every version
// it has seen. So WaitSeen asks: it sends each other live member a query for
// the node ID, as a memberlist user message over UDP (encrypted like all
// gossip when a key is set), and the peer answers with the version its own
// KnownNodes holds for that ID. A peer counts as having seen the version once
// it answers that version or a higher one. Only the new holder advertises the
// new version, so no peer can answer it before it has received the holder's
// metadata: the gate never opens early. Queries are repeated every
// QueryInterval to the members that have not confirmed, so lost packets only
// delay it. The members that count are the live ones at each round: one that
// dies or leaves stops counting, and with no other live member the gate is
// open at once. It is bounded by a timeout because gossip is advisory: the
// lease in the bucket is what makes the ID this task's. Peers running a
// release without the gate never answer: the gate then opens on its timeout.
//
// Each member advertises {"nodeId":N,"version":V} in its memberlist node
// metadata, or {"nodeId":-1} when it holds no ID. SetClaim and ClearClaim change
// it and re-advertise the member with memberlist's UpdateNode.
//
// Member names must be unique: use the task identity (the ECS task ARN). Set
// Config.SecretKey to encrypt and authenticate all gossip with memberlist's
// keyring. Members with another key, or with none, cannot join.
//
// A Node owns its goroutines. Close leaves the cluster, shuts memberlist down
// and waits for them all to stop.
package gossip
