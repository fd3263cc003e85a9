package main

import (
	"context"
	"fmt"
	"time"

	"github.com/nodeid/nodeid/node"
)

// demoElection is the election every demo broker campaigns for (--elect).
const demoElection = "jobs"

// leaderTerm is b's term while it leads demoElection, else 0.
func (b *demoBroker) leaderTerm() int64 {
	if l := b.node.Status().Leader; l != nil && l.Self {
		return l.Term
	}
	return 0
}

// pickLeader picks the broker that leads demoElection (so that the kill
// shows a failover of the leadership too), once one leads, else as pick.
func (d *demo) pickLeader(ctx context.Context) (*demoBroker, error) {
	if _, err := d.waitLeader(ctx, 0); err != nil {
		return nil, err
	}
	d.mu.Lock()
	for _, b := range d.brokers {
		if !d.subjects[b] && b.getState() == node.StateHeld && b.leaderTerm() > 0 {
			d.subjects[b] = true
			d.mu.Unlock()
			return b, nil
		}
	}
	d.mu.Unlock()
	return d.pick()
}

// waitNewLeader waits until a broker leads demoElection with a term above
// oldTerm and tells it; it fails after the acquire timeout.
func (d *demo) waitNewLeader(ctx context.Context, oldTerm int64) error {
	b, err := d.waitLeader(ctx, oldTerm)
	if err != nil {
		return err
	}
	d.event("%s was elected leader of %q with term %d (the killed leader had term %d): it was fenced before its lease could be judged expired.",
		b.view().name, demoElection, b.leaderTerm(), oldTerm)
	return nil
}

// waitLeader waits until a broker leads demoElection with a term above
// oldTerm and returns it; it fails after the acquire timeout.
func (d *demo) waitLeader(ctx context.Context, oldTerm int64) (*demoBroker, error) {
	deadline := time.Now().Add(d.tl.acquireTimeout)
	for {
		for _, b := range d.brokerList() {
			if t := b.leaderTerm(); t > oldTerm {
				return b, nil
			}
		}
		if time.Now().After(deadline) {
			return nil, fmt.Errorf("no broker was elected leader of %q after term %d within %v", demoElection, oldTerm, d.tl.acquireTimeout)
		}
		if err := sleepCtx(ctx, 50*time.Millisecond); err != nil {
			return nil, err
		}
	}
}
