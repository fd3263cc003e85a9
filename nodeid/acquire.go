package nodeid

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/nodeid/nodeid/lease"
)

// maxRelists bounds the LISTs of one acquire round after lost races.
const maxRelists = 3

// errTaken means another task created or took the candidate first.
var errTaken = errors.New("nodeid: taken by another task")

// readResult is one GET of a candidate.
type readResult struct {
	id   int
	body []byte
	meta lease.Meta
	err  error
}

// readAll GETs the objects of ids concurrently and returns the results in order.
func (p *Provider) readAll(ctx context.Context, ids []int) []readResult {
	out := make([]readResult, len(ids))
	p.goEach(len(ids), len(ids), func(i int) {
		body, meta, err := p.store.Get(ctx, lease.RecordKey(ids[i]))
		if err == nil {
			p.observeDate(meta.Date, p.clock.Now())
		}
		out[i] = readResult{id: ids[i], body: body, meta: meta, err: err}
	})
	return out
}

// takeFirst visits the candidates and takes the first free or expired ID,
// listing again after a lost race (docs/evidence/design.md section 7.2). When
// only leases with far floors could be taken, it takes the nearest recent
// floor, or fails with ErrClockBehind (ErrClusterFull when a store error may
// have hidden another candidate).
func (p *Provider) takeFirst(ctx context.Context, v *clusterView, w *watched) (*Claim, error) {
	tried := map[int]bool{}
	var errs []error
	var far []farFloor
	w.suspects = nil
	for relists := 0; ; relists++ {
		c, lostRace, err := p.visit(ctx, v, tried, &errs, &far, w)
		if c != nil || err != nil {
			return c, err
		}
		if !lostRace || relists == maxRelists {
			break
		}
		l, err := p.store.List(ctx)
		if err != nil {
			errs = append(errs, fmt.Errorf("list: %w", err))
			break
		}
		p.observeDate(l.Date, p.clock.Now())
		v.index(l)
	}
	if f, ok := p.rules.nearestRecent(p, far, len(errs) > 0); ok {
		// No anomaly: take it now, whatever other floors say (a single far
		// floor never stops a fleet).
		return p.takeRecent(ctx, f, w.opts)
	}
	for len(w.suspects) > 0 && p.metSuspect(ctx, w.suspects[0], w) {
		w.suspects = w.suspects[1:]
	}
	if len(w.suspects) > 0 && p.challenge(ctx, w.suspects[0], w) {
		return nil, fmt.Errorf("%w: challenged node %d's holder (read mode); it may be taken a Window after the confirm unless its holder answers",
			ErrClusterFull, w.suspects[0].r.id)
	}
	switch {
	case len(errs) > 0 && len(far) > 0:
		return nil, fmt.Errorf("%w (and %d store errors, first: %w; %s)", ErrClusterFull, len(errs), errs[0], p.describeFar(far))
	case len(errs) > 0:
		return nil, fmt.Errorf("%w (and %d store errors, first: %w)", ErrClusterFull, len(errs), errs[0])
	case len(far) > 0:
		return nil, fmt.Errorf("%w: this task's wall clock reads %s, and %s; fix this task's clock if it is behind; if instead their last holder's clock was ahead, its IDs may carry timestamps up to those floors, and the IDs become takeable once this clock is within MaxClockWait of them",
			ErrClockBehind, p.clock.Wall().UTC().Format(time.RFC3339Nano), p.describeFar(far))
	}
	return nil, ErrClusterFull
}

// visit makes one pass over the untried candidates: never-created ones
// created held, the others read in batches (1, 2, 4, ... up to
// MaxReadsInFlight) and taken by CAS. lostRace reports a create or a take
// lost to another task: the listing is stale, the caller lists again.
func (p *Provider) visit(ctx context.Context, v *clusterView, tried map[int]bool, errs *[]error, far *[]farFloor, w *watched) (c *Claim, lostRace bool, err error) {
	known := p.knownNodes() // one view of gossip per pass
	order := p.candidates(v, tried, w, known)
	batch := 1
	for i := 0; i < len(order); {
		if ctx.Err() != nil {
			return nil, false, ctx.Err()
		}
		if _, exists := v.objects[order[i]]; !exists {
			id := order[i]
			tried[id] = true
			i++
			if v.manifest.Filled || known[id] > 0 {
				continue // deleted: never taken, never recreated (noteDeleted)
			}
			c, err := p.rules.create(p, ctx, id, w.opts)
			switch {
			case c != nil || errors.Is(err, lease.ErrLivenessUnbound):
				return c, false, err
			case errors.Is(err, errTaken):
				return nil, true, nil
			case err != nil:
				*errs = append(*errs, err)
			}
			continue
		}
		j := i
		for j < len(order) && j-i < batch {
			if _, exists := v.objects[order[j]]; !exists {
				break
			}
			j++
		}
		for _, r := range p.readAll(ctx, order[i:j]) {
			tried[r.id] = true
			if r.err != nil {
				if !errors.Is(r.err, lease.ErrNotFound) {
					*errs = append(*errs, fmt.Errorf("read %s: %w", lease.RecordKey(r.id), r.err))
				}
				continue
			}
			prev, state, err := p.judge(r)
			switch {
			case err != nil:
				continue // corrupt: reported, never taken
			case state == lease.StateHeld:
				if p.rules.suspected(p, r, prev, known, w) {
					w.suspects = append(w.suspects, suspect{r: r, prev: prev})
				}
				w.note(r, prev, p.lookAgain(prev), p.cfg.ClockMargin)
				if o, listed := v.objects[r.id]; listed && o.ETag != r.meta.ETag {
					return nil, true, nil // written since the listing (taken, most likely): it is stale
				}
				continue
			}
			if ff := p.farFloorOf(r, prev, state); ff != nil {
				*far = append(*far, *ff)
				continue
			}
			c, err := p.rules.take(p, ctx, r, prev, state, w.opts)
			switch {
			case c != nil || errors.Is(err, ErrClockBehind) || errors.Is(err, lease.ErrLivenessUnbound):
				return c, false, err
			case errors.Is(err, errTaken):
				return nil, true, nil
			case err != nil:
				*errs = append(*errs, err)
			}
		}
		i = j
		batch = min(2*batch, p.cfg.MaxReadsInFlight)
	}
	return nil, false, nil
}
