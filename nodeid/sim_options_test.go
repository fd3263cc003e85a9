package nodeid_test

import "github.com/nodeid/nodeid/nodeid"

// claimOptions are the options of the task's next Acquire, wired as package
// node wires them: the release reserves at what the claim's generator (built
// once Acquire returns, startGenerator) issued, or with an application at
// what it may have issued (lowestRelease), and with an application every
// renewal reserves above the host's clock too. A bare task gives no issued
// function: its release keeps the reservation.
func (t *simTask) claimOptions() []nodeid.ClaimOption {
	t.gen = nil // the last claim's: the next is built for the claim Acquire returns
	switch {
	case t.app != nil:
		return []nodeid.ClaimOption{nodeid.WithReserveClock(t.host.High),
			nodeid.WithIssuedFunc(func() int64 { return t.app.lowestRelease(t.stopGenerator()) })}
	case !t.bare:
		return []nodeid.ClaimOption{nodeid.WithIssuedFunc(t.stopGenerator)}
	}
	return nil
}

// stopGenerator stops the claim's generator and returns the highest
// timestamp it issued; 0 (the floor) before it is built: nothing was issued.
func (t *simTask) stopGenerator() int64 {
	if t.gen == nil {
		return 0
	}
	return t.gen.Stop()
}
