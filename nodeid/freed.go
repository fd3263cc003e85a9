package nodeid

import (
	"context"
	"errors"
	"fmt"

	"github.com/nodeid/nodeid/lease"
)

// newWatched returns the watched of a new Acquire. With PeerHints it notes
// the IDs gossip shows free, when there are enough for this task (freeForUs):
// otherwise none, so that its first look tries any ID gossip frees.
func (p *Provider) newWatched() *watched {
	w := &watched{held: map[int]heldLease{}, challenged: map[int]int64{}}
	if p.hints() != nil {
		w.gossipFree = map[int]bool{}
		if p.freeForUs() {
			for _, id := range gossipFree(p.knownNodes(), p.cfg.FirstNodeID, p.cfg.ClusterSize) {
				w.gossipFree[id] = true
			}
		}
	}
	return w
}

// takeFreed is the first part of a look with PeerHints: without a LIST, it
// reads the ID its rank picks among those gossip freed since this Acquire's
// previous look, and takes it if free or expired (docs/evidence/design.md
// section 7.4). It returns nil, nil whenever it takes nothing (the ordinary
// look follows), and of a take's errors only those visit returns.
func (p *Provider) takeFreed(ctx context.Context, w *watched) (*Claim, error) {
	if p.hints() == nil {
		return nil, nil
	}
	m, cached := p.recentManifest()
	first, size := p.cfg.FirstNodeID, p.cfg.ClusterSize
	if cached {
		first, size = m.FirstNodeID, m.ClusterSize
	}
	var freed []int
	before := w.gossipFree
	w.gossipFree = map[int]bool{}
	for _, id := range gossipFree(p.knownNodes(), first, size) {
		if !before[id] {
			freed = append(freed, id)
		}
		w.gossipFree[id] = true
	}
	if len(freed) == 0 || !p.freeForUs() {
		return nil, nil
	}
	rank, _ := p.rank()
	r, m, err := p.readFreed(ctx, freed[rank%len(freed)], cached, m)
	if err != nil {
		p.log.Debug("reading a node ID gossip freed", "nodeId", r.id, "err", err)
		return nil, nil
	}
	if r.id < m.FirstNodeID || r.id-m.FirstNodeID >= m.ClusterSize {
		return nil, nil // the manifest's cluster is smaller than the configured one
	}
	prev, state, err := p.judge(r)
	switch {
	case err != nil:
		return nil, nil // corrupt: reported, never taken
	case state == lease.StateHeld:
		w.note(r, prev, p.lookAgain(prev), p.cfg.ClockMargin)
		return nil, nil
	case floorAhead(prev.ReservedUntilMs, p.clock.Wall()) > p.cfg.MaxClockWait && !p.cfg.IssuesNoIDs:
		return nil, nil // too far, as farFloorOf judges it: the ordinary look skips it or waits
	}
	c, err := p.rules.take(p, ctx, r, prev, state, w.opts)
	if c != nil || errors.Is(err, ErrClockBehind) || errors.Is(err, lease.ErrLivenessUnbound) {
		return c, err
	}
	return nil, nil
}

// gossipFree returns, sorted, the node IDs in first..first+size-1 that no
// live member holds by gossip's view known.
func gossipFree(known map[int]int64, first, size int) []int {
	var ids []int
	for id := first; id < first+size; id++ {
		if _, live := known[id]; !live {
			ids = append(ids, id)
		}
	}
	return ids
}

// readFreed reads the lease object of id and, unless cached says that m is
// the manifest, the manifest beside it, checked: the read and the manifest.
func (p *Provider) readFreed(ctx context.Context, id int, cached bool, m lease.Manifest) (readResult, lease.Manifest, error) {
	if cached {
		r := p.readAll(ctx, []int{id})[0]
		return r, m, r.err
	}
	var (
		v    *clusterView
		mErr error
	)
	read := make(chan struct{})
	p.goRun(func() {
		defer close(read)
		body, meta, err := p.store.Get(ctx, lease.ManifestKey)
		if err != nil {
			mErr = fmt.Errorf("read cluster manifest: %w", err)
			return
		}
		v, mErr = p.checkManifest(body, meta)
	})
	r := p.readAll(ctx, []int{id})[0]
	_ = p.waitDone(context.Background(), read)
	if err := errors.Join(mErr, r.err); err != nil {
		return r, m, err
	}
	return r, v.manifest, nil
}

// earlyManifest is a GET of the manifest sent beside a bootstrap's LIST
// (readManifestEarly).
type earlyManifest struct {
	p    *Provider
	done chan struct{}
	body []byte
	meta lease.Meta
	err  error
}

// readManifestEarly starts a GET of the manifest beside a bootstrap's LIST:
// with PeerHints, when no manifest is cached and gossip shows a member holding
// an ID (docs/evidence/design.md section 7.4). Nil otherwise.
func (p *Provider) readManifestEarly(ctx context.Context) *earlyManifest {
	if p.hints() == nil || len(p.knownNodes()) == 0 {
		return nil
	}
	p.clockMu.Lock()
	cached := p.manifest != nil
	p.clockMu.Unlock()
	if cached {
		return nil
	}
	e := &earlyManifest{p: p, done: make(chan struct{})}
	p.goRun(func() {
		defer close(e.done)
		e.body, e.meta, e.err = p.store.Get(ctx, lease.ManifestKey)
	})
	return e
}

// wait waits for the GET to end; nothing when e is nil.
func (e *earlyManifest) wait() {
	if e != nil {
		_ = e.p.waitDone(context.Background(), e.done)
	}
}

// view returns the view of the manifest e read, checked; nil and no error
// when e is nil or its GET failed (the bootstrap then reads it itself).
func (e *earlyManifest) view() (*clusterView, error) {
	if e == nil {
		return nil, nil
	}
	e.wait()
	if e.err != nil {
		return nil, nil
	}
	return e.p.checkManifest(e.body, e.meta)
}
