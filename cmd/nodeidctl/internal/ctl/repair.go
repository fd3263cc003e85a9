package ctl

import (
	"context"
	"errors"
	"fmt"

	"github.com/nodeid/nodeid/lease"
)

// maxFloorMs bounds --floor as the record codec bounds reservedUntilMs.
const maxFloorMs = 1 << 53

func repairCommand() *command {
	return &command{
		name:     "repair",
		synopsis: "--id N --floor MS [--version V] [--yes] [common flags]",
		summary:  "rewrite a corrupt or missing lease object as free, with a confirmed floor",
		help: `
Rewrites the lease object of node ID N as free, when it is corrupt (it does not
decode as the lease of N, fails the store's checksum, or states a lease above
--max-lease-duration) or missing (deleted from a filled cluster). A corrupt object is replaced with
If-Match on the ETag just read, a missing one created with If-None-Match: *. An
object that decodes is never touched: free it with nodeidctl release; nor is
one failing its checksum whose body, unverified, is a lease not yet expired. An ID
without an object below the size of a manifest that is not filled was never
created (unused): it is free already, and repair refuses it.

--floor MS (required) becomes reservedUntilMs, the Unix ms above which the next
holder issues Snowflake timestamps. It must be at least the highest timestamp any
previous holder of N may have issued: the current time in ms is safe once every
task that may have held N has stopped (or after its lease, on a sane clock), e.g.
--floor $(date +%s%3N). The corrupt object's own reservedUntilMs, if readable, is
shown as a hint.

--version V is the new record's version (the next holder takes V+1). By default
it is 1 + the highest version found anywhere in the bucket: every record's version
and every entry of the knownNodes maps that records carry from gossip (and the
corrupt object's version, if readable). A --version below the highest version
seen for N is refused: versions never decrease.

Without --yes nothing is written: repair prints the record it would write and
exits 1.`,
		run: runRepair,
	}
}

func runRepair(a *app, ctx context.Context, cmd *command, args []string) error {
	var c commonFlags
	f := a.newFlagSet(cmd)
	c.register(f)
	id := f.Int("id", -1, "node ID whose object to rewrite (required)")
	floor := f.Int64("floor", -1, "reservedUntilMs of the new record, Unix ms (required)")
	version := f.Int64("version", -1, "version of the new record (default: 1 + the highest version found)")
	yes := f.Bool("yes", false, "write it (without --yes, only print what would be written)")
	st, err := a.setup(ctx, f, &c, args, func() error {
		if err := checkID(f, *id); err != nil {
			return err
		}
		switch {
		case !f.IsSet("floor"):
			return usagef("--floor is required: the Unix ms above which the next holder of node %d may issue timestamps", *id)
		case *floor < 0 || *floor > maxFloorMs:
			return usagef("--floor %d is outside 0..2^53", *floor)
		case f.IsSet("version") && *version < 0:
			return usagef("--version %d is negative", *version)
		}
		return nil
	})
	if err != nil {
		return err
	}
	key := lease.RecordKey(*id)
	mv, err := readManifest(ctx, st)
	if err != nil {
		return err
	}
	o := readObject(ctx, st, *id, c.rules().withManifest(mv)) // a read-mode record states the backstop: not corrupt
	switch {
	case o.state == StateUnknown:
		return fmt.Errorf("read %s: %w", key, o.err)
	case o.decoded():
		return refusef("lease object %s decodes fine (%s, version %d, holder %q): repair only rewrites a corrupt or missing object; use nodeidctl release --id %d",
			key, o.state, o.rec.Version, o.rec.Holder, *id)
	case o.state == StateCorrupt && o.meta.ETag == "":
		return fmt.Errorf("lease object %s is corrupt (%v) and the store gave no ETag to replace it conditionally", key, o.err)
	case errors.Is(o.err, lease.ErrChecksumMismatch):
		if u := judge(*id, o.body, o.meta, nil, c.rules().withManifest(mv)); u.state == StateHeld {
			return refusef("lease object %s fails its checksum (%v), but the body as served (unverified) is held by %q (version %d) and live on the store's clock: %s; its holder may still be issuing IDs, and its next renewal rewrites the object: run repair again once it has expired",
				key, o.err, u.rec.Holder, u.rec.Version, liveness(&u, c.clockMargin))
		}
	case o.state == StateMissing:
		if unusedIn(mv, *id) {
			return refusef("lease object %s was never created (unused: the cluster manifest is not filled): node %d is free, and a task takes it by creating its object; there is nothing to repair",
				key, *id)
		}
	}

	s, err := scan(ctx, st, c.rules())
	if err != nil {
		return err
	}
	perID, highest := s.highestVersions()
	seenForID := perID[*id]
	if v, ok := lenientInt(o.body, "version"); ok {
		seenForID, highest = max(seenForID, v), max(highest, v)
	}
	v := *version
	if !f.IsSet("version") {
		v = highest + 1
	} else if v < seenForID {
		return refusef("--version %d is below version %d seen for node %d: versions never decrease", v, seenForID, *id)
	}

	rec := lease.Record{NodeID: *id, Version: v, ReservedUntilMs: *floor, WriteID: lease.NewWriteID()}
	body, err := rec.Encode()
	if err != nil {
		return err
	}
	cond := "If-None-Match: *"
	if o.state == StateCorrupt {
		cond = "If-Match: " + o.meta.ETag
		a.out("lease object %s is corrupt: %v", key, o.err)
	} else {
		a.out("lease object %s is missing", key)
	}
	if r, ok := lenientInt(o.body, "reservedUntilMs"); ok {
		a.out("the corrupt object states reservedUntilMs %s (unverified)", fmtMs(r))
		if *floor < r {
			a.note("--floor %d is below the reservation the corrupt object states", *floor)
		}
	}
	a.out("new record: free, version %d (highest version seen: %d for node %d, %d in all), floor %s",
		v, seenForID, *id, highest, fmtMs(*floor))
	a.out("write %s with %s:\n  %s", key, cond, body)
	if !*yes {
		return refusef("nothing written: check the floor and the version, then run again with --yes")
	}
	if _, err := write(ctx, st, key, body, o.meta.ETag, rec.WriteID); err != nil {
		return fmt.Errorf("%s was not repaired: %w (run nodeidctl status, then try again)", key, err)
	}
	a.out("repaired node %d: free, version %d, reservedUntilMs %d", *id, v, *floor)
	return nil
}
