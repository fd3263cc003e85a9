package ctl

import (
	"bytes"
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/nodeid/nodeid/lease"
	"github.com/nodeid/nodeid/s3store"
	"github.com/nodeid/nodeid/s3store/s3fake"
)

// TestOnS3Fake runs init, status and release in-process against gofakes3 through
// the real S3 store, with the server on a fake clock: held and expired are
// judged from the server's own Last-Modified and Date headers.
func TestOnS3Fake(t *testing.T) {
	clk := s3fake.NewClock(storeStart)
	srv, err := s3fake.Start(s3fake.Config{Now: clk.Now})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = srv.Close() })
	cfg := srv.StoreConfig("cluster-a/")
	runBoth := s3fakeRun(t, cfg)
	run := func(want int, args ...string) string {
		t.Helper()
		out, _ := runBoth(want, args...)
		return out
	}

	contains(t, "init", run(ExitOK, "init", "--cluster-size", "3"), "created 3 lease object(s), free: IDs 0-2",
		"the cluster manifest is now filled")
	contains(t, "status", run(ExitOK, "status", "--json"), `"filled": true`)

	// A task takes node 1 by CAS, as the provider does.
	st, err := s3store.New(t.Context(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	_, meta, err := st.Get(t.Context(), lease.RecordKey(1))
	if err != nil {
		t.Fatal(err)
	}
	r := held(1, "task-a", 1)
	r.WriteID = lease.NewWriteID()
	body, _ := r.Encode()
	if _, err := st.Update(t.Context(), lease.RecordKey(1), body, meta.ETag); err != nil {
		t.Fatal(err)
	}

	status := func() LeaseJSON {
		t.Helper()
		var s StatusJSON
		if err := json.Unmarshal([]byte(run(ExitOK, "status", "--json")), &s); err != nil {
			t.Fatal(err)
		}
		return s.Leases[1]
	}
	clk.Advance(10 * time.Second)
	run(ExitFailed, "release", "--id", "1")
	if l := status(); l.State != StateHeld || *l.AgeMs != 10000 || *l.Holder != "task-a" {
		t.Fatalf("lease 1 = %+v, want held for 10s", l)
	}
	clk.Advance(8 * time.Second)
	if l := status(); l.State != StateExpired || *l.AgeMs != 18000 {
		t.Fatalf("lease 1 = %+v, want expired after 18s", l)
	}
	contains(t, "release", run(ExitOK, "release", "--id", "1"), "released node 1 (was expired")
	contains(t, "status", run(ExitOK, "status"), "3 lease objects: 3 free")
}

// s3fakeRun returns a runner of nodeidctl in-process against the S3 server
// and bucket of cfg (gofakes3), through the real S3 store, with the operator's
// wall clock an hour behind storeStart. It fails the test unless the exit code
// is want, and returns stdout and stderr.
func s3fakeRun(t *testing.T, cfg s3store.Config) func(want int, args ...string) (string, string) {
	vars := map[string]string{
		"NODEID_BUCKET": cfg.Bucket, "NODEID_PREFIX": cfg.Prefix, "NODEID_S3_ENDPOINT": cfg.Endpoint,
		"NODEID_S3_PATH_STYLE": "true", "NODEID_REGION": cfg.Region,
	}
	env := Env{
		LookupEnv: func(k string) (string, bool) { v, ok := vars[k]; return v, ok },
		OpenStore: func(ctx context.Context, c s3store.Config) (lease.Store, error) {
			c.AccessKeyID, c.SecretAccessKey = s3fake.AccessKeyID, s3fake.SecretAccessKey
			return OpenS3(ctx, c)
		},
		Now: func() time.Time { return storeStart.Add(-time.Hour) },
	}
	return func(want int, args ...string) (string, string) {
		t.Helper()
		var out, errb bytes.Buffer
		if code := Run(t.Context(), args, &out, &errb, env); code != want {
			t.Fatalf("nodeidctl %v: exit %d, want %d\n%s%s", args, code, want, out.String(), errb.String())
		}
		return out.String(), errb.String()
	}
}
