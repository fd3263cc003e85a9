package ctl

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/nodeid/nodeid/internal/testkit/condstrip"
	"github.com/nodeid/nodeid/lease"
	"github.com/nodeid/nodeid/lease/storetest"
	"github.com/nodeid/nodeid/s3store"
	"github.com/nodeid/nodeid/s3store/s3fake"
)

// runCheckOn runs nodeidctl check --json on store and decodes its output.
func runCheckOn(t *testing.T, store lease.Store, args ...string) (int, CheckJSON, string) {
	t.Helper()
	env := Env{
		LookupEnv: func(k string) (string, bool) { return "b", k == "NODEID_BUCKET" },
		OpenStore: func(context.Context, s3store.Config) (lease.Store, error) { return store, nil },
	}
	var out, errb bytes.Buffer
	code := Run(context.Background(), append([]string{"check", "--json"}, args...), &out, &errb, env)
	var j CheckJSON
	if err := json.Unmarshal(out.Bytes(), &j); err != nil {
		t.Fatalf("check --json: %v\n%s%s", err, out.String(), errb.String())
	}
	return code, j, errb.String()
}

func TestCheck(t *testing.T) {
	t.Run("ok", func(t *testing.T) {
		mem := storetest.NewMemStore()
		code, j, errOut := runCheckOn(t, mem)
		if code != ExitOK || !j.OK || j.Conditions != "ok" || !j.DateSeen || !j.LastModifiedSeen || j.ClockOffsetMs == nil || len(j.Problems) != 0 {
			t.Fatalf("exit %d %+v %s", code, j, errOut)
		}
		// status does not call the probe object foreign.
		var out, errb bytes.Buffer
		env := Env{LookupEnv: func(k string) (string, bool) { return "b", k == "NODEID_BUCKET" },
			OpenStore: func(context.Context, s3store.Config) (lease.Store, error) { return mem, nil }}
		Run(context.Background(), []string{"status", "--json"}, &out, &errb, env)
		if !strings.Contains(out.String(), `"foreignKeys": []`) || strings.Contains(errb.String(), lease.ProbeKey) {
			t.Fatalf("status after check:\n%s%s", out.String(), errb.String())
		}
	})
	for _, tc := range []struct {
		opt  storetest.MemOption
		cond string
	}{
		{storetest.IgnoreIfNoneMatch(), lease.CondIfNoneMatch},
		{storetest.IgnoreIfMatch(), lease.CondIfMatch},
	} {
		t.Run("ignores "+tc.cond, func(t *testing.T) {
			code, j, errOut := runCheckOn(t, storetest.NewMemStore(tc.opt))
			if code != ExitFailed || j.OK || j.Conditions != "ignored" || j.IgnoredCondition != tc.cond ||
				len(j.Problems) != 1 || !strings.Contains(j.Problems[0], "AWS S3 bucket b ignores "+tc.cond) || !strings.Contains(errOut, "not fit") {
				t.Fatalf("exit %d %+v %s", code, j, errOut)
			}
		})
	}
	t.Run("inconclusive", func(t *testing.T) {
		fs := storetest.NewFaultStore(storetest.NewMemStore())
		fs.Queue(storetest.OpUpdate, storetest.Fault{Err: storetest.Unknown(storetest.OpUpdate, lease.ProbeKey)})
		code, j, errOut := runCheckOn(t, fs)
		if code != ExitFailed || j.OK || j.Conditions != "inconclusive" || j.IgnoredCondition != "" || !strings.Contains(j.Problems[0], "could not tell") {
			t.Fatalf("exit %d %+v %s", code, j, errOut)
		}
	})
	t.Run("misconfigured", func(t *testing.T) {
		fs := storetest.NewFaultStore(storetest.NewMemStore())
		fs.Queue(storetest.OpUpdate, storetest.Fault{Err: fmt.Errorf("test: HTTP 501 NotImplemented: %w", lease.ErrMisconfigured)})
		code, j, errOut := runCheckOn(t, fs)
		if code != ExitFailed || j.OK || j.Conditions != "misconfigured" || !strings.Contains(j.Problems[0], "retrying will not help") {
			t.Fatalf("exit %d %+v %s", code, j, errOut)
		}
	})
	t.Run("clock offset", func(t *testing.T) {
		mem := storetest.NewMemStore(storetest.WithClock(func() time.Time { return time.Now().Add(-time.Minute) }))
		code, j, errOut := runCheckOn(t, mem)
		if code != ExitFailed || j.OK || j.Conditions != "ok" || *j.ClockOffsetMs > -58000 || !strings.Contains(strings.Join(j.Problems, "\n"), "behind this host's") {
			t.Fatalf("exit %d %+v %s", code, j, errOut)
		}
		if code, j, errOut = runCheckOn(t, mem, "--max-clock-offset", "2m"); code != ExitOK || !j.OK {
			t.Fatalf("with --max-clock-offset 2m: exit %d %+v %s", code, j, errOut)
		}
	})
}

// TestCheckOnStrippingProxy runs check through the real S3 store against
// gofakes3 behind a proxy that drops one condition (a broken store), and
// behind one that drops nothing.
func TestCheckOnStrippingProxy(t *testing.T) {
	srv, err := s3fake.Start(s3fake.Config{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = srv.Close() })
	for _, cond := range []string{lease.CondIfNoneMatch, lease.CondIfMatch, ""} {
		t.Run("drop "+cond, func(t *testing.T) {
			var drop []string
			if cond != "" {
				drop = []string{cond}
			}
			proxy, err := condstrip.Start(srv.URL(), drop...)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(proxy.Close)
			cfg := srv.StoreConfig("check-" + cond + "/")
			vars := map[string]string{"NODEID_BUCKET": cfg.Bucket, "NODEID_PREFIX": cfg.Prefix, "NODEID_S3_ENDPOINT": proxy.URL(),
				"NODEID_S3_PATH_STYLE": "true", "NODEID_REGION": cfg.Region}
			env := Env{
				LookupEnv: func(k string) (string, bool) { v, ok := vars[k]; return v, ok },
				OpenStore: func(ctx context.Context, c s3store.Config) (lease.Store, error) {
					c.AccessKeyID, c.SecretAccessKey = s3fake.AccessKeyID, s3fake.SecretAccessKey
					return OpenS3(ctx, c)
				},
			}
			var out, errb bytes.Buffer
			code := Run(t.Context(), []string{"check"}, &out, &errb, env)
			if cond == "" {
				if code != ExitOK || !strings.Contains(out.String(), "verdict:       ok") {
					t.Fatalf("exit %d\n%s%s", code, out.String(), errb.String())
				}
				return
			}
			want := "the S3 store at --s3-endpoint " + proxy.URL() + " (bucket " + cfg.Bucket + ") ignores " + cond + ":"
			if code != ExitFailed || !strings.Contains(out.String(), "IGNORED: "+cond) || !strings.Contains(out.String(), want) {
				t.Fatalf("exit %d, want 1 naming %q\n%s%s", code, want, out.String(), errb.String())
			}
		})
	}
}
