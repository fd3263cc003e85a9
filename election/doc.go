// Package election gives leader election and named locks with fencing tokens,
// on the lease protocol that hands out node IDs (package nodeid), not a second
// copy of it.
//
// An election NAME is a node-ID cluster of size 1 under
// <prefix>elections/NAME/ (its own manifest and one lease object, 0.json),
// beside the node-ID objects and outside their ID space. Campaigning is
// nodeid.Provider.Acquire on that cluster, waiting until elected; leading is
// holding its claim. Everything the node IDs are proven safe with therefore
// holds here:
//
//   - The term (Leadership.Term, Mutex.Token) is the lease version: +1 at each
//     election, never reused, strictly increasing per name. It is a fencing
//     token: a protected resource refuses requests carrying a lower term than
//     one it has seen.
//   - A leader fences itself on its monotonic clock (Leadership.Valid turns
//     false) before any other candidate can judge its lease expired, and
//     expiry is judged on the store's clock: no wall clock needs to agree.
//     client-go's leader election does not fence.
//   - Waiting candidates sleep until the earliest instant the leader's lease
//     could be judged expired (or a short backoff, to notice a resignation);
//     each look is a GET and one conditional write: one write wins per term,
//     however many wait.
//   - Resign (SIGTERM of nodeid-broker serve --elect) frees the election at
//     once; a killed leader is replaced once its lease has run out.
//
// The leader's identity is its task ID (nodeid.Config.TaskID), and it may
// publish a value with its campaign (as etcd's Campaign(ctx, value) does):
// its address, say. Leader and All read both, with the term and whether the
// lease is live on the store's clock. The value is a field of the lease
// record, written with every renewal and dropped by Resign.
package election
