package ctl

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/nodeid/nodeid/lease"
	"github.com/nodeid/nodeid/nodeid"
)

func initCommand() *command {
	return &command{
		name:     "init",
		synopsis: "[--cluster-size N] [--epoch-ms MS] [--timestamp-bits T --node-bits B --sequence-bits S] [common flags]",
		summary:  "create the cluster manifest and the missing lease objects, and mark it filled (idempotent)",
		help: `
Bootstraps the bucket at once with nodeid.Init, the provider's own bootstrap:
creates the cluster manifest with If-None-Match: * if it is absent, then each
missing lease object below the cluster size with If-None-Match: *, and marks
the manifest filled (filled: true, by If-Match). Running it again, or while
tasks start, is safe: every write is conditional.

While the manifest is not filled, a missing lease object was never created
and is free (status shows it unused; a task takes it by creating it): init
creates it free ({"nodeId":N,"version":0,...}). Once the manifest is filled (or
when the bucket's records have seen a version of the ID), a missing lease
object was deleted by someone: like the provider, init does not recreate it,
since its last holder may have issued timestamps up to a reservation that
nothing left in the bucket bounds. It reports it; restore it with
'nodeidctl repair --id N --floor MS', with a floor you confirm.

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
	f.IntVar(&want.ClusterSize, "cluster-size", def.ClusterSize, "number of node IDs, at most 2^node-bits")
	f.IntVar(&want.FirstNodeID, "first-node-id", 0, "the cluster's lowest node ID: it owns first..first+cluster-size-1 (a range per region or bucket, so that their IDs never collide); immutable")
	f.Int64Var(&want.Layout.EpochMs, "epoch-ms", def.Layout.EpochMs, "Snowflake epoch, Unix ms")
	f.IntVar(&want.Layout.TimestampBits, "timestamp-bits", def.Layout.TimestampBits, "Snowflake timestamp bits")
	f.IntVar(&want.Layout.NodeBits, "node-bits", def.Layout.NodeBits, "Snowflake node bits")
	f.IntVar(&want.Layout.SequenceBits, "sequence-bits", def.Layout.SequenceBits, "Snowflake sequence bits")
	keepAlive := f.String("keepalive", string(lease.KeepAliveWrite), "how holders keep their leases alive: write (a conditional write every renewal) or read (mostly conditional reads, docs/evidence/design.md section 11); immutable")
	window := f.Duration("window", nodeid.DefaultWindow, "read mode's window W: how long a holder's read or write keeps it valid; immutable")
	backstop := f.Duration("backstop", nodeid.DefaultBackstop, "read mode's backstop B, the lease every record states (default 10m); immutable")
	f.Bind("cluster-size", "first-node-id", "epoch-ms", "timestamp-bits", "node-bits", "sequence-bits", "keepalive", "window", "backstop")
	st, err := a.setup(ctx, f, &c, args, func() error {
		if err := checkLayout(f, &want); err != nil {
			return err
		}
		if err := keepAliveFlags(f, &want, *keepAlive, *window, *backstop); err != nil {
			return err
		}
		return c.checkMaxLease(f)
	})
	if err != nil {
		return err
	}

	// Read the manifest first: explicit flags must match an existing one, and
	// the manifest's own size and layout are what Init is then given.
	mv, err := readManifest(ctx, st)
	if err != nil {
		return err
	}
	cluster := want
	switch mv.state {
	case StateCorrupt:
		return refusef("the cluster manifest %s is corrupt: %v; nodeidctl never overwrites a manifest: fix or remove it by hand",
			lease.ManifestKey, mv.err)
	case manifestOK:
		a.out("cluster manifest exists: cluster size %d, node IDs %s, %s, %s", mv.m.ClusterSize, mv.m.RangeString(), mv.m.LayoutString(), filledWord(mv.m.Filled))
		if err := matchLayout(f, &want, &mv.m); err != nil {
			return err
		}
		if f.IsSet("first-node-id") && want.FirstNodeID != mv.m.FirstNodeID {
			return refusef("the cluster owns node IDs %s, not from %s %d: a cluster's range never changes (a new range is a new cluster: another prefix or bucket)",
				mv.m.RangeString(), f.Source("first-node-id"), want.FirstNodeID)
		}
		if (f.IsSet("keepalive") || f.IsSet("window") || f.IsSet("backstop")) && !want.SameKeepAlive(&mv.m) {
			return refusef("the cluster manifest has %s, not the %s asked for: a cluster's keep-alive never changes",
				mv.m.KeepAliveString(), want.KeepAliveString())
		}
		if f.IsSet("cluster-size") && want.ClusterSize != mv.m.ClusterSize {
			a.note("%s %d differs from the manifest's %d, which wins; change it with nodeidctl resize",
				f.Source("cluster-size"), want.ClusterSize, mv.m.ClusterSize)
		}
		cluster = mv.m
	}

	b, err := a.bootstrap(ctx, st, &c, a.nodeidConfig(&c, cluster), mv)
	m := b.Manifest
	switch {
	case b.ManifestCreated:
		a.out("created cluster manifest %s%s: cluster size %d, node IDs %s, %s, %s", c.prefix, lease.ManifestKey, m.ClusterSize, m.RangeString(), m.LayoutString(), m.KeepAliveString())
	case mv.state == StateMissing && m.ClusterSize > 0:
		a.out("cluster manifest exists (created meanwhile by a task, or by this init when the answer to its create was lost): cluster size %d, %s",
			m.ClusterSize, m.LayoutString())
	}
	a.reportObjects(b, &c, false, err)
	if err != nil {
		return err
	}
	if mv.state != manifestOK || !mv.m.Filled {
		a.out("the cluster manifest is now filled: lease objects %s all exist (from now on, a missing one means deleted)",
			idRanges(ownIDs(m)))
	}
	return nil
}

// keepAliveFlags sets the keep-alive of the manifest init would create from
// --keepalive, --window and --backstop (the latter two for read mode only);
// the provider's configuration checks the timings.
func keepAliveFlags(f *flagSet, m *lease.Manifest, mode string, window, backstop time.Duration) error {
	switch lease.KeepAlive(mode) {
	case lease.KeepAliveWrite:
		if f.IsSet("window") || f.IsSet("backstop") {
			return usagef("%s and %s are for --keepalive read only", f.Source("window"), f.Source("backstop"))
		}
		return nil
	case lease.KeepAliveRead:
	default:
		return usagef("%s %q is not write or read", f.Source("keepalive"), mode)
	}
	if window < time.Second || backstop <= window || window%time.Millisecond != 0 || backstop%time.Millisecond != 0 {
		return usagef("%s %v and %s %v: the window must be at least 1s, the backstop above it, both whole ms",
			f.Source("window"), window, f.Source("backstop"), backstop)
	}
	m.KeepAlive, m.WindowMillis, m.BackstopMillis = lease.KeepAliveRead, window.Milliseconds(), backstop.Milliseconds()
	return nil
}

// filledWord describes a manifest's Filled flag.
func filledWord(filled bool) string {
	if filled {
		return "filled"
	}
	return "not filled"
}

// checkLayout validates the layout flags, naming the flag at fault.
func checkLayout(f *flagSet, m *lease.Manifest) error {
	l := m.Layout
	for _, b := range []struct {
		name string
		v    int
	}{{"timestamp-bits", l.TimestampBits}, {"node-bits", l.NodeBits}, {"sequence-bits", l.SequenceBits}} {
		if b.v < 1 {
			return usagef("%s %d must be at least 1", f.Source(b.name), b.v)
		}
	}
	switch {
	case l.NodeBits > 22:
		return usagef("%s %d is above 22", f.Source("node-bits"), l.NodeBits)
	case l.TimestampBits+l.NodeBits+l.SequenceBits != 63:
		return usagef("--timestamp-bits, --node-bits and --sequence-bits %d+%d+%d must sum to 63",
			l.TimestampBits, l.NodeBits, l.SequenceBits)
	case m.ClusterSize < 1 || m.ClusterSize > 1<<l.NodeBits:
		return usagef("%s %d is outside 1..%d (2^node-bits)", f.Source("cluster-size"), m.ClusterSize, 1<<l.NodeBits)
	case m.FirstNodeID < 0 || m.FirstNodeID > 1<<l.NodeBits-m.ClusterSize:
		return usagef("%s %d with %s %d leaves the node IDs 0..%d (2^node-bits)",
			f.Source("first-node-id"), m.FirstNodeID, f.Source("cluster-size"), m.ClusterSize, 1<<l.NodeBits-1)
	case l.EpochMs < 0 || l.EpochMs > 1<<53:
		return usagef("%s %d is outside 0..2^53", f.Source("epoch-ms"), l.EpochMs)
	}
	return nil
}

// matchLayout refuses an existing manifest whose layout or epoch differs from a
// flag that was given explicitly: two layouts in one ID space collide.
func matchLayout(f *flagSet, want, got *lease.Manifest) error {
	var diffs []string
	cmp := func(name string, w, g int64) {
		if f.IsSet(name) && w != g {
			diffs = append(diffs, fmt.Sprintf("%s %d, manifest %d", f.Source(name), w, g))
		}
	}
	cmp("epoch-ms", want.Layout.EpochMs, got.Layout.EpochMs)
	cmp("timestamp-bits", int64(want.Layout.TimestampBits), int64(got.Layout.TimestampBits))
	cmp("node-bits", int64(want.Layout.NodeBits), int64(got.Layout.NodeBits))
	cmp("sequence-bits", int64(want.Layout.SequenceBits), int64(got.Layout.SequenceBits))
	if len(diffs) > 0 {
		return refusef("the cluster manifest has %s, not what was asked (%s): two layouts in one ID space would collide",
			got.LayoutString(), strings.Join(diffs, "; "))
	}
	return nil
}

// ownIDs returns the node IDs of m's range, in order.
func ownIDs(m lease.Manifest) []int { return seq(m.FirstNodeID, m.FirstNodeID+m.ClusterSize) }

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
