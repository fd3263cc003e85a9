package nodeid

import (
	"context"
	"fmt"
	"time"
)

// hints returns Config.Peers as PeerHints; nil when it is not one.
func (p *Provider) hints() PeerHints {
	h, _ := p.cfg.Peers.(PeerHints)
	return h
}

// freedSignal returns PeerHints.Freed, or TasksHints.Freed without PeerHints
// (an election); nil (never closed) without either. Take it before a look at
// the store, so that no ID freed after the look goes unnoticed.
func (p *Provider) freedSignal() <-chan struct{} {
	if h := p.hints(); h != nil {
		return h.Freed()
	}
	if h, ok := p.cfg.Tasks.(TasksHints); ok {
		return h.Freed()
	}
	return nil
}

// rank is PeerHints.Rank; (0, 0) without hints.
func (p *Provider) rank() (rank, of int) {
	if h := p.hints(); h != nil {
		return h.Rank()
	}
	return 0, 0
}

// freeForUs reports whether gossip's view leaves a node ID for this task (more
// free IDs than tasks waiting before it by rank); true without hints.
func (p *Provider) freeForUs() bool {
	h := p.hints()
	if h == nil {
		return true
	}
	r, _ := h.Rank()
	return len(gossipFree(h.KnownNodes(), p.cfg.FirstNodeID, p.cfg.ClusterSize)) > r
}

// awaitFreed waits, making no store request, while gossip leaves no node ID
// for this task (freeForUs), but no longer than a RenewInterval after
// lastLook (docs/evidence/design.md section 7.4). It returns an error wrapping
// ErrClusterFull when AcquireTimeout (from start) passes first, and ctx's
// error when ctx ends; but an Acquire that has not looked yet (looked false)
// always looks once: gossip may lag behind a release.
func (p *Provider) awaitFreed(ctx context.Context, start, lastLook time.Time, looked bool) error {
	end := start.Add(p.cfg.AcquireTimeout)
	for {
		freed := p.freedSignal()
		if p.freeForUs() {
			return nil
		}
		now := p.clock.Now()
		until := lastLook.Add(p.t.RenewInterval)
		if !now.Before(until) {
			return nil
		}
		timesOut := !until.Before(end)
		if timesOut {
			until = end
		}
		if err := sleepOrWake(ctx, p.clock, until.Sub(now), freed); err != nil {
			return err
		}
		if timesOut && !p.clock.Now().Before(end) {
			if !looked {
				return nil
			}
			return fmt.Errorf("%w: gossip showed every node ID held for %v", ErrClusterFull, p.clock.Now().Sub(start))
		}
	}
}
