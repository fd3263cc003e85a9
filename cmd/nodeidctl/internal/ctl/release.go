package ctl

import (
	"context"
	"fmt"
	"time"

	"github.com/nodeid/nodeid/lease"
)

func releaseCommand() *command {
	return &command{
		name:     "release",
		synopsis: "--id N [--force] [common flags]",
		summary:  "free a node ID by CAS (refuses a live lease without --force)",
		help: `
Frees the lease of node ID N: reads its object and writes it back with If-Match on
the ETag just read, holder "", the same version and the same reservedUntilMs (the
holder's reservation is the next holder's floor, so it is never lowered) and a new
writeId. A lease that is already free is left alone (exit 0).

It refuses (exit 1) a lease that is live on the store's clock (Date -
Last-Modified of the GET not above leaseMillis + 1s + --clock-margin) unless
--force is given; an expired lease needs no --force. With --force, the holder may
go on issuing IDs until its next renewal, which fails (the ETag changed) and
fences it; since its reservation is kept as the successor's floor, no ID repeats.

It refuses a missing or corrupt object: see nodeidctl init and nodeidctl repair.
An unused ID (never created, in a cluster whose manifest is not filled) is free
already: it is refused too, as there is nothing to release. So is an ID at or
above the manifest's cluster size without an object: it is outside the cluster
(one left there by a shrink is released as any other).
If the object changes between the read and the write, nothing is written (exit 1).`,
		run: runRelease,
	}
}

func runRelease(a *app, ctx context.Context, cmd *command, args []string) error {
	var c commonFlags
	f := a.newFlagSet(cmd)
	c.register(f)
	id := f.Int("id", -1, "node ID to release (required)")
	force := f.Bool("force", false, "release a lease that is live on the store's clock")
	st, err := a.setup(ctx, f, &c, args, func() error { return checkID(f, *id) })
	if err != nil {
		return err
	}
	// The manifest places the ID in the cluster's range or outside it. A
	// failed read of it is left alone: the object's own GET decides.
	mv, merr := readManifest(ctx, st)
	read := merr == nil
	outside := read && mv.state == manifestOK && !mv.m.Owns(*id)
	o := readObject(ctx, st, *id, c.rules().withManifest(mv))
	key := lease.RecordKey(*id)
	if outside && o.state != StateMissing {
		a.note("ID %d is outside the cluster's node IDs %s: no task takes it while the manifest says so", *id, mv.m.RangeString())
	}
	switch o.state {
	case StateUnknown:
		return fmt.Errorf("read %s: %w", key, o.err)
	case StateMissing:
		switch {
		case outside:
			// Not a deleted object: an ID the cluster never had (a typo, most
			// often). An object left outside by a shrink is released as any
			// other.
			return refusef("--id %d is outside the cluster's range %s (cluster size %d in the manifest %s): there is no lease object %s to release",
				*id, mv.m.RangeString(), mv.m.ClusterSize, lease.ManifestKey, key)
		case read && mv.state == StateMissing:
			return refusef("there is no lease object %s and no cluster manifest %s: nothing to release; check %s, or create the cluster with nodeidctl init",
				key, c.where(), c.aimedBy(f))
		case read && unusedIn(mv, *id):
			return refusef("there is no lease object %s: it was never created (unused: the cluster manifest is not filled), so node %d is free already: nothing to release", key, *id)
		}
		return refusef("there is no lease object %s: nothing to release (it was deleted: restore it with nodeidctl repair --id %d --floor MS)", key, *id)
	case StateCorrupt:
		return refusef("lease object %s is corrupt (%v): release only frees a record that decodes; rewrite it with nodeidctl repair --id %d --floor MS",
			key, o.err, *id)
	case StateFree:
		a.out("node %d is already free (version %d, reservedUntilMs %d): nothing to do", *id, o.rec.Version, o.rec.ReservedUntilMs)
		return nil
	case StateHeld:
		if !*force {
			return refusef("node %d is held by %q (version %d) and live on the store's clock: %s; pass --force to release it anyway",
				*id, o.rec.Holder, o.rec.Version, liveness(&o, c.clockMargin))
		}
	}
	prev := o.rec
	next := prev
	next.Holder, next.Value, next.Gossip = "", "", ""
	next.RenewedAt, next.ExpiresAt = time.Time{}, time.Time{}
	next.WriteID = lease.NewWriteID()
	body, err := next.Encode()
	if err != nil {
		return err
	}
	if _, err := write(ctx, st, key, body, o.meta.ETag, next.WriteID); err != nil {
		return fmt.Errorf("node %d was not released: %w (run nodeidctl status, then try again)", *id, err)
	}
	a.out("released node %d (was %s, held by %q): version %d and reservedUntilMs %d kept",
		*id, o.state, prev.Holder, next.Version, next.ReservedUntilMs)
	if o.state == StateHeld {
		a.note("the lease was live: its holder may issue IDs until its next renewal fails and fences it; "+
			"its reservation %d stays the next holder's floor, so no ID repeats", next.ReservedUntilMs)
	}
	return nil
}

// checkID validates an --id flag: required and within the codec's bounds.
func checkID(f *flagSet, id int) error {
	switch {
	case !f.IsSet("id"):
		return usagef("--id is required")
	case id < 0 || id > lease.MaxNodeID:
		return usagef("--id %d is outside 0..%d", id, lease.MaxNodeID)
	}
	return nil
}

// liveness describes how long a held lease stays live, on the store's clock.
func liveness(o *object, clockMargin time.Duration) string {
	if o.meta.Liveness.Judged() {
		return fmt.Sprintf("the store (etcd) holds its liveness, bound to its %s lease, until it runs out on the store's clock", o.rec.Lease())
	}
	age, ok := lease.StoreAge(o.meta.LastModified, o.meta.Date)
	if !ok {
		return "the store did not report its clock, so it cannot be judged expired"
	}
	left := o.rec.Lease() + lease.StoreClockResolution + clockMargin - age
	when := "expires within a second"
	if left > 0 {
		when = "expires in about " + fmtAge(left.Milliseconds())
	}
	return fmt.Sprintf("last written %s ago with a %s lease (+%s resolution +%s margin), %s",
		fmtAge(age.Milliseconds()), o.rec.Lease(), lease.StoreClockResolution, clockMargin, when)
}
