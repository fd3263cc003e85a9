package nodeid

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nodeid/nodeid/lease"
)

// bootstrapParallelism bounds the concurrent creates of missing lease objects.
const bootstrapParallelism = 32

// RecreatedHolder is the holder that earlier nodeid releases wrote into a
// lease object they recreated after a deletion: an anomaly, never taken
// (docs/evidence/design.md section 7.6).
const RecreatedHolder = "nodeid:recreated"

// clusterView is what one bootstrap learned: the manifest and the listing.
type clusterView struct {
	manifest     lease.Manifest
	manifestMeta lease.Meta // of the read (or the create): its ETag guards the fill
	manifestAge  time.Duration
	created      bool  // this task created the manifest
	createdIDs   []int // lease objects this task created free
	deletedIDs   []int // lease objects found deleted (left missing: see noteDeleted)
	listing      lease.Listing
	objects      map[int]lease.ObjectInfo // lease objects by ID, in the range
}

// ids returns the cluster's node IDs in this task's visit order.
func (v *clusterView) ids(p *Provider) []int {
	ids := p.visitOrder(v.manifest.ClusterSize)
	for i := range ids {
		ids[i] += v.manifest.FirstNodeID
	}
	return ids
}

// index records the lease objects of a listing in the manifest's range.
func (v *clusterView) index(l lease.Listing) {
	v.listing, v.objects = l, map[int]lease.ObjectInfo{}
	first, size := v.manifest.FirstNodeID, v.manifest.ClusterSize
	for _, o := range l.Objects {
		if id, ok := lease.ParseRecordKey(o.Key); ok && id >= first && id-first < size {
			v.objects[id] = o
		}
	}
}

// bootstrap lists the prefix, reads (or creates) the manifest and checks it,
// and fills the cluster when due (docs/evidence/design.md section 7.1).
func (p *Provider) bootstrap(ctx context.Context) (*clusterView, error) {
	return p.bootstrapFill(ctx, false)
}

// bootstrapFill is bootstrap; with fillNow, it fills an unfilled cluster at
// once (an operator's init).
func (p *Provider) bootstrapFill(ctx context.Context, fillNow bool) (*clusterView, error) {
	early := p.readManifestEarly(ctx)
	defer early.wait()
	l, err := p.store.List(ctx)
	if err != nil {
		return nil, fmt.Errorf("nodeid: list lease objects: %w", err)
	}
	p.observeDate(l.Date, p.clock.Now())
	var listed *lease.ObjectInfo
	if i := slices.IndexFunc(l.Objects, func(o lease.ObjectInfo) bool { return o.Key == lease.ManifestKey }); i >= 0 {
		listed = &l.Objects[i]
	}
	v := p.cachedView(listed, l.Date)
	if v == nil && listed != nil {
		if v, err = early.view(); err != nil {
			return nil, err
		}
	}
	if v == nil {
		if v, err = p.readOrCreateManifest(ctx, listed != nil); err != nil {
			return nil, err
		}
	}
	v.index(l)
	switch {
	case v.manifest.Filled:
		err = p.createMissing(ctx, v, false, false)
	case fillNow || (!v.created && v.manifestAge >= p.cfg.BootstrapWindow):
		p.fill(ctx, v, !fillNow)
	}
	return v, err
}

// manifestFor returns the manifest this task would create.
func (p *Provider) manifestFor() lease.Manifest {
	m := lease.Manifest{
		ClusterSize: p.cfg.ClusterSize, FirstNodeID: p.t.FirstNodeID, Layout: p.t.Layout, CreatedAt: p.clock.Wall(), WriteID: lease.NewWriteID(),
	}
	if p.t.readMode() {
		m.KeepAlive, m.WindowMillis, m.BackstopMillis = KeepAliveRead, p.t.Window.Milliseconds(), p.t.Backstop.Milliseconds()
	}
	return m
}

// cachedManifest is a manifest this Provider read (or wrote) and checked.
type cachedManifest struct {
	manifest lease.Manifest
	etag     string
	// seen is when (Clock.Now) a response last showed this ETag current:
	// the read or write that cached it, or a listing (see cachedView).
	seen time.Time
}

// remember caches m, checked and known by its ETag.
func (p *Provider) remember(m lease.Manifest, etag string) {
	if etag == "" {
		return
	}
	p.clockMu.Lock()
	defer p.clockMu.Unlock()
	p.manifest = &cachedManifest{manifest: m, etag: etag, seen: p.clock.Now()}
}

// clusterFullHint says what to do when Acquire gave up on a full cluster,
// with the manifest's size when this Provider read it.
func (p *Provider) clusterFullHint() string {
	p.clockMu.Lock()
	c := p.manifest
	p.clockMu.Unlock()
	ids := "node IDs"
	if c != nil {
		ids = fmt.Sprintf("%d node IDs (%s)", c.manifest.ClusterSize, c.manifest.RangeString())
	}
	return fmt.Sprintf("every one of the cluster's %s is held by a live task: run fewer tasks, or grow the cluster (nodeidctl resize --cluster-size M)", ids)
}

// recentManifest returns the cached manifest when a response showed it
// current within the last RenewInterval; false otherwise. takeFreed takes
// the cluster's range from it (docs/evidence/design.md section 7.4).
func (p *Provider) recentManifest() (lease.Manifest, bool) {
	p.clockMu.Lock()
	defer p.clockMu.Unlock()
	c := p.manifest
	if c == nil || p.clock.Now().Sub(c.seen) > p.t.RenewInterval {
		return lease.Manifest{}, false
	}
	return c.manifest, true
}

// cachedView returns the view of a bootstrap whose listing (listed, its
// date) shows the manifest with the ETag this Provider last checked: the
// same body, as each write has its own writeId, so no GET. Nil when it must
// be read.
func (p *Provider) cachedView(listed *lease.ObjectInfo, date time.Time) *clusterView {
	p.clockMu.Lock()
	c := p.manifest
	same := c != nil && listed != nil && listed.ETag == c.etag
	if same {
		c.seen = p.clock.Now()
	}
	p.clockMu.Unlock()
	if !same {
		return nil
	}
	meta := lease.Meta{ETag: c.etag, LastModified: listed.LastModified, Date: date, Liveness: listed.Liveness}
	aged := meta
	aged.LastModified = aged.LastModified.Truncate(time.Second) // listings may carry ms
	return &clusterView{manifest: c.manifest, manifestMeta: meta, manifestAge: p.manifestAge(aged)}
}

// readOrCreateManifest reads the manifest, or creates it when the listing
// lacked it, and checks its layout against this task's.
func (p *Provider) readOrCreateManifest(ctx context.Context, listed bool) (*clusterView, error) {
	var (
		body []byte
		meta lease.Meta
		err  error
	)
	if listed {
		body, meta, err = p.store.Get(ctx, lease.ManifestKey)
	}
	if !listed || errors.Is(err, lease.ErrNotFound) {
		mine := p.manifestFor()
		if body, err = mine.Encode(); err != nil {
			return nil, err
		}
		meta, err = p.createManifest(ctx, body)
		switch {
		case err == nil:
			p.log.Info("created cluster manifest", "clusterSize", mine.ClusterSize, "nodeIds", mine.RangeString(), "layout", mine.LayoutString(),
				"keepAlive", mine.KeepAliveString())
			p.remember(mine, meta.ETag)
			return &clusterView{manifest: mine, manifestMeta: meta, created: true}, nil
		case errors.Is(err, lease.ErrPreconditionFailed):
			// Someone else created it, or we did before an answer was lost:
			// it exists, read it.
			body, meta, err = p.store.Get(ctx, lease.ManifestKey)
		default:
			return nil, fmt.Errorf("nodeid: create cluster manifest: %w", err)
		}
	}
	if err != nil {
		return nil, fmt.Errorf("nodeid: read cluster manifest: %w", err)
	}
	return p.checkManifest(body, meta)
}

// checkManifest decodes the manifest read as body with meta and checks it
// against this task's configuration; a manifest that passes is remembered
// (see cachedView, recentManifest).
func (p *Provider) checkManifest(body []byte, meta lease.Meta) (*clusterView, error) {
	m, err := lease.DecodeManifest(body)
	if err != nil {
		return nil, fmt.Errorf("nodeid: cluster manifest %s: %w (inspect it with nodeidctl status)", lease.ManifestKey, err)
	}
	mine := p.manifestFor()
	if !m.SameLayout(&mine) {
		return nil, fmt.Errorf("%w: the manifest has %s, this task is configured with %s",
			ErrManifestMismatch, m.LayoutString(), mine.LayoutString())
	}
	if m.FirstNodeID != mine.FirstNodeID {
		return nil, fmt.Errorf("%w: the manifest's cluster owns node IDs %s, this task is configured with FirstNodeID %d",
			ErrManifestMismatch, m.RangeString(), mine.FirstNodeID)
	}
	if !m.SameKeepAlive(&mine) {
		return nil, fmt.Errorf("%w: the manifest has %s, this task is configured with %s: "+
			"configure the task as the manifest says (nodeid-broker %s; Config.KeepAlive), or give it another prefix: a cluster's keep-alive never changes",
			ErrManifestMismatch, m.KeepAliveString(), mine.KeepAliveString(), keepAliveFlags(&m))
	}
	if m.ClusterSize != p.cfg.ClusterSize {
		p.log.Warn("cluster size differs from the manifest's; the manifest's wins",
			"configured", p.cfg.ClusterSize, "manifest", m.ClusterSize)
	}
	p.observeDate(meta.Date, p.clock.Now())
	p.remember(m, meta.ETag)
	return &clusterView{manifest: m, manifestMeta: meta, manifestAge: p.manifestAge(meta)}, nil
}

// keepAliveFlags returns nodeid-broker's flags for the keep-alive of m.
func keepAliveFlags(m *lease.Manifest) string {
	if m.KeepAlive.Mode() != lease.KeepAliveRead {
		return "--keepalive " + string(m.KeepAlive.Mode())
	}
	return fmt.Sprintf("--keepalive read --window %v --backstop %v", time.Duration(m.WindowMillis)*time.Millisecond, time.Duration(m.BackstopMillis)*time.Millisecond)
}

// manifestCreateAttempts bounds the creates of the manifest whose outcome is
// unknown, in one bootstrap.
const manifestCreateAttempts = 3

// createManifest creates the manifest, If-None-Match: *, which is also how a
// bootstrap learns that it exists when the listing lacked it: a GET of a
// missing key is 403, not 404, to a task role whose s3:ListBucket is
// conditioned on s3:prefix (deploy/iam-task-role-policy.json). A create whose
// outcome is unknown is sent again (412 then says the manifest exists).
func (p *Provider) createManifest(ctx context.Context, body []byte) (lease.Meta, error) {
	for attempt := 1; ; attempt++ {
		meta, err := lease.CreateLive(ctx, p.store, lease.ManifestKey, body, p.cfg.BootstrapWindow)
		if attempt == manifestCreateAttempts || !errors.Is(err, lease.ErrUnknownOutcome) || ctx.Err() != nil {
			return meta, err
		}
	}
}

// manifestAge returns how old the manifest read with meta is on the store's
// clock: Date - Last-Modified, or, on a store that judges expiry itself
// (createManifest binds a liveness of BootstrapWindow), BootstrapWindow once
// the liveness ran out. Unknown: 0 (a later bootstrap fills).
func (p *Provider) manifestAge(meta lease.Meta) time.Duration {
	if meta.Liveness.Judged() {
		if meta.Liveness == lease.LivenessExpired {
			return p.cfg.BootstrapWindow
		}
		return 0
	}
	age, _ := lease.StoreAge(meta.LastModified, meta.Date) // 0 when unknown
	return age
}

// fill creates the lease objects that were never created, free, and then marks
// the manifest Filled by CAS. Failures are logged: a later bootstrap retries.
// A lazy fill (yield) gives way to another filler (see createMissing).
func (p *Provider) fill(ctx context.Context, v *clusterView, yield bool) {
	if err := p.createMissing(ctx, v, true, yield); errors.Is(err, errFillRaced) {
		p.log.Debug("another task is filling the cluster", "err", err)
		return
	} else if err != nil {
		p.log.Warn("could not create every lease object yet", "err", err)
		return
	}
	// A create whose outcome was unknown may not have landed: check by listing.
	l, err := p.store.List(ctx)
	if err != nil {
		return
	}
	check := &clusterView{manifest: v.manifest}
	check.index(l)
	if len(check.objects)+len(v.deletedIDs) < v.manifest.ClusterSize { // deleted ones stay missing
		return
	}
	v.index(l)
	m := v.manifest
	m.Filled, m.WriteID = true, lease.NewWriteID()
	body, err := m.Encode()
	var meta lease.Meta
	if err == nil {
		meta, err = p.store.Update(ctx, lease.ManifestKey, body, v.manifestMeta.ETag)
	}
	switch {
	case err == nil:
		v.manifest = m
		p.remember(m, meta.ETag)
		p.log.Info("created every lease object; the cluster manifest is now filled", "clusterSize", m.ClusterSize)
	case errors.Is(err, lease.ErrPreconditionFailed), errors.Is(err, lease.ErrUnknownOutcome):
		// Changed meanwhile (another filler, a resize): the next bootstrap sees.
	default:
		p.log.Warn("could not mark the cluster manifest filled", "err", err)
	}
}

// createMissing goes through the IDs the listing lacks: those that existed
// once are deleted (noteDeleted); with filling, the others are created free.
// With yield, it stops at the first create another task won (errFillRaced).
func (p *Provider) createMissing(ctx context.Context, v *clusterView, filling, yield bool) error {
	known := p.knownNodes()
	var missing []int
	for _, id := range v.ids(p) {
		if _, ok := v.objects[id]; ok {
			continue
		}
		if v.manifest.Filled || known[id] > 0 {
			p.noteDeleted(v, id, known[id])
			continue
		}
		if filling {
			missing = append(missing, id)
		}
	}
	if len(missing) == 0 {
		return nil
	}
	var (
		mu    sync.Mutex
		errs  []error // every failure, not only the first: joined below
		raced atomic.Bool
	)
	p.goEach(len(missing), bootstrapParallelism, func(i int) {
		if raced.Load() {
			return
		}
		id := missing[i]
		info, err := p.createFree(ctx, id)
		mu.Lock()
		defer mu.Unlock()
		switch {
		case errors.Is(err, errTaken):
			raced.Store(yield)
		case err != nil:
			errs = append(errs, err)
		case info.ETag != "":
			v.objects[id] = info
			v.createdIDs = append(v.createdIDs, id)
		}
	})
	if raced.Load() {
		errs = append(errs, errFillRaced)
	}
	return errors.Join(errs...)
}

// noteDeleted records that the lease object of id, which existed (the cluster
// is filled, or gossip saw version knownVersion of it), is missing: left out,
// and reported once per Provider (docs/evidence/design.md section 7.6).
func (p *Provider) noteDeleted(v *clusterView, id int, knownVersion int64) {
	v.deletedIDs = append(v.deletedIDs, id)
	p.deletedMu.Lock()
	defer p.deletedMu.Unlock()
	if p.deletedSeen[id] {
		return
	}
	p.deletedSeen[id] = true
	key := lease.RecordKey(id)
	err := fmt.Errorf("%w: lease object %s is missing though it existed (the cluster is filled, or gossip saw version %d of it): deleted by someone; "+
		"it is not recreated automatically (no floor for it is safe whatever the clocks): restore it with nodeidctl repair --id %d --floor MS",
		lease.ErrCorrupt, key, knownVersion, id)
	p.log.Error("a lease object was deleted; its node ID is left out until an operator repairs it", "key", key, "nodeId", id, "err", err)
	p.cfg.Observer.Anomaly(key, err)
}

// errFillRaced means another task was creating the missing objects too.
var errFillRaced = errors.New("nodeid: another task is creating the missing lease objects")

// createFree creates the lease object of id free. A lost race is errTaken;
// an unknown outcome is not an error (a later bootstrap sees).
func (p *Provider) createFree(ctx context.Context, id int) (lease.ObjectInfo, error) {
	r := lease.Record{NodeID: id, WriteID: lease.NewWriteID()}
	body, err := r.Encode()
	if err != nil {
		return lease.ObjectInfo{}, err
	}
	m, err := p.store.Create(ctx, lease.RecordKey(id), body)
	switch {
	case err == nil:
		return lease.ObjectInfo{Key: lease.RecordKey(id), ETag: m.ETag, LastModified: m.Date}, nil
	case errors.Is(err, lease.ErrPreconditionFailed):
		return lease.ObjectInfo{}, errTaken
	case errors.Is(err, lease.ErrUnknownOutcome):
		return lease.ObjectInfo{}, nil
	default:
		return lease.ObjectInfo{}, fmt.Errorf("nodeid: create %s: %w", lease.RecordKey(id), err)
	}
}

// InitReport says what Init found and did.
type InitReport struct {
	// Manifest is the cluster manifest after Init.
	Manifest lease.Manifest
	// ManifestCreated is true when Init created the manifest.
	ManifestCreated bool
	// Created lists the lease objects Init created free, in ID order.
	Created []int
	// Deleted lists, in ID order, the lease objects that existed once and
	// are missing: Init does not recreate them; nodeidctl repair restores them.
	Deleted []int
}

// Init bootstraps the cluster at once, as nodeidctl init does: it creates the
// manifest from cfg if it is absent (and checks it if not), then every missing
// lease object, and marks the manifest filled. It is idempotent and safe while
// tasks start. cfg.TaskID names the operator in logs only.
func Init(ctx context.Context, store lease.Store, cfg Config) (InitReport, error) {
	p, err := New(store, cfg)
	if err != nil {
		return InitReport{}, err
	}
	v, err := p.bootstrapFill(ctx, true)
	if err != nil {
		return InitReport{}, err
	}
	slices.Sort(v.createdIDs)
	slices.Sort(v.deletedIDs)
	rep := InitReport{Manifest: v.manifest, ManifestCreated: v.created, Created: v.createdIDs, Deleted: v.deletedIDs}
	if !v.manifest.Filled {
		return rep, errors.New("nodeid: init: not every lease object could be created yet; run it again")
	}
	return rep, nil
}
