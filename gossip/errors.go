package gossip

import "errors"

var (
	// ErrInvalidConfig means Start was given a Config that fails validation. The
	// wrapping error names every field at fault.
	ErrInvalidConfig = errors.New("gossip: invalid config")
	// ErrGone means JoinGossip was given the address of a member that left
	// or was found dead, where none has joined since.
	ErrGone = errors.New("gossip: the member at this address left or was found dead")
	// ErrClosed means the Node was closed.
	ErrClosed = errors.New("gossip: node closed")
	// ErrNotSeen means WaitSeen ended (its context expired) before enough peers
	// reported the version. The wrapping error says how many did.
	ErrNotSeen = errors.New("gossip: peers have not seen the version")
	// ErrWaiting is what a Gate's Check returns while the gate is closed.
	ErrWaiting = errors.New("gossip: waiting for peers to see the new version")
)
