package ctl

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/nodeid/nodeid/lease"
)

// runWith returns a function that runs nodeidctl with args and the NODEID_*
// variables of env (the real stores' openers), fails t unless it exits with
// want, and returns what it wrote.
func runWith(t *testing.T, env map[string]string) func(want int, args ...string) string {
	return func(want int, args ...string) string {
		t.Helper()
		var out, errb bytes.Buffer
		code := Run(context.Background(), args, &out, &errb, Env{LookupEnv: func(k string) (string, bool) { v, ok := env[k]; return v, ok }})
		if code != want {
			t.Fatalf("nodeidctl %s: exit %d, want %d\nstdout:\n%s\nstderr:\n%s", strings.Join(args, " "), code, want, out.String(), errb.String())
		}
		return out.String() + errb.String()
	}
}

// everyCommand runs every command through run on an empty prefix of a store
// that st also reaches (run's variables aim at it): check, init, status,
// release (refused while held, then --force), resize, repair of a corrupt
// object and of one too large, leaders. It is the end-to-end test of nodeidctl on each store
// other than S3 (whose tests are in the command's own package).
func everyCommand(t *testing.T, st lease.Store, run func(want int, args ...string) string) {
	t.Helper()
	status := func() StatusJSON {
		t.Helper()
		var s StatusJSON
		if err := json.Unmarshal([]byte(run(ExitOK, "status", "--json")), &s); err != nil {
			t.Fatal(err)
		}
		return s
	}
	ctx := context.Background()

	contains(t, "check", run(ExitOK, "check"), "conditions:    ok", "verdict:       ok")
	contains(t, "init", run(ExitOK, "init", "--cluster-size", "4"), "created 4 lease object(s), free: IDs 0-3")
	s := status()
	if s.Manifest.State != "ok" || s.Manifest.ClusterSize != 4 || len(s.Leases) != 4 || s.Counts["free"] != 4 {
		t.Fatalf("status after init: %+v", s)
	}

	// A task holds node 2: release refuses, --force frees it.
	_, meta, err := st.Get(ctx, lease.RecordKey(2))
	if err != nil {
		t.Fatal(err)
	}
	rec := held(2, "task-a", 1)
	rec.WriteID = lease.NewWriteID()
	body, err := rec.Encode()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := st.Update(ctx, lease.RecordKey(2), body, meta.ETag); err != nil {
		t.Fatal(err)
	}
	if s := status(); s.Counts["held"] != 1 || s.Leases[2].State != "held" || s.Leases[2].AgeMs == nil {
		t.Fatalf("status with node 2 held: %+v", s)
	}
	contains(t, "release", run(ExitFailed, "release", "--id", "2"), "--force")
	contains(t, "release --force", run(ExitOK, "release", "--id", "2", "--force"), `released node 2 (was held, held by "task-a")`)
	if s := status(); s.Counts["free"] != 4 || *s.Leases[2].Version != 1 {
		t.Fatalf("status after release: %+v", s)
	}

	contains(t, "resize", run(ExitOK, "resize", "--cluster-size", "6"), "cluster size 4 -> 6")
	if s := status(); s.Manifest.ClusterSize != 6 || s.Counts["free"] != 6 {
		t.Fatalf("status after resize: %+v", s)
	}

	// Garbage in node 5's blob: corrupt until repaired.
	_, meta, err = st.Get(ctx, lease.RecordKey(5))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := st.Update(ctx, lease.RecordKey(5), []byte("not a lease"), meta.ETag); err != nil {
		t.Fatal(err)
	}
	run(ExitFailed, "status", "--fail-on-anomalies")
	contains(t, "repair", run(ExitOK, "repair", "--id", "5", "--floor", "1900000000000", "--yes"), "repaired node 5: free, version 2")
	if s := status(); s.Counts["free"] != 6 {
		t.Fatalf("status after repair: %+v", s)
	}
	// A body too large to be a lease object in node 4's: corrupt, and
	// repaired by its ETag as well.
	_, meta, err = st.Get(ctx, lease.RecordKey(4))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := st.Update(ctx, lease.RecordKey(4), bytes.Repeat([]byte(" "), 1<<20+1), meta.ETag); err != nil {
		t.Fatal(err)
	}
	contains(t, "repair of a body too large", run(ExitOK, "repair", "--id", "4", "--floor", "1900000000000", "--yes"),
		"the object is", "repaired node 4: free")
	if s := status(); s.Counts["free"] != 6 {
		t.Fatalf("status after the second repair: %+v", s)
	}
	run(ExitOK, "leaders")
}
