package gossip

import (
	"context"
	"math/rand/v2"
	"slices"
	"time"

	"github.com/nodeid/nodeid/internal/backoff"
)

// settledTries is how many tries in a row must find the member settled
// before the rejoin loop sleeps until it is alone: seeds published by
// members that start at the same time appear over a few pauses, and pools
// that formed apart meanwhile find each other in those tries.
const settledTries = 3

// rejoin keeps this member in a cluster for as long as it runs: while it
// sees no other live member, or Config.Seeds names an address no live member
// has, it joins again (Config.Join, whose names memberlist resolves afresh at
// each try, and the unseen seeds), pausing between tries with a capped,
// jittered exponential backoff (Config.RejoinMin doubling up to RejoinMax).
// Once settled (settledTries tries in a row) it sleeps until it is alone
// again. Throughout, alone or not, it reconnects every ReconnectInterval
// (see reconnect). settled says whether Start's own try settled it. It
// returns when ctx ends (Close).
func (n *Node) rejoin(ctx context.Context, settled bool) {
	tick := time.NewTicker(n.cfg.ReconnectInterval)
	defer tick.Stop()
	if len(n.cfg.Join) == 0 && n.cfg.Seeds == nil { // nothing to rejoin: reconnect only
		n.sleep(ctx, nil, nil, tick.C)
		return
	}
	b := backoff.Backoff{Base: n.cfg.RejoinMin, Limit: n.cfg.RejoinMax}
	b.Reset()
	calm := 0 // settled tries in a row
	for {
		calm++
		if !settled {
			calm = 0
		}
		lonely := n.lonely.wait()
		if calm >= settledTries && !n.alone() {
			if !n.sleep(ctx, lonely, nil, tick.C) {
				return
			}
			n.log.Info("gossip: no other member left; joining again", "join", n.cfg.Join)
			b.Reset()
			calm = 0
		}
		t := time.NewTimer(b.Next())
		woke := n.sleep(ctx, nil, t.C, tick.C)
		t.Stop()
		if !woke {
			return
		}
		var joined int
		joined, settled = n.joinOnce(ctx)
		if joined > 0 && !n.alone() { // reaching only itself (a Join that names it) is no join
			n.log.Info("gossip rejoined", "members", joined, "live", len(n.Members()))
			b.Reset()
		}
	}
}

// sleep waits until wake is closed or timer fires (either may be nil: never),
// reconnecting at each tick meanwhile. It reports false when ctx ended first.
func (n *Node) sleep(ctx context.Context, wake <-chan struct{}, timer, tick <-chan time.Time) bool {
	for {
		select {
		case <-wake:
			return true
		case <-timer:
			return true
		case <-tick:
			n.reconnect()
		case <-ctx.Done():
			return false
		}
	}
}

// reconnect joins the address of one member that left or was found dead
// within Config.ReconnectTimeout, picked at random (one, so that a tick costs
// at most one TCPTimeout): the halves of a network partition each find the
// other dead and, once it heals, would otherwise never contact each other
// again. memberlist does not say which members left (a leaver's closed port
// refuses the dial at once). Addresses lost longer ago are forgotten.
func (n *Node) reconnect() {
	dead := n.view.lostSince(time.Now().Add(-n.cfg.ReconnectTimeout))
	if len(dead) == 0 {
		return
	}
	addr := dead[rand.N(len(dead))]
	if joined, err := n.Join([]string{addr}); err != nil {
		n.log.Debug("gossip: reconnect to a member gone failed", "addr", addr, "err", err)
	} else {
		n.log.Info("gossip reconnected to a member gone", "addr", addr, "members", joined, "live", len(n.Members()))
	}
}

// joinOnce makes one try: it joins Config.Join while this member is alone,
// and the seeds (Config.Seeds) that no live member advertises. It reports how
// many members it reached and whether the member is settled: not alone, with
// every seed live.
func (n *Node) joinOnce(ctx context.Context) (joined int, settled bool) {
	var seeds []string
	if n.cfg.Seeds != nil {
		seeds = n.cfg.Seeds(ctx)
	}
	targets := n.unseen(seeds)
	if n.alone() {
		targets = append(slices.Clone(n.cfg.Join), targets...)
	}
	if len(targets) > 0 {
		var err error
		if joined, err = n.Join(targets); err != nil {
			n.log.Debug("gossip: join reached no member; trying again later", "join", targets, "err", err)
		}
	}
	return joined, !n.alone() && len(n.unseen(seeds)) == 0
}

// unseen returns the addresses among seeds that neither this member nor any
// live member advertises, and where no member was seen to leave or die (a
// crashed member's lease record names it until its lease is taken).
func (n *Node) unseen(seeds []string) []string {
	live := map[string]bool{n.addr: true}
	n.view.each(func(_ string, p peer) { live[p.addr] = true })
	var out []string
	for _, s := range seeds {
		if !live[s] && !n.view.goneAt(s) && !slices.Contains(out, s) {
			out = append(out, s)
		}
	}
	return out
}

// alone reports whether this member sees no other live member of its
// cluster.
func (n *Node) alone() bool {
	others := 0
	n.view.each(func(name string, _ peer) {
		if name != n.cfg.Name {
			others++
		}
	})
	return others == 0
}
