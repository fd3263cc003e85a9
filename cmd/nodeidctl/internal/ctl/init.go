package ctl

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/nodeid/nodeid/lease"
	"github.com/nodeid/nodeid/nodeid"
)

func initCommand() *command {
	return &command{
		name:     "init",
		synopsis: "[--cluster-size N] [--epoch-ms MS] [--timestamp-bits T --node-bits B --sequence-bits S] [common flags]",
		summary:  "create the cluster manifest and the missing lease objects (idempotent)",
		help: `
Bootstraps the bucket exactly as the first task to start would: creates the
cluster manifest with If-None-Match: * if it is absent, then creates each
missing lease object below the cluster size with If-None-Match: *. Running it
again, or while tasks start, is safe: every create is conditional.

Lease objects are created free ({"nodeId":N,"version":0,...}) while the
manifest is new (less than 10s old on the store's clock, the provider's
BootstrapWindow). A lease object missing from an older cluster was deleted by
someone: like the provider, init recreates it held by "nodeid:recreated" for
--max-lease-duration, with the highest version other records have seen for
it, so that no task takes it before any task that held the deleted object has
stopped. 'nodeidctl release --force --id N' frees such an object at once.

If the manifest exists, layout and epoch flags given explicitly (or by their
variables) must match it; a different --cluster-size is only a note (the
manifest's wins; change it with nodeidctl resize).`,
		run: runInit,
	}
}

func runInit(a *app, ctx context.Context, cmd *command, args []string) error {
	var c commonFlags
	f := a.newFlagSet(cmd)
	c.register(f)
	def := nodeid.DefaultConfig()
	want := lease.Manifest{}
	f.IntVar(&want.ClusterSize, "cluster-size", def.ClusterSize, "number of node IDs, 0..N-1, at most 2^node-bits")
	f.Int64Var(&want.EpochMs, "epoch-ms", def.Layout.EpochMs, "Snowflake epoch, Unix ms")
	f.IntVar(&want.TimestampBits, "timestamp-bits", def.Layout.TimestampBits, "Snowflake timestamp bits")
	f.IntVar(&want.NodeBits, "node-bits", def.Layout.NodeBits, "Snowflake node bits")
	f.IntVar(&want.SequenceBits, "sequence-bits", def.Layout.SequenceBits, "Snowflake sequence bits")
	f.bindEnv("cluster-size", "epoch-ms", "timestamp-bits", "node-bits", "sequence-bits")
	st, err := a.setup(ctx, f, &c, args, func() error { return checkLayout(f, &want) })
	if err != nil {
		return err
	}
	want.CreatedAt, want.WriteID = a.env.Now(), lease.NewWriteID()

	m, created, err := ensureManifest(ctx, st, &want)
	if err != nil {
		return err
	}
	if created {
		a.out("created cluster manifest %s%s: cluster size %d, %s", c.prefix, lease.ManifestKey, m.m.ClusterSize, m.m.LayoutString())
	} else {
		a.out("cluster manifest exists: cluster size %d, %s", m.m.ClusterSize, m.m.LayoutString())
		if err := matchLayout(f, &want, &m.m); err != nil {
			return err
		}
		if f.set["cluster-size"] && want.ClusterSize != m.m.ClusterSize {
			a.note("%s %d differs from the manifest's %d, which wins; change it with nodeidctl resize",
				f.source("cluster-size"), want.ClusterSize, m.m.ClusterSize)
		}
	}
	// Like the provider: missing objects of a new cluster are a bootstrap in
	// progress, those of an older one were deleted (an unknown age is old).
	age, known := lease.StoreAge(m.meta.LastModified, m.meta.Date)
	fresh := created || (known && age < def.BootstrapWindow)
	return a.createMissing(ctx, st, &c, m.m.ClusterSize, 0, fresh)
}

// checkLayout validates the layout flags, naming the flag at fault.
func checkLayout(f *flagSet, m *lease.Manifest) error {
	for _, b := range []struct {
		name string
		v    int
	}{{"timestamp-bits", m.TimestampBits}, {"node-bits", m.NodeBits}, {"sequence-bits", m.SequenceBits}} {
		if b.v < 1 {
			return usagef("%s %d must be at least 1", f.source(b.name), b.v)
		}
	}
	switch {
	case m.NodeBits > 22:
		return usagef("%s %d is above 22", f.source("node-bits"), m.NodeBits)
	case m.TimestampBits+m.NodeBits+m.SequenceBits != 63:
		return usagef("--timestamp-bits, --node-bits and --sequence-bits %d+%d+%d must sum to 63",
			m.TimestampBits, m.NodeBits, m.SequenceBits)
	case m.ClusterSize < 1 || m.ClusterSize > 1<<m.NodeBits:
		return usagef("%s %d is outside 1..%d (2^node-bits)", f.source("cluster-size"), m.ClusterSize, 1<<m.NodeBits)
	case m.EpochMs < 0 || m.EpochMs > 1<<53:
		return usagef("%s %d is outside 0..2^53", f.source("epoch-ms"), m.EpochMs)
	}
	return nil
}

// matchLayout refuses an existing manifest whose layout or epoch differs from a
// flag that was given explicitly: two layouts in one ID space collide.
func matchLayout(f *flagSet, want, got *lease.Manifest) error {
	var diffs []string
	cmp := func(name string, w, g int64) {
		if f.set[name] && w != g {
			diffs = append(diffs, fmt.Sprintf("%s %d, manifest %d", f.source(name), w, g))
		}
	}
	cmp("epoch-ms", want.EpochMs, got.EpochMs)
	cmp("timestamp-bits", int64(want.TimestampBits), int64(got.TimestampBits))
	cmp("node-bits", int64(want.NodeBits), int64(got.NodeBits))
	cmp("sequence-bits", int64(want.SequenceBits), int64(got.SequenceBits))
	if len(diffs) > 0 {
		return refusef("the cluster manifest has %s, not what was asked (%s): two layouts in one ID space would collide",
			got.LayoutString(), strings.Join(diffs, "; "))
	}
	return nil
}

// ensureManifest returns the cluster manifest, creating it from want if absent,
// and whether this call created it.
func ensureManifest(ctx context.Context, st lease.Store, want *lease.Manifest) (manifestView, bool, error) {
	mv, err := readManifest(ctx, st)
	if err != nil {
		return mv, false, err
	}
	if mv.state == StateMissing {
		body, err := want.Encode()
		if err != nil {
			return mv, false, err
		}
		meta, err := write(ctx, st, lease.ManifestKey, body, "", want.WriteID)
		switch {
		case err == nil:
			return manifestView{state: manifestOK, m: *want, meta: meta}, true, nil
		case errors.Is(err, ErrChanged): // someone else created it first
			if mv, err = readManifest(ctx, st); err != nil {
				return mv, false, err
			}
		default:
			return mv, false, fmt.Errorf("create the cluster manifest: %w", err)
		}
	}
	if mv.state != manifestOK {
		return mv, false, refusef("the cluster manifest %s is %s: %v; nodeidctl never overwrites a manifest: fix or remove it by hand",
			lease.ManifestKey, mv.state, mv.err)
	}
	return mv, false, nil
}

// createMissing creates the lease objects of IDs from..size-1 that the listing
// lacks: free when fresh (a bootstrap, or IDs a resize just added), else as the
// provider recreates a deleted object (held by nodeid.RecreatedHolder for the
// maximum lease). It reports what it did.
func (a *app) createMissing(ctx context.Context, st lease.Store, c *commonFlags, size, from int, fresh bool) error {
	l, err := st.List(ctx)
	if err != nil {
		return fmt.Errorf("list the prefix: %w", err)
	}
	exists := map[int]bool{}
	for _, o := range l.Objects {
		if id, ok := lease.ParseRecordKey(o.Key); ok {
			exists[id] = true
		}
	}
	var missing []int
	for id := from; id < size; id++ {
		if !exists[id] {
			missing = append(missing, id)
		}
	}
	if len(missing) == 0 {
		a.out("all lease objects %s exist: nothing to create", idRanges(seq(from, size)))
		return nil
	}
	var known map[int]int64
	if !fresh {
		s, err := scan(ctx, st, c.rules())
		if err != nil {
			return err
		}
		known, _ = s.highestVersions()
	}
	wall := a.env.Now()
	var (
		mu                     sync.Mutex
		made, raced, failedIDs []int
		errs                   []error
		wg                     sync.WaitGroup
		sem                    = make(chan struct{}, readParallelism)
	)
	for _, id := range missing {
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			r := lease.Record{NodeID: id, WriteID: lease.NewWriteID()}
			if !fresh {
				r.Holder, r.Version = nodeid.RecreatedHolder, known[id]
				r.LeaseMillis = c.maxLease.Milliseconds()
				r.ReservedUntilMs = wall.UnixMilli() + r.LeaseMillis
			}
			body, err := r.Encode()
			if err == nil {
				_, err = write(ctx, st, lease.RecordKey(id), body, "", r.WriteID)
			}
			mu.Lock()
			defer mu.Unlock()
			switch {
			case err == nil:
				made = append(made, id)
			case errors.Is(err, ErrChanged):
				raced = append(raced, id)
			default:
				failedIDs = append(failedIDs, id)
				errs = append(errs, fmt.Errorf("create %s: %w", lease.RecordKey(id), err))
			}
		})
	}
	wg.Wait()
	if len(made) > 0 {
		if fresh {
			a.out("created %d lease object(s), free: IDs %s", len(made), idRanges(made))
		} else {
			a.out("recreated %d deleted lease object(s) held by %q: IDs %s", len(made), nodeid.RecreatedHolder, idRanges(made))
			a.note("a lease object missing from an existing cluster was deleted by someone; no task takes a recreated one "+
				"until it is %v old on the store's clock (nodeidctl release --force --id N frees it at once)", c.maxLease)
		}
	}
	if len(raced) > 0 {
		a.out("%d lease object(s) were created by someone else meanwhile: IDs %s", len(raced), idRanges(raced))
	}
	if len(errs) > 0 {
		return fmt.Errorf("could not create %d lease object(s) (IDs %s): %w", len(errs), idRanges(failedIDs), errs[0])
	}
	return nil
}

// seq returns from..to-1.
func seq(from, to int) []int {
	out := make([]int, 0, max(0, to-from))
	for i := from; i < to; i++ {
		out = append(out, i)
	}
	return out
}

// idRanges formats IDs compactly: "0-3, 7, 9-10".
func idRanges(ids []int) string {
	ids = slices.Sorted(slices.Values(ids))
	var parts []string
	for i := 0; i < len(ids); {
		j := i
		for j+1 < len(ids) && ids[j+1] == ids[j]+1 {
			j++
		}
		if j > i {
			parts = append(parts, fmt.Sprintf("%d-%d", ids[i], ids[j]))
		} else {
			parts = append(parts, strconv.Itoa(ids[i]))
		}
		i = j + 1
	}
	if len(parts) == 0 {
		return "(none)"
	}
	return strings.Join(parts, ", ")
}
