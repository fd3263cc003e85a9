// Package lease holds what every part of nodeid agrees on: the conditional object
// store contract ([Store]), the lease record and cluster manifest formats with a
// strict codec ([Record], [Manifest]), and the expiry rule judged on the store's
// clock ([Expired]).
//
// # The store
//
// A [Store] is a conditional object store over the keys under one prefix. It knows
// nothing of records: it lists keys, reads bodies, creates a key only if it is
// absent and replaces a body only if its ETag is the one the caller last saw. Every
// write is conditional; nothing is ever deleted (deleting a lease object would
// reset its version, the fencing token). A write whose outcome is unknown (a
// timeout, a reset connection, a 5xx) is reported as an [*UnknownOutcomeError]; the
// caller resolves it by reading the object back and looking for its own writeId,
// never by retrying blindly.
//
// # Time
//
// Each response carries [Meta]: the object's ETag, its Last-Modified time and the
// server's Date, both on the store's clock. A held lease is expired when
// Date - LastModified > leaseMillis + [StoreClockResolution] + clockMargin. No node
// ever compares a timestamp written by another node with its own wall clock: the
// renewedAt and expiresAt fields of a [Record] are for humans only.
//
// A store may instead judge expiry itself (etcd): its writes through
// [CreateLive] and [UpdateLive] bind the key's liveness to a lease on the
// store's own clock, started no earlier than the write was sent, and its
// responses say whether that liveness still runs ([Liveness]). [StateOf] then
// takes the store's word. Either way the record persists after its liveness
// ends, so versions never go back and the Snowflake floor carries over. A
// wrapper of such a store must forward [LiveWriter]: one that hides it is
// refused by [Probe], and a held write through it fails with
// [ErrLivenessUnbound] (it was applied, but reads expired at once).
//
// # Conditional reads
//
// A store may also read conditionally ([ConditionalReader], [GetIfChanged]:
// If-None-Match on a GET), the read a holder will send to keep its lease
// alive by reads (docs/evidence/design.md section 11; the mode itself is not
// implemented yet). A 304 is [ErrNotModified] only when its own ETag header
// is the one asked for. [ProbeReads] refuses a store whose conditional reads
// may miss a completed write ([ErrStaleReads]: a cache in front of it) or
// whose 304s do not show the ETag ([ErrNotModifiedUnproven]). Wrappers
// forward GetIfChanged, as they forward LiveWriter.
//
// # Garbage
//
// [DecodeRecord] and [DecodeManifest] are strict: bad JSON, an unknown field or
// schema, a nodeId that does not match the key and values out of range all give an
// error that wraps [ErrCorrupt] and says why. A corrupt object is reported and never
// taken automatically.
//
// # Dependencies
//
// lease imports one package of nodeid: snowflake, for [snowflake.Layout], the
// bit layout and epoch a [Manifest] records. snowflake imports nothing of
// nodeid, so there is no cycle, and the layout is one type everywhere.
package lease
