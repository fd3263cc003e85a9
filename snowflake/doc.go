// Package snowflake generates Snowflake IDs: 63-bit, time-ordered, unique
// across up to 2^NodeBits nodes without coordination per ID, and safe for a
// node ID that moves from one process to another.
//
// # Layout
//
// An ID is a positive int64:
//
//	0 | timestamp: 41 bits | node ID: 10 bits | sequence: 12 bits
//
// The timestamp counts milliseconds since a custom epoch (DefaultEpochMs,
// 2025-01-01, lasting until 2094); the node ID says which generator issued the
// ID; the sequence numbers the IDs of one generator within one millisecond, so
// one node issues at most 4096 IDs per millisecond (4,096,000 per second).
// The split and the epoch are a Layout: configurable, validated (the widths
// sum to 63), and the same for every node of one ID space.
//
// # Why an ID is unique
//
// Two IDs with different node IDs differ. Two IDs from one generator differ
// because its (timestamp, sequence) only ever increases: the generator never
// issues a timestamp below one it has issued, even when the clock steps back
// (it waits instead). What remains is the dangerous case: a node ID that
// changes hands. Stateless containers lease their node IDs (nodeid does it
// through S3 conditional writes), so node ID 5 may be held by one task and,
// after it dies, by another whose clock disagrees with the first one's. Three
// inputs make the handover safe, each a plain value or a one-method interface
// so that this package depends on nothing:
//
//   - The fence (Config.Fence): Valid reports whether the lease is still
//     held, judged on the holder's monotonic clock so that it goes down
//     before anyone else can take the lease. While it is down, calls fail
//     with ErrFenced at once. A ClockedFence also hands the generator the
//     clock reading it judged, which stamps the ID: one reading for both.
//     Generator.Stop fences for good and returns the
//     last timestamp issued, the value a release writes back.
//   - The reservation (Config.Reservation): every lease write promises a
//     highest timestamp the holder may use, reservedUntilMs. The generator
//     never issues a timestamp above it; when the clock gets there it waits
//     for the next renewal to raise it (up to MaxReservationWait, then
//     ErrReservationExhausted).
//   - The floor (Config.FloorMs): a successor starts from the reservation in
//     the lease it took over and issues only timestamps strictly above it. If
//     its clock is behind that floor it waits (up to MaxClockWait, then
//     ErrClockBackwards, naming the gap).
//
// The predecessor issued nothing above its reservation R; the successor
// issues nothing at or below R; so no ID is issued twice, whatever the two
// clocks say. Clocks matter only for how long the successor waits.
//
// # Time
//
// The default clock (NewSystemClock) reads the wall clock once, at New, and
// adds the monotonic clock: it never steps, and a clock read costs one
// monotonic read. Every call reads it once, so an ID's timestamp is the
// millisecond in which its call read the clock (or, after a step back that
// the generator is waiting out, the last issued millisecond, which is ahead):
// timestamps never lag real time by more than the call's own duration. A
// Clock can be injected (tests drive a fake one by hand). Where a clock read
// is slow (25 ns under some hypervisors, more than the rest of an ID), a
// CoarseClock, read by a goroutine once per millisecond, makes Next about three
// times cheaper for timestamps up to a millisecond late.
//
// # Concurrency and cost
//
// A Generator is safe for concurrent use. Its state is one word, updated by
// compare-and-swap: no lock on the way to an ID. When the millisecond's
// sequence is used up, one caller waits for the next millisecond (sleeping
// precisely on Linux, so a saturated generator uses a fraction of a core) and
// the others block until it is done. NextN takes a batch of consecutive IDs
// (a Range) for the price of one.
//
// # Text and JSON
//
// IDs are written as decimal digits; in JSON as a string, "123", because
// JavaScript numbers lose precision above 2^53. Reading accepts a string or a
// number. ID's Time, NodeID and Seq decode with the default layout; use
// Layout.Decode for others.
package snowflake
