package main

import (
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/nodeid/nodeid/internal/testkit/condstrip"
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

// TestServeFailsFastOnMisconfiguredStore: a store that cannot be used as
// configured ends the start at once (exit 1), saying what is wrong, and is
// never retried as an inconclusive probe: a bucket that does not exist, and
// a store that answers HTTP 501 NotImplemented to a conditional PUT (it
// cannot do conditional writes), named with the header; the reason is
// printed once.
func TestServeFailsFastOnMisconfiguredStore(t *testing.T) {
	t.Parallel()
	srv := startFakeS3(t)
	target, err := url.Parse(srv.URL())
	if err != nil {
		t.Fatal(err)
	}
	rp := httputil.NewSingleHostReverseProxy(target)
	noConditions := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPut && (r.Header.Get("If-None-Match") != "" || r.Header.Get("If-Match") != "") {
			w.Header().Set("Content-Type", "application/xml")
			w.WriteHeader(http.StatusNotImplemented)
			_, _ = io.WriteString(w, `<?xml version="1.0" encoding="UTF-8"?><Error><Code>NotImplemented</Code><Message>A header you provided implies functionality that is not implemented</Message></Error>`)
			return
		}
		rp.ServeHTTP(w, r)
	}))
	t.Cleanup(noConditions.Close)
	env := brokerEnv(t)
	for _, tc := range []struct {
		name, endpoint, bucket string
		want                   []string
	}{
		{"no such bucket", srv.URL(), "nodeid-typo", []string{`bucket "nodeid-typo" does not exist at ` + srv.URL()}},
		{"no conditional writes", noConditions.URL, srv.Bucket(), []string{noConditions.URL + " answered HTTP 501 NotImplemented to a PUT with If-None-Match",
			"cannot do conditional writes"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, out, errOut := runBin(t, env, "serve", "--http-addr", "127.0.0.1:0", "--bucket", tc.bucket, "--s3-endpoint", tc.endpoint, "--s3-path-style")
			msg, n := exitLine(errOut)
			for _, want := range tc.want {
				if code != 1 || !strings.Contains(msg, want) || n != 1 {
					t.Errorf("exit %d, want 1 with %q on stderr once (%d times):\n%s%s", code, want, n, out, errOut)
				}
			}
			if strings.Contains(errOut, "inconclusive") {
				t.Errorf("a misconfigured store was retried as an inconclusive probe:\n%s", errOut)
			}
		})
	}
}
