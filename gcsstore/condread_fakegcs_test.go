package gcsstore_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"sync/atomic"
	"testing"

	"github.com/nodeid/nodeid/lease"
	"github.com/nodeid/nodeid/lease/storetest"
)

// notModifiedProxy is a reverse proxy in front of fake-gcs-server that
// honours ifGenerationNotMatch on downloads, which fake-gcs-server ignores:
// a download whose answer shows (x-goog-generation) the generation the
// condition names is answered 304 Not Modified instead, with no body, and
// with x-goog-generation when withGen (what Cloud Storage is assumed to
// send), without it otherwise (what it may send: its documentation does not
// say). The generation compared is the one the server read, so the proxy
// adds no staleness. It counts the 304s it made.
func notModifiedProxy(t *testing.T, target string, withGen bool) (string, *atomic.Int32) {
	t.Helper()
	u, err := url.Parse(target)
	if err != nil {
		t.Fatal(err)
	}
	var made atomic.Int32
	rp := &httputil.ReverseProxy{
		Rewrite: func(r *httputil.ProxyRequest) { r.SetURL(u) },
		ModifyResponse: func(res *http.Response) error {
			q := res.Request.URL.Query()
			cond := q.Get("ifGenerationNotMatch")
			if res.Request.Method != http.MethodGet || q.Get("alt") != "media" || cond == "" ||
				res.StatusCode != http.StatusOK || res.Header.Get("X-Goog-Generation") != cond {
				return nil
			}
			_ = res.Body.Close()
			res.StatusCode, res.Status = http.StatusNotModified, "304 Not Modified"
			res.Body, res.ContentLength = http.NoBody, 0
			for _, h := range []string{"Content-Length", "Content-Type", "X-Goog-Hash", "Accept-Ranges"} {
				res.Header.Del(h)
			}
			if !withGen {
				res.Header.Del("X-Goog-Generation")
			}
			made.Add(1)
			return nil
		},
	}
	srv := httptest.NewServer(rp)
	t.Cleanup(srv.Close)
	return srv.URL, &made
}

// TestConformanceFakeGCSNotModified runs the conformance suite on
// fake-gcs-server behind notModifiedProxy: with x-goog-generation on its
// 304s, the store credits them (ErrNotModified) and ProbeReads passes having
// seen a 304; without it, every 304 is ErrNotModifiedUnproven and
// ProbeReads passes with plain reads (Target.NotModifiedWithoutETag).
func TestConformanceFakeGCSNotModified(t *testing.T) {
	base := fakeGCSURL(t)
	for _, withGen := range []bool{true, false} {
		what := "304 with x-goog-generation"
		if !withGen {
			what = "304 without x-goog-generation"
		}
		t.Run(what, func(t *testing.T) {
			proxy, made := notModifiedProxy(t, base, withGen)
			tg := fakeTarget(proxy, newBucket(t, base))
			tg.NotModifiedWithoutETag = !withGen
			storetest.Run(t, tg)
			t.Logf("the proxy answered %d downloads 304", made.Load())
		})
	}
}

// TestProbeReadsFakeGCSNotModified: lease.ProbeReads passes through a proxy
// whose 304s show the generation, and sees a 304; when they do not, it
// passes with plain reads (PlainReads: a holder's GET shows the generation).
func TestProbeReadsFakeGCSNotModified(t *testing.T) {
	base := fakeGCSURL(t)
	name := newBucket(t, base)
	ctx := context.Background()
	for _, withGen := range []bool{true, false} {
		proxy, _ := notModifiedProxy(t, base, withGen)
		prefix := "with/"
		if !withGen {
			prefix = "without/"
		}
		r, err := lease.ProbeReads(ctx, fakeStore(t, proxy, name, prefix), fakeStore(t, proxy, name, prefix))
		t.Logf("x-goog-generation on the 304: %v: %+v, %v", withGen, r, err)
		switch {
		case withGen && (err != nil || !r.NotModifiedSeen || !r.DateSeen):
			t.Errorf("ProbeReads with x-goog-generation on the 304s = %+v, %v; want a pass that saw a 304 and its Date", r, err)
		case !withGen && (err != nil || !r.PlainReads):
			t.Errorf("ProbeReads without x-goog-generation on the 304s = %+v, %v; want a pass with plain reads", r, err)
		}
	}
}
