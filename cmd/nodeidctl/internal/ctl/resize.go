package ctl

import (
	"context"
	"fmt"

	"github.com/nodeid/nodeid/lease"
)

func resizeCommand() *command {
	return &command{
		name:     "resize",
		synopsis: "--cluster-size M [common flags]",
		summary:  "change the cluster size in the manifest by CAS",
		help: `
Sets the manifest's clusterSize to M (1..2^nodeBits) with If-Match on the ETag just
read and a new writeId; layout, epoch and createdAt are kept.

Growing also clears the manifest's filled flag in the same write: the new IDs
were never created, so they are free and a starting task may take one by
creating it. Then, like nodeidctl init (nodeid.Init), it creates the missing
lease objects free with If-None-Match: * and marks the manifest filled again.
If the cluster was filled, lease objects missing below the old size were
deleted: growing is refused until they are restored with nodeidctl repair,
since clearing the flag would make them look never created, and free.

Shrinking: only the manifest's size changes; filled stays as it is. Tasks
holding IDs at or above M keep them until they stop; new tasks do not take
them. status lists such objects apart.

--cluster-size is command-line only (no environment variable), so that a
variable left in a shell never resizes a cluster.`,
		run: runResize,
	}
}

// missingIn lists the IDs of m's range whose lease object is missing.
func missingIn(ctx context.Context, st lease.Store, m lease.Manifest) ([]int, error) {
	l, err := st.List(ctx)
	if err != nil {
		return nil, fmt.Errorf("list the prefix: %w", err)
	}
	exists := map[int]bool{}
	for _, o := range l.Objects {
		if id, ok := lease.ParseRecordKey(o.Key); ok {
			exists[id] = true
		}
	}
	var missing []int
	for _, id := range ownIDs(m) {
		if !exists[id] {
			missing = append(missing, id)
		}
	}
	return missing, nil
}

func runResize(a *app, ctx context.Context, cmd *command, args []string) error {
	var c commonFlags
	f := a.newFlagSet(cmd)
	c.register(f)
	size := f.Int("cluster-size", 0, "new number of node IDs, 1..2^nodeBits (required)")
	st, err := a.setup(ctx, f, &c, args, func() error {
		switch {
		case !f.IsSet("cluster-size"):
			return usagef("--cluster-size is required")
		case *size < 1:
			return usagef("--cluster-size %d is below 1", *size)
		}
		return c.checkMaxLease(f)
	})
	if err != nil {
		return err
	}
	mv, err := readManifest(ctx, st)
	switch {
	case err != nil:
		return err
	case mv.state == StateMissing:
		return refusef("there is no cluster manifest %s: create the cluster with nodeidctl init --cluster-size %d", lease.ManifestKey, *size)
	case mv.state != manifestOK:
		return refusef("the cluster manifest %s is corrupt (%v): nodeidctl never overwrites a manifest", lease.ManifestKey, mv.err)
	}
	old := mv.m
	if limit := 1 << old.Layout.NodeBits; old.FirstNodeID+*size > limit {
		if old.FirstNodeID == 0 {
			return refusef("--cluster-size %d is above 2^nodeBits = %d of the manifest's %s", *size, limit, old.LayoutString())
		}
		return refusef("--cluster-size %d would leave the node IDs 0..%d of the manifest's %s: the cluster's range starts at %d, so it holds at most %d",
			*size, limit-1, old.LayoutString(), old.FirstNodeID, limit-old.FirstNodeID)
	}
	if *size == old.ClusterSize {
		a.out("cluster size is already %d: nothing to do", old.ClusterSize)
		return nil
	}
	grow := *size > old.ClusterSize
	if grow && old.Filled {
		// Clearing filled makes a missing object look never created, hence
		// free: a deleted one must be restored first.
		if deleted, err := missingIn(ctx, st, old); err != nil {
			return fmt.Errorf("the cluster size was not changed: %w", err)
		} else if len(deleted) > 0 {
			return refusef("lease objects %s were deleted from the filled cluster: restore them with nodeidctl repair --id N --floor MS before growing it "+
				"(growing clears filled, which would make them look never created, and free)", idRanges(deleted))
		}
	}
	next := old
	next.ClusterSize, next.WriteID = *size, lease.NewWriteID()
	if grow {
		next.Filled = false // the new IDs were never created: free
	}
	body, err := next.Encode()
	if err != nil {
		return err
	}
	if _, err := write(ctx, st, lease.ManifestKey, body, mv.meta.ETag, next.WriteID); err != nil {
		return fmt.Errorf("the cluster size was not changed: %w (run nodeidctl status, then try again)", err)
	}
	a.out("cluster size %d -> %d: node IDs %s", old.ClusterSize, next.ClusterSize, next.RangeString())
	if !grow {
		a.note("holders of IDs %d..%d keep them until they stop; new tasks will not take them",
			next.FirstNodeID+next.ClusterSize, old.FirstNodeID+old.ClusterSize-1)
		return nil
	}
	b, err := a.bootstrap(ctx, st, &c, a.nodeidConfig(&c, next), manifestView{state: manifestOK, m: next})
	a.reportObjects(b, &c, false, err)
	if err != nil {
		return fmt.Errorf("the cluster size is %d now, but %w (tasks create the rest as they start; or run nodeidctl init)", next.ClusterSize, err)
	}
	a.out("the cluster manifest is filled again: lease objects %s all exist", idRanges(ownIDs(b.Manifest)))
	return nil
}
