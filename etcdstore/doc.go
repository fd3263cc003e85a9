// Package etcdstore is a [lease.Store] on etcd: nodeid's leases on a real Raft
// engine, for teams that already run etcd.
//
// Each object is one etcd key, <prefix><key>; its ETag is the key's
// mod_revision (decimal). Create is a transaction on create_revision == 0,
// Update one on mod_revision == ETag; List reads the prefix page by page at
// one revision, so every page shows the same instant.
//
// etcd reports no wall-clock times, so this store judges expiry itself (see
// [lease.Liveness]): a write through CreateLive or UpdateLive with a time to
// live grants an etcd lease of that TTL (rounded up to whole seconds, as etcd
// counts them) and, in the same transaction as the object, puts the object's
// liveness key <prefix><key>.live bound to it. etcd's own lease clock, which
// starts when etcd grants the lease, after the write was sent, deletes the
// liveness key when it runs out; the object itself stays, so its version and
// Snowflake reservation survive. A read returns the object and its liveness
// key from one revision: the liveness is live while the key exists. Keys
// ending in .live are reserved for this.
//
// A write whose answer is lost (a timeout, a leader change, a broken
// connection) is an [*lease.UnknownOutcomeError]: the caller reads the object
// back and looks for its writeId, as on S3. An etcd lease granted for a write
// that did not land is left to run out.
//
// With several endpoints, a Store opened by New keeps one client per member
// and sends its requests to one member while that member answers; a request
// that ends without a definite answer (it hung until its timeout, its
// connection broke, the member has no leader) moves the Store to the next
// member, so the caller's retry (a read-back, the next renewal attempt) goes
// elsewhere. Every request asks for a leader (clientv3.WithRequireLeader): a
// member that lost its leader answers at once instead of holding the request.
// A member elected away from a dead leader is found by the retry: no client
// can do better while the cluster elects (about a second at etcd's default
// election timeout), and nodeid's loss grace carries a holder over it.
package etcdstore
