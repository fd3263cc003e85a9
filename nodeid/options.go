package nodeid

import "time"

// ClaimOption configures the claim an Acquire takes, before it exists: nothing
// about a claim is set after its loops have started.
type ClaimOption func(*claimOptions)

// claimOptions is what the ClaimOptions of an Acquire set.
type claimOptions struct {
	issued       func() int64
	reserveClock func() time.Time
}

// WithIssuedFunc gives the function that returns the highest Snowflake
// timestamp (Unix ms) issued under the claim. Close calls it after fencing
// and writes the lease's reservation at it (never below the floor): lowered,
// or raised when issuers outside it stamped past it (see WithReserveClock),
// so that a successor starts right above it. Without one, Close keeps the
// reservation. f may read a generator built after Acquire (returning 0, the
// floor, before), as package node's does: Close may call it from within
// Acquire too, when Acquire gives the claim up.
func WithIssuedFunc(f func() int64) ClaimOption {
	return func(o *claimOptions) { o.issued = f }
}

// WithReserveClock gives the clock of issuers outside the claim's own
// generator: an application that stamps its IDs with the host's real-time
// clock, which may step, where the Provider's Clock (its Wall) does not.
// Every renewal (not the take) reserves up to the later of the two clocks
// plus the lease, covering those issuers' timestamps too. A zero Time counts
// as no reading: now may return it while there is no such issuer.
func WithReserveClock(now func() time.Time) ClaimOption {
	return func(o *claimOptions) { o.reserveClock = now }
}
