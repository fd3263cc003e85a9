package main

import (
	"strings"
	"testing"
	"time"

	"github.com/nodeid/nodeid/internal/condstrip"
)

// TestServeProbeRefusesBrokenStore points serve at a proxy in front of
// gofakes3 that drops one write condition: the broker exits 1 before taking
// an ID, naming the endpoint and the ignored condition. Through a proxy that
// drops nothing it takes an ID.
func TestServeProbeRefusesBrokenStore(t *testing.T) {
	t.Parallel()
	srv := startFakeS3(t)
	env := brokerEnv(t)
	for _, cond := range []string{"If-None-Match", "If-Match", ""} {
		name := cond
		if name == "" {
			name = "none"
		}
		t.Run(name, func(t *testing.T) {
			var drop []string
			if cond != "" {
				drop = append(drop, cond)
			}
			proxy, err := condstrip.Start(srv.URL(), drop...)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(proxy.Close)
			args := append([]string{"--bucket", srv.Bucket(), "--prefix", "probe-" + name + "/", "--s3-endpoint", proxy.URL(), "--s3-path-style", "--cluster-size", "2"}, shortLease...)
			if cond == "" {
				p := startBroker(t, "probe-ok", env, args...)
				s := p.waitHeld(15 * time.Second)
				if s.StoreProbe == nil || !s.StoreProbe.OK || !s.StoreProbe.DateSeen || !s.StoreProbe.LastModifiedSeen {
					t.Fatalf("/status storeProbe = %+v", s.StoreProbe)
				}
				return
			}
			code, out, errOut := runBin(t, env, append([]string{"serve", "--http-addr", "127.0.0.1:0"}, args...)...)
			want := "the S3 store at --s3-endpoint " + proxy.URL() + " (bucket " + srv.Bucket() + ") ignores " + cond + ":"
			if code != 1 || !strings.Contains(errOut, want) {
				t.Fatalf("exit %d, want 1 with %q on stderr:\n%s%s", code, want, out, errOut)
			}
			if strings.Contains(errOut, "serving IDs") {
				t.Fatalf("the broker served IDs on a broken store:\n%s", errOut)
			}
		})
	}
}
