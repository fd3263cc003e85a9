package nodeid

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/nodeid/nodeid/lease"
)

// bootstrapParallelism bounds the concurrent creates of missing lease objects.
const bootstrapParallelism = 32

// RecreatedHolder is the holder written into a lease object that was found
// deleted and recreated: the object is held by nobody, yet not free, so that it
// becomes acquirable only after MaxLeaseDuration by the ordinary expiry rule: a
// task that held the deleted object has stopped by then.
const RecreatedHolder = "nodeid:recreated"

// clusterView is what one bootstrap learned: the manifest and the listing.
type clusterView struct {
	manifest lease.Manifest
	size     int
	listing  lease.Listing
	objects  map[int]lease.ObjectInfo // lease objects by ID, < size
}

// bootstrap reads (or creates) the manifest, checks it, lists the prefix and
// creates the lease objects that are missing. It is idempotent and safe to run
// concurrently from many tasks: every create is conditional.
func (p *Provider) bootstrap(ctx context.Context) (*clusterView, error) {
	m, age, err := p.readOrCreateManifest(ctx)
	if err != nil {
		return nil, err
	}
	l, err := p.store.List(ctx)
	if err != nil {
		return nil, fmt.Errorf("nodeid: list lease objects: %w", err)
	}
	v := &clusterView{manifest: m, size: m.ClusterSize, listing: l, objects: map[int]lease.ObjectInfo{}}
	for _, o := range l.Objects {
		if id, ok := lease.ParseRecordKey(o.Key); ok && id < v.size {
			v.objects[id] = o
		}
	}
	if err := p.createMissing(ctx, v, age < p.cfg.BootstrapWindow); err != nil {
		return nil, err
	}
	return v, nil
}

// manifestFor returns the manifest this task would create.
func (p *Provider) manifestFor() lease.Manifest {
	l := p.cfg.Layout
	return lease.Manifest{
		ClusterSize: p.cfg.ClusterSize, TimestampBits: l.TimestampBits, NodeBits: l.NodeBits,
		SequenceBits: l.SequenceBits, EpochMs: l.EpochMs, CreatedAt: p.clock.Wall(), WriteID: lease.NewWriteID(),
	}
}

// readOrCreateManifest returns the cluster manifest, creating it if absent, and
// its age on the store's clock (0 when this task just created it).
func (p *Provider) readOrCreateManifest(ctx context.Context) (lease.Manifest, time.Duration, error) {
	body, meta, err := p.store.Get(ctx, lease.ManifestKey)
	if errors.Is(err, lease.ErrNotFound) {
		mine := p.manifestFor()
		body, err = mine.Encode()
		if err != nil {
			return lease.Manifest{}, 0, err
		}
		_, err = p.store.Create(ctx, lease.ManifestKey, body)
		switch {
		case err == nil:
			p.log.Info("created cluster manifest", "clusterSize", mine.ClusterSize, "layout", mine.LayoutString())
			return mine, 0, nil
		case errors.Is(err, lease.ErrPreconditionFailed), errors.Is(err, lease.ErrUnknownOutcome):
			// Someone else created it, or maybe we did: read it back either way.
			body, meta, err = p.store.Get(ctx, lease.ManifestKey)
		}
	}
	if err != nil {
		return lease.Manifest{}, 0, fmt.Errorf("nodeid: read cluster manifest: %w", err)
	}
	m, err := lease.DecodeManifest(body)
	if err != nil {
		return lease.Manifest{}, 0, fmt.Errorf("nodeid: cluster manifest %s: %w (inspect it with nodeidctl status)", lease.ManifestKey, err)
	}
	mine := p.manifestFor()
	if !m.SameLayout(&mine) {
		return lease.Manifest{}, 0, fmt.Errorf("%w: the manifest has %s, this task is configured with %s",
			ErrManifestMismatch, m.LayoutString(), mine.LayoutString())
	}
	if m.ClusterSize != p.cfg.ClusterSize {
		p.log.Warn("cluster size differs from the manifest's; the manifest's wins",
			"configured", p.cfg.ClusterSize, "manifest", m.ClusterSize)
	}
	age, ok := lease.StoreAge(meta.LastModified, meta.Date)
	if !ok {
		age = p.cfg.BootstrapWindow // unknown: assume not fresh, the safe side
	}
	return m, age, nil
}

// createMissing creates the lease objects of IDs below the cluster size that the
// listing lacks: free ones during a bootstrap, "recreated" ones afterwards.
func (p *Provider) createMissing(ctx context.Context, v *clusterView, bootstrapping bool) error {
	var missing []int
	for id := range v.size {
		if _, ok := v.objects[id]; !ok {
			missing = append(missing, id)
		}
	}
	if len(missing) == 0 {
		return nil
	}
	var (
		mu   sync.Mutex
		errs []error
		wg   sync.WaitGroup
		sem  = make(chan struct{}, bootstrapParallelism)
	)

	create := func(id int) {
		info, err := p.createRecord(ctx, id, bootstrapping)
		mu.Lock()
		defer mu.Unlock()
		if err != nil {
			errs = append(errs, err)
		} else if info.ETag != "" {
			v.objects[id] = info
		}
	}
	for _, id := range missing {
		if p.sim.sequential {
			create(id)
			continue
		}
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			create(id)
		})
	}
	wg.Wait()
	return errors.Join(errs...)
}

// createRecord creates one missing lease object. A lost race or an unknown
// outcome is not an error: the object exists, or the next round creates it.
func (p *Provider) createRecord(ctx context.Context, id int, bootstrapping bool) (lease.ObjectInfo, error) {
	r := lease.Record{NodeID: id, WriteID: lease.NewWriteID()}
	if !bootstrapping {
		r.Holder = RecreatedHolder
		r.Version = p.knownNodes()[id] // the version gossip last saw, if any: versions never go back
		r.LeaseMillis = p.cfg.MaxLeaseDuration.Milliseconds()
		r.ReservedUntilMs = p.clock.Wall().UnixMilli() + r.LeaseMillis
		err := fmt.Errorf("lease object %s missing from an existing cluster: deleted by someone", lease.RecordKey(id))
		p.log.Error("recreating a deleted lease object; it becomes acquirable after the maximum lease",
			"nodeId", id, "maxLease", p.cfg.MaxLeaseDuration)
		p.cfg.Observer.Anomaly(lease.RecordKey(id), err)
	}
	body, err := r.Encode()
	if err != nil {
		return lease.ObjectInfo{}, err
	}
	m, err := p.store.Create(ctx, lease.RecordKey(id), body)
	switch {
	case err == nil:
		return lease.ObjectInfo{Key: lease.RecordKey(id), ETag: m.ETag, LastModified: m.Date}, nil
	case errors.Is(err, lease.ErrPreconditionFailed), errors.Is(err, lease.ErrUnknownOutcome):
		return lease.ObjectInfo{}, nil
	default:
		return lease.ObjectInfo{}, fmt.Errorf("nodeid: create %s: %w", lease.RecordKey(id), err)
	}
}
