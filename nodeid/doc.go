// Package nodeid leases small integer node IDs (0..ClusterSize-1, or a range
// of the cluster's own: Config.FirstNodeID) to stateless processes (ECS/Fargate
// tasks, autoscaled VMs) from a conditional object store such as S3, so that
// each live process holds an ID no other live process holds: what a Snowflake
// ID generator or a clustered broker needs.
//
// # Protocol
//
// The store holds one lease object per ID and a cluster manifest (see package
// lease). [Provider.Acquire] bootstraps the bucket if needed (every create is
// If-None-Match: *), then takes the first free or expired lease by
// compare-and-swap (If-Match on the ETag read with the record), writing
// version = previous + 1: the version is a fencing token. The returned [Claim]
// renews its lease every RenewInterval by CAS on the ETag of its last write, with
// no read in steady state, and releases it on Close.
//
// # Safety
//
// Safety never depends on node wall clocks agreeing (docs/evidence/design.md
// states the argument in full):
//
//   - Another task judges a lease expired only on the store's clock
//     (lease.Expired; lease.Liveness on a store that judges expiry itself).
//   - The holder fences itself on its own monotonic clock: [Claim.Valid] turns
//     false at t0 + LeaseDuration - SafetyMargin, t0 being when its last
//     successful write was sent, before the store applied it.
//   - A renewal that keeps failing fences the claim at RenewDeadline; unless a
//     write lands within Config.LossGrace, [Claim.Done] closes and [Claim.Err]
//     wraps [ErrLeaseLost].
//   - A write whose outcome is unknown is resolved by reading the object back,
//     never by a blind retry.
//   - A successor issues only Snowflake timestamps above its predecessor's
//     reservation ([Claim.Floor]), whatever the two clocks say.
//
// The package's simulation checks this under clock skew and drift, crashes,
// pauses, partitions and ambiguous writes, and is shown to catch deliberately
// broken rules.
//
// # Use
//
//	p, err := nodeid.New(store, nodeid.DefaultConfig())
//	claim, err := p.Acquire(ctx, nodeid.WithIssuedFunc(lastIssued))
//	defer claim.Close(context.WithoutCancel(ctx))
//	// issue IDs with claim.NodeID() while claim.Valid(); stop when <-claim.Done()
//
// A claim is followed three ways: [Claim.Valid] is the fence, read before
// every ID; [Claim.Context] ends when the claim is lost or Close begins (bind
// to it the work that must not outlive the claim); [Claim.Changed], read with
// [Claim.Status], signals each change of state and never misses the final
// one (what an id file or a supervisor follows). [Observer] is for metrics.
// What the claim needs from its user is given to Acquire as options
// ([WithIssuedFunc], [WithReserveClock]), before the claim starts.
//
// Package node composes a claim with its Snowflake generator, gossip, an id
// file and a supervised child: most users want it, not a bare Claim.
package nodeid
