package ctl

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/nodeid/nodeid/election"
	"github.com/nodeid/nodeid/lease"
	"github.com/nodeid/nodeid/nodeid"
)

// State is a lease object's state as nodeidctl reports it.
type State string

// The states of a lease object. Free, held and expired are lease.StateOf's
// judgement of a record that decodes, on the store's clock.
const (
	// StateFree: no holder; a task may take it at once.
	StateFree State = "free"
	// StateHeld: a holder may still be issuing IDs under it.
	StateHeld State = "held"
	// StateExpired: held, but its holder stopped; a task may take it.
	StateExpired State = "expired"
	// StateCorrupt: the object does not decode as the lease of its ID (a
	// body that fails the store's checksum included), or states a lease above
	// --max-lease-duration. No task takes it; see repair.
	StateCorrupt State = "corrupt"
	// StateUnused: no object for an ID of the cluster's range while the
	// manifest is not filled, and no record's gossip map names it: it was
	// never created, and is free; a task takes it by creating it
	// (If-None-Match: *).
	StateUnused State = "unused"
	// StateMissing: no object for an ID of the cluster's range of a filled
	// manifest (or when the manifest is missing or corrupt, or a record's
	// gossip map has seen a version of it): it was deleted by someone; no
	// task takes it until nodeidctl repair restores it.
	StateMissing State = "missing"
	// StateUnknown: the object could not be read (the error says why).
	StateUnknown State = "unknown"
)

// judgeRules are the settings that classify a lease object; they must match
// the provider's ClockMargin and MaxLeaseDuration.
type judgeRules struct {
	clockMargin, maxLease time.Duration
}

// withManifest returns r for the cluster of mv: in read mode every record
// states the manifest's backstop as its lease, so the maximum lease is at
// least that (as a provider's MaxLeaseDuration is raised to its Backstop).
func (r judgeRules) withManifest(mv manifestView) judgeRules {
	if mv.state == manifestOK && mv.m.KeepAlive.Mode() == lease.KeepAliveRead {
		r.maxLease = max(r.maxLease, time.Duration(mv.m.BackstopMillis)*time.Millisecond)
	}
	return r
}

// object is one lease object as one GET saw it.
type object struct {
	id    int
	state State
	rec   lease.Record // when free, held or expired
	meta  lease.Meta   // when the object exists
	body  []byte       // when the object exists
	err   error        // why it is corrupt or unknown
	extra bool         // the ID is outside the manifest's range
}

// decoded reports whether the object holds a valid record.
func (o *object) decoded() bool {
	return o.state == StateFree || o.state == StateHeld || o.state == StateExpired
}

// judge classifies the result of one GET of the lease object of id, the way
// the provider does before it would take it: a record that does not decode, or
// that states a lease above the maximum, is corrupt; otherwise lease.StateOf
// decides on the GET's own Meta (the store's clock).
func judge(id int, body []byte, meta lease.Meta, err error, r judgeRules) object {
	o := object{id: id, meta: meta, body: body}
	switch {
	case errors.Is(err, lease.ErrNotFound):
		o.state, o.meta, o.body = StateMissing, lease.Meta{}, nil
		return o
	case errors.Is(err, lease.ErrCorrupt) || errors.Is(err, lease.ErrChecksumMismatch): // too large, or failing its checksum
		o.state, o.err = StateCorrupt, err
		if be := (*lease.BodyError)(nil); errors.As(err, &be) {
			o.meta, o.body = be.Meta, be.Body
		}
		return o
	case err != nil:
		o.state, o.err = StateUnknown, err
		return o
	}
	rec, err := lease.DecodeRecord(body, id)
	switch {
	case err == nil && rec.Lease() > r.maxLease:
		err = fmt.Errorf("%w: leaseMillis %d above the maximum lease %v (--max-lease-duration)", lease.ErrCorrupt, rec.LeaseMillis, r.maxLease)
	case err == nil && rec.Holder == nodeid.RecreatedHolder:
		err = fmt.Errorf("%w: recreated after a deletion by an older nodeid, with a floor from its recreator's wall clock (not safe whatever the clocks)", lease.ErrCorrupt)
	}
	if err != nil {
		o.state, o.err = StateCorrupt, err
		return o
	}
	o.rec = rec
	o.state = State(lease.StateOf(&rec, meta, r.clockMargin).String())
	return o
}

// readObject GETs and judges the lease object of id.
func readObject(ctx context.Context, st lease.Store, id int, r judgeRules) object {
	body, meta, err := st.Get(ctx, lease.RecordKey(id))
	return judge(id, body, meta, err, r)
}

// readObjects reads the lease objects of ids with at most readParallelism GETs
// in flight and returns them in the order of ids.
func readObjects(ctx context.Context, st lease.Store, ids []int, r judgeRules) []object {
	out := make([]object, len(ids))
	var g errgroup.Group
	g.SetLimit(readParallelism)
	for i, id := range ids {
		g.Go(func() error {
			out[i] = readObject(ctx, st, id, r) // a failed read is an object too
			return nil
		})
	}
	_ = g.Wait()
	return out
}

// manifestView is the cluster manifest as one GET saw it.
type manifestView struct {
	state State // manifestOK, StateMissing or StateCorrupt
	m     lease.Manifest
	meta  lease.Meta
	err   error
}

// manifestOK is the state of a manifest that decodes.
const manifestOK State = "ok"

// readManifest GETs and decodes the cluster manifest. A read error other than
// "not found" is returned as an error: nothing sensible can be said without it.
func readManifest(ctx context.Context, st lease.Store) (manifestView, error) {
	body, meta, err := st.Get(ctx, lease.ManifestKey)
	switch {
	case errors.Is(err, lease.ErrNotFound):
		return manifestView{state: StateMissing}, nil
	case errors.Is(err, lease.ErrCorrupt):
		return manifestView{state: StateCorrupt, meta: meta, err: err}, nil
	case err != nil:
		return manifestView{}, fmt.Errorf("read the cluster manifest %s: %w", lease.ManifestKey, err)
	}
	m, err := lease.DecodeManifest(body)
	if err != nil {
		return manifestView{state: StateCorrupt, meta: meta, err: err}, nil
	}
	return manifestView{state: manifestOK, m: m, meta: meta}, nil
}

// snapshot is everything under the prefix, read once.
type snapshot struct {
	manifest manifestView
	size     int      // the manifest's cluster size, 0 when it is missing or corrupt
	objects  []object // by ID: every ID of the range, then listed IDs outside it
	foreign  []string // keys that are neither the manifest, the probe object nor a lease object
}

// scan reads the manifest, lists the prefix and reads every lease object: each
// ID of the cluster's range (listed or not: a missing one shows as missing) and
// each listed lease object outside it (marked extra). It never writes.
func scan(ctx context.Context, st lease.Store, r judgeRules) (*snapshot, error) {
	mv, err := readManifest(ctx, st)
	if err != nil {
		return nil, err
	}
	r = r.withManifest(mv)
	l, err := st.List(ctx)
	if err != nil {
		return nil, fmt.Errorf("list the prefix: %w", err)
	}
	s := &snapshot{manifest: mv}
	var ids []int
	if mv.state == manifestOK {
		s.size, ids = mv.m.ClusterSize, ownIDs(mv.m)
	}
	for _, o := range l.Objects {
		id, ok := lease.ParseRecordKey(o.Key)
		switch {
		case ok && !s.owns(id):
			ids = append(ids, id)
		case !ok && strings.HasPrefix(o.Key, election.Dir):
			// elections: nodeidctl leaders reports them
		case !ok && o.Key != lease.ManifestKey && o.Key != lease.ProbeKey:
			s.foreign = append(s.foreign, o.Key)
		}
	}
	slices.Sort(ids)
	s.objects = readObjects(ctx, st, ids, r)
	for i := range s.objects {
		o := &s.objects[i]
		o.extra = !s.owns(o.id) && s.size > 0
	}
	// An object listed outside the range but deleted before its GET is noise.
	s.objects = slices.DeleteFunc(s.objects, func(o object) bool { return !s.owns(o.id) && o.state == StateMissing })
	// Missing in the range of an unfilled cluster: never created, unless a
	// record's gossip map has seen a version of it (then it was deleted).
	seen, _ := s.highestVersions()
	for i := range s.objects {
		if o := &s.objects[i]; o.state == StateMissing && unusedIn(mv, o.id) && seen[o.id] == 0 {
			o.state = StateUnused
		}
	}
	return s, nil
}

// unusedIn reports whether a missing lease object of id was never created
// rather than deleted: id is in the range of a manifest that is not filled.
func unusedIn(mv manifestView, id int) bool {
	return mv.state == manifestOK && !mv.m.Filled && mv.m.Owns(id)
}

// owns reports whether id is in the range of the manifest s read (none when
// it is missing or corrupt).
func (s *snapshot) owns(id int) bool { return s.size > 0 && s.manifest.m.Owns(id) }

// highestVersions returns, over every readable record of s, the highest
// version seen for each node ID (a record's own version and its knownNodes
// gossip map) and the highest of all. A corrupt object's version is read
// leniently too, when its JSON has one.
func (s *snapshot) highestVersions() (perID map[int]int64, highest int64) {
	perID = map[int]int64{}
	see := func(id int, v int64) {
		perID[id] = max(perID[id], v)
		highest = max(highest, v)
	}
	for _, o := range s.objects {
		switch {
		case o.decoded():
			see(o.id, o.rec.Version)
			for id, v := range o.rec.KnownNodes {
				see(id, v)
			}
		case o.state == StateCorrupt:
			if v, ok := lenientInt(o.body, "version"); ok {
				see(o.id, v)
			}
		}
	}
	return perID, highest
}

// lenientInt returns a non-negative integer field of a JSON object that need not
// decode strictly, for salvaging what a corrupt object still says.
func lenientInt(body []byte, field string) (int64, bool) {
	var m map[string]json.RawMessage
	if json.Unmarshal(body, &m) != nil {
		return 0, false
	}
	var v int64
	if raw, ok := m[field]; !ok || json.Unmarshal(raw, &v) != nil || v < 0 {
		return 0, false
	}
	return v, true
}
