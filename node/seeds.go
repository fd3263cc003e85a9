package node

import (
	"cmp"
	"context"
	"slices"
	"sync"
	"time"

	"github.com/nodeid/nodeid/lease"
)

// seedReads bounds the lease records one seed lookup reads: the most
// recently written first, and only those whose ETag changed since the last
// lookup. One live member is enough to join the whole gossip cluster.
const seedReads = 8

// seedIdleAfter is how long lookups must have found no other holder's
// gossip address before they are paced by seedIdlePace: a broker alone in
// its cluster would otherwise list the store at every try of gossip's
// rejoin loop (every 30 s), which costs more than read mode's requests.
// Brokers that start later find it: it holds a lease.
const seedIdleAfter = 2 * time.Minute

// seedIdlePace is the least time between two listings of seed lookups that
// have found no address for seedIdleAfter.
const seedIdlePace = 10 * time.Minute

// seedBook is what the seed lookups remember of the lease records they read:
// by key, the ETag read and the gossip address it published ("" for none).
type seedBook struct {
	mu         sync.Mutex
	read       map[string]seedEntry
	emptySince time.Time // Clock.Now of the first of the lookups in a row that found no address; zero: the last found one
	last       time.Time // Clock.Now of the last listing
}

// seedEntry is one lease record as a seed lookup read it.
type seedEntry struct {
	etag, addr string
}

// gossipSeeds is gossip.Config.Seeds for the node: the gossip addresses that
// the cluster's lease records publish (lease.Record.Gossip), other than this
// task's. It lists the store and reads at most seedReads records whose ETag
// it has not read yet, bounded by the provider's StoreTimeout; once lookups
// have found none for seedIdleAfter, it lists at most every seedIdlePace. A failed
// listing gives none. Advisory: an address is only ever joined.
func (n *Node) gossipSeeds(ctx context.Context) []string {
	b := &n.seedBook
	b.mu.Lock()
	defer b.mu.Unlock()
	now := n.clock.Now()
	if !b.emptySince.IsZero() && now.Sub(b.emptySince) >= seedIdleAfter && now.Sub(b.last) < seedIdlePace {
		return nil
	}
	b.last = now
	ctx, cancel := context.WithTimeout(ctx, n.cfg.Provider.Timings().StoreTimeout)
	defer cancel()
	l, err := n.store.List(ctx)
	if err != nil {
		n.log.Debug("gossip seeds: listing the store failed", "err", err)
		return nil
	}
	objs := slices.DeleteFunc(slices.Clone(l.Objects), func(o lease.ObjectInfo) bool {
		_, ok := lease.ParseRecordKey(o.Key)
		return !ok
	})
	slices.SortStableFunc(objs, func(a, b lease.ObjectInfo) int { return b.LastModified.Compare(a.LastModified) })
	next := make(map[string]seedEntry, len(objs))
	reads := 0
	for _, o := range objs {
		e, ok := b.read[o.Key]
		if (!ok || e.etag != o.ETag) && reads < seedReads {
			reads++
			e, ok = n.readSeed(ctx, o.Key)
		}
		if ok {
			next[o.Key] = e
		}
	}
	b.read = next
	var out []string
	for _, e := range next {
		if e.addr != "" && !slices.Contains(out, e.addr) {
			out = append(out, e.addr)
		}
	}
	slices.SortFunc(out, cmp.Compare)
	switch {
	case len(out) > 0:
		b.emptySince = time.Time{}
	case b.emptySince.IsZero():
		b.emptySince = now
	}
	return out
}

// readSeed reads the lease record at key and returns its ETag and the gossip
// address of its holder, "" when free, held by this task or publishing none.
// It reports false when the record could not be read or decoded.
func (n *Node) readSeed(ctx context.Context, key string) (seedEntry, bool) {
	id, _ := lease.ParseRecordKey(key)
	body, meta, err := n.store.Get(ctx, key)
	if err != nil {
		n.log.Debug("gossip seeds: reading a lease failed", "key", key, "err", err)
		return seedEntry{}, false
	}
	rec, err := lease.DecodeRecord(body, id)
	if err != nil {
		return seedEntry{}, false // the provider reports anomalies
	}
	e := seedEntry{etag: meta.ETag}
	if rec.Holder != "" && rec.Holder != n.cfg.Provider.TaskID {
		e.addr = rec.Gossip
	}
	return e, true
}
