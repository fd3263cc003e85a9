// Package k8sstore is a [lease.Store] on Kubernetes Leases
// (coordination.k8s.io/v1), with the official client, k8s.io/client-go:
// nodeid's leases in the cluster's own linearizable store, with no bucket
// and no cloud credentials.
//
// # One Lease per key
//
// Key k is the Lease named after Prefix+k in Config.Namespace. Lease names
// are DNS subdomains and keys are paths, so each byte maps on its own: a-z,
// 0-9 and '.' stand for themselves, any other byte is '-' and two lowercase
// hex digits ("nodeid." + "7.json" is nodeid.7.json; "nodeid/7.json" is
// nodeid-2f7.json). The mapping is injective and keeps prefixes; a prefix
// or key whose name would not be a DNS subdomain (longer than 253, a label
// starting or ending with '-') is refused, never changed. The body is the
// annotation nodeid.io/record, as it is (records are JSON); the Lease's
// spec stays empty. Every write also sets nodeid.io/write to a new random
// value, so that every write changes the Lease (the apiserver skips an
// update that changes nothing), and the label
// app.kubernetes.io/managed-by=nodeid, which List selects.
//
// # Every write is conditional
//
// The ETag is the Lease's resourceVersion and UID, "resourceVersion/uid".
// Create is a POST (409 AlreadyExists: [lease.ErrPreconditionFailed]).
// Update is a PUT carrying both (409 Conflict when either differs:
// ErrPreconditionFailed): the resourceVersion is the compare-and-swap, and
// the UID keeps a PUT from creating a missing Lease, which the Lease API
// would otherwise do (create on update) whatever resourceVersion it named.
// The client never retries a write. A timeout, a connection lost after the
// request left, any 5xx, 429 or 408 is a [*lease.UnknownOutcomeError]: the
// caller reads the Lease back and looks for its writeId. 403 names the verbs
// to grant; 401, a missing namespace and an unreachable apiserver say what
// to fix, matching [lease.ErrMisconfigured].
//
// # Reads
//
// Get is a GET without a resourceVersion: the apiserver reads etcd with a
// quorum, so it shows every write completed before it was sent. List reads
// the labelled Leases page by page (limit, continue: every page at the
// first's resourceVersion), keeps the names that start with the prefix's,
// and sorts by key. [Store.GetIfChanged] is a Get compared here (the API
// has no conditional read; the quorum read proves the ETag as a 304 with it
// would), so read mode's probe (lease.ProbeReads) runs on this store as on
// etcd.
//
// # Time
//
// The store reports its clock (lease.LivenessUnjudged), as S3 does: Date is
// the HTTP Date header of the apiserver's answers (whole seconds), recorded
// by the store's transport wrapper for each call; LastModified is the
// latest time of the Lease's managedFields, which the apiserver sets from
// its own clock, in whole seconds, on every write that changes a field of
// the writing manager (every write of this store does: nodeid.io/write).
// Both are the apiserver's clock; docs/evidence/design.md section 5 states
// the assumptions. Lease.spec.renewTime is the client's clock and is not
// used.
//
// # Permissions
//
// The identity needs get, list, create and update on leases in the
// namespace, nothing else: a Role and a RoleBinding. Call [Store.Check] at
// start.
package k8sstore
