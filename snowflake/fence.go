package snowflake

// A Fence says whether this process still holds its node ID. The generator
// asks it at the start of every Next and NextN and while it waits, and fails
// with ErrFenced as soon as it reports false.
//
// nodeid's *Claim is a Fence: Valid is an atomic load and a comparison with
// the monotonic clock (the lease's local deadline). Valid is on the hot path,
// so it must be that cheap, and safe for concurrent use.
//
// A fence only stops new calls: a call that passed the check may still
// complete. To stop for good before releasing a node ID, call
// Generator.Stop, which also returns the timestamp to release with.
type Fence interface {
	Valid() bool
}

// FenceFunc adapts a function to the Fence interface.
type FenceFunc func() bool

// Valid calls f.
func (f FenceFunc) Valid() bool { return f() }
