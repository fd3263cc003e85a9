package snowflake

// A Fence says whether this process still holds its node ID. The generator
// asks it at the start of every Next and NextN and while it waits, and fails
// with ErrFenced as soon as it reports false.
//
// nodeid's *Claim is a Fence: Valid is an atomic load and a comparison of
// one clock reading with the lease's local deadlines (and a ClockedFence,
// which hands the generator that reading). Valid is on the hot path, so it
// must be that cheap, and safe for concurrent use.
//
// A fence only stops new calls: a call that passed the check may still
// complete. To stop for good before releasing a node ID, call
// Generator.Stop, which also returns the timestamp to release with.
type Fence interface {
	Valid() bool
}

// A ClockedFence is a Fence that reads the generator's clock itself and
// hands the reading over with its verdict: a fence must read a clock to
// judge a deadline, the generator reads one to stamp an ID, and one reading
// serves both. nodeid's *Claim is one (on the system clock, one time.Now per
// ID where there were two readings). The generator calls ValidNow, in place
// of Valid and its own clock reading, at the start of every Next and NextN
// (not with a CoarseClock, whose point is not to read the clock); while it
// waits it calls Valid and reads its Clock.
type ClockedFence interface {
	Fence
	// ValidNow reports Valid and, from the same instant, the time on
	// the generator's Clock (Config.Clock's Now) in Unix nanoseconds,
	// which must be that Clock: the generator stamps the ID with it. The
	// time may be anything when valid is false.
	ValidNow() (unixNs int64, valid bool)
}

// FenceFunc adapts a function to the Fence interface.
type FenceFunc func() bool

// Valid calls f.
func (f FenceFunc) Valid() bool { return f() }
