package main

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/nodeid/nodeid/lease"
	"github.com/nodeid/nodeid/node"
	"github.com/nodeid/nodeid/nodeid"
	"github.com/nodeid/nodeid/snowflake"
)

// show plays the script: start the brokers, kill one, stop one gracefully,
// stop one whose replacement has a slow clock. It returns early, with an
// error, when ctx ends or a step does not happen in time.
func (d *demo) show(ctx context.Context) error {
	for range d.opts.brokers {
		if _, err := d.startBroker(ctx, 0); err != nil {
			return err
		}
	}
	var took []string
	for _, b := range d.brokerList() {
		if err := d.waitHeld(ctx, b, nil); err != nil {
			return err
		}
		v := b.view()
		took = append(took, fmt.Sprintf("%s node %d", v.name, v.node))
	}
	d.event("Each broker took a node ID (version 1: first holder): %s.", strings.Join(took, ", "))
	d.printSnapshot(ctx)
	if err := sleepCtx(ctx, d.tl.warmup); err != nil {
		return err
	}
	if err := d.killOne(ctx); err != nil {
		return err
	}
	if err := sleepCtx(ctx, d.tl.settle); err != nil {
		return err
	}
	if err := d.stopOne(ctx); err != nil {
		return err
	}
	if err := sleepCtx(ctx, d.tl.settle); err != nil {
		return err
	}
	if err := d.stopOneSkewed(ctx); err != nil {
		return err
	}
	return sleepCtx(ctx, d.tl.settle)
}

// killOne kills a broker abruptly and starts a replacement, which takes the
// dead broker's node ID once its lease has expired (when the cluster is full).
func (d *demo) killOne(ctx context.Context) error {
	victim, err := d.pickLeader(ctx)
	if err != nil {
		return err
	}
	v := victim.view()
	oldTerm := victim.leaderTerm()
	d.event("kill -9 %s (node %d, version %d): it dies without releasing its lease. Node %d stays held until its lease "+
		"is older than %v on the store's clock (the %v lease + %v for the store's whole-second clock and a margin).",
		v.name, v.node, v.version, v.node, d.tl.expiresAfter(), d.tl.lease, d.tl.expiresAfter()-d.tl.lease)
	killed := time.Now()
	victim.kill()
	repl, err := d.startBroker(ctx, 0)
	if err != nil {
		return err
	}
	d.event("%s starts to replace it and asks for a node ID%s.", repl.name, d.fullNote())
	progress := d.expiryProgress(ctx, v.node, v.name)
	if err := d.waitHeld(ctx, repl, progress); err != nil {
		return err
	}
	r := repl.view()
	if r.node == v.node {
		d.event("%s took node %d with version %d, %.1fs after the kill: %s's lease (version %d) had expired on the store's clock.",
			r.name, r.node, r.version, time.Since(killed).Seconds(), v.name, v.version)
	} else {
		d.event("%s took node %d (version %d), which was free: with free node IDs a replacement need not wait.",
			r.name, r.node, r.version)
	}
	if oldTerm > 0 {
		if err := d.waitNewLeader(ctx, oldTerm); err != nil {
			return err
		}
	}
	d.printSnapshot(ctx)
	return nil
}

// stopOne stops a broker gracefully and starts a replacement, which takes the
// released node ID at once.
func (d *demo) stopOne(ctx context.Context) error {
	victim, err := d.pick()
	if err != nil {
		return err
	}
	v := victim.view()
	d.event("graceful stop of %s (node %d, version %d), as on SIGTERM: it stops issuing and releases its lease, so node %d is free at once.",
		v.name, v.node, v.version, v.node)
	if err := d.release(ctx, victim); err != nil {
		return err
	}
	released := time.Now()
	repl, err := d.startBroker(ctx, 0)
	if err != nil {
		return err
	}
	if err := d.waitHeld(ctx, repl, nil); err != nil {
		return err
	}
	r := repl.view()
	if r.node == v.node && !r.expired {
		d.event("%s took node %d with version %d, free since its release %dms before: no waiting for a lease to expire.",
			r.name, r.node, r.version, time.Since(released).Milliseconds())
	} else {
		d.event("%s took node %d (version %d), another free one, %dms after the release.",
			r.name, r.node, r.version, time.Since(released).Milliseconds())
	}
	d.printSnapshot(ctx)
	return nil
}

// stopOneSkewed stops a broker gracefully and starts a replacement whose wall
// clock is behind: it takes the node ID at once, but issues only timestamps
// above its predecessor's last one (the lease's floor), waiting for its clock.
func (d *demo) stopOneSkewed(ctx context.Context) error {
	victim, err := d.pick()
	if err != nil {
		return err
	}
	v := victim.view()
	name := d.nextName()
	d.event("graceful stop of %s (node %d, version %d); its replacement %s runs on a host whose wall clock is %v behind.",
		v.name, v.node, v.version, name, d.tl.skew)
	if err := d.release(ctx, victim); err != nil {
		return err
	}
	repl, err := d.startBroker(ctx, d.tl.skew)
	if err != nil {
		return err
	}
	if err := d.waitHeld(ctx, repl, nil); err != nil {
		return err
	}
	r := repl.view()
	if r.node != v.node {
		d.event("%s took node %d (version %d), another free one: no predecessor's timestamps to stay above.", r.name, r.node, r.version)
		return nil
	}
	d.event("%s took node %d with version %d. Its clock reads %v earlier than %s's: it must not reuse %s's timestamps, "+
		"so it issues nothing until its clock passes %s's last timestamp, the lease's floor.",
		r.name, r.node, r.version, d.tl.skew, v.name, v.name, v.name)
	started := time.Now()
	wait := time.NewTimer(d.tl.skew + snowflake.DefaultConfig().MaxClockWait)
	defer wait.Stop()
	select {
	case <-repl.firstID:
	case <-repl.done:
		return fmt.Errorf("%s stopped before issuing an ID: %v", r.name, repl.view().err)
	case <-wait.C:
		return fmt.Errorf("%s issued no ID within %v", r.name, d.tl.skew+snowflake.DefaultConfig().MaxClockWait)
	case <-ctx.Done():
		return ctx.Err()
	}
	first := repl.first // set before firstID was closed
	last, ok := victim.stream.last()
	if !ok {
		return fmt.Errorf("%s issued no ID before it stopped", v.name)
	}
	d.event("%s's first ID has timestamp %s, after %s's last one, %s, although its clock is %v behind: it waited %.1fs. No ID can repeat.",
		r.name, clockTime(first), v.name, clockTime(last), d.tl.skew, time.Since(started).Seconds())
	d.printSnapshot(ctx)
	return nil
}

// release stops b gracefully within a lease.
func (d *demo) release(ctx context.Context, b *demoBroker) error {
	rctx, cancel := context.WithTimeout(ctx, 2*d.tl.lease)
	defer cancel()
	if err := b.stop(rctx); err != nil {
		return fmt.Errorf("release of %s: %w", b.name, err)
	}
	return nil
}

// expiryProgress returns, in plain mode, a function that prints the age of
// node's lease on the store's clock each time it changes; nil in live mode,
// where the table shows it.
func (d *demo) expiryProgress(ctx context.Context, node int, holder string) func() {
	if d.isDrawing() {
		return nil
	}
	last := time.Duration(-1)
	return func() {
		row, ok := d.leaseRow(ctx, node)
		if !ok || row.rec.Holder != holder || !row.ageOK || row.age == last {
			return
		}
		last = row.age
		verdict := fmt.Sprintf("still held (expired once older than %v)", d.tl.expiresAfter())
		if row.state == lease.StateExpired {
			verdict = "expired: any broker may take it"
		}
		d.out.println(fmt.Sprintf("%s   node %d: %s's last renewal is %v old on the store's clock: %s.",
			d.stamp(), node, holder, row.age, verdict))
	}
}

// fullNote explains why a replacement waits, when it must.
func (d *demo) fullNote() string {
	if d.opts.clusterSize > d.opts.brokers {
		return ""
	}
	if d.opts.clusterSize == 1 {
		return ": the only node ID is taken, so it retries until it is free or expired"
	}
	return fmt.Sprintf(": all %d node IDs are taken, so it retries until one is free or expired", d.opts.clusterSize)
}

// nextName is the name of the next broker to start.
func (d *demo) nextName() string {
	d.mu.Lock()
	defer d.mu.Unlock()
	return fmt.Sprintf("b%d", len(d.brokers)+1)
}

// startBroker starts a new broker whose wall clock is skew behind.
func (d *demo) startBroker(ctx context.Context, skew time.Duration) (*demoBroker, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	name := fmt.Sprintf("b%d", len(d.brokers)+1)
	b, err := newDemoBroker(name, d.srv, demoPrefix, d.opts.clusterSize, skew, d.tl)
	if err != nil {
		return nil, fmt.Errorf("broker %s: %w", name, err)
	}
	d.brokers = append(d.brokers, b)
	b.start(ctx)
	return b, nil
}

// brokerList returns the brokers started so far.
func (d *demo) brokerList() []*demoBroker {
	d.mu.Lock()
	defer d.mu.Unlock()
	return append([]*demoBroker(nil), d.brokers...)
}

// pick returns the oldest broker that holds a node ID and was not the subject
// of an event yet, and marks it.
func (d *demo) pick() (*demoBroker, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	for _, b := range d.brokers {
		if !d.subjects[b] && b.getState() == node.StateHeld {
			d.subjects[b] = true
			return b, nil
		}
	}
	return nil, errors.New("no broker holds a node ID")
}

// waitHeld waits until b holds a node ID, calling tick (if not nil) every
// redraw interval meanwhile. It fails when b gives up, ctx ends, or the
// acquire timeout passes (with a few seconds of slack).
func (d *demo) waitHeld(ctx context.Context, b *demoBroker, tick func()) error {
	limit := d.tl.acquireTimeout + 5*time.Second
	deadline := time.NewTimer(limit)
	defer deadline.Stop()
	var ticks <-chan time.Time
	if tick != nil {
		t := time.NewTicker(d.tl.redraw)
		defer t.Stop()
		ticks = t.C
	}
	for {
		select {
		case <-b.acquired:
			return nil
		case <-b.done:
			select {
			case <-b.acquired:
				return nil
			default:
			}
			return fmt.Errorf("%s got no node ID: %v", b.name, b.view().err)
		case <-deadline.C:
			return fmt.Errorf("%s got no node ID within %v", b.name, limit)
		case <-ctx.Done():
			return ctx.Err()
		case <-ticks:
			tick()
		}
	}
}

// sleepCtx waits d or until ctx ends.
func sleepCtx(ctx context.Context, d time.Duration) error { return systemClock.Sleep(ctx, d) }

// systemClock is the clock the demo's pauses run on.
var systemClock = nodeid.SystemClock(0)

// clockTime formats an ID's timestamp as a time of day, to the millisecond.
func clockTime(id snowflake.ID) string { return id.Time().Format("15:04:05.000") }
