package gcsstore_test

import (
	"bytes"
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"cloud.google.com/go/storage"
	"google.golang.org/api/googleapi"

	"github.com/nodeid/nodeid/lease"
)

// condStrip is a reverse proxy in front of fake-gcs-server that drops the
// ifGenerationMatch query parameter from uploads (POST /upload/...) when
// drop says so for its value ("0" on a create, a generation on an update): a
// store that ignores write conditions, made from a correct one. It counts
// the parameters it dropped and the uploadType of each upload.
func condStrip(t *testing.T, target string, drop func(value string) bool) (string, *proxyLog) {
	t.Helper()
	u, err := url.Parse(target)
	if err != nil {
		t.Fatal(err)
	}
	log := &proxyLog{}
	rp := &httputil.ReverseProxy{Rewrite: func(r *httputil.ProxyRequest) {
		r.SetURL(u)
		if r.In.Method == http.MethodPost && strings.HasPrefix(r.In.URL.Path, "/upload/") {
			q := r.Out.URL.Query()
			log.mu.Lock()
			log.uploadTypes = append(log.uploadTypes, q.Get("uploadType"))
			log.mu.Unlock()
			if q.Has("ifGenerationMatch") && drop(q.Get("ifGenerationMatch")) {
				q.Del("ifGenerationMatch")
				r.Out.URL.RawQuery = q.Encode()
				log.dropped.Add(1)
			}
		}
	}}
	srv := httptest.NewServer(rp)
	t.Cleanup(srv.Close)
	return srv.URL, log
}

// proxyLog is what condStrip saw.
type proxyLog struct {
	dropped     atomic.Int32
	mu          sync.Mutex
	uploadTypes []string
}

// types returns the distinct uploadType values seen, sorted.
func (l *proxyLog) types() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := slices.Clone(l.uploadTypes)
	slices.Sort(out)
	return slices.Compact(out)
}

// TestProbeRefusesFakeGCSWithoutConditions: the store probe passes on
// fake-gcs-server through a proxy that forwards every parameter, and refuses
// it, with lease.ErrConditionIgnored, when the proxy drops ifGenerationMatch
// from creates (=0), from updates (=<generation>) or from both.
func TestProbeRefusesFakeGCSWithoutConditions(t *testing.T) {
	base := fakeGCSURL(t)
	name := newBucket(t, base)
	tests := []struct {
		name string
		drop func(string) bool
		want string // the condition the probe must name; "" for any
	}{
		{"kept", func(string) bool { return false }, ""},
		{"dropped on create", func(v string) bool { return v == "0" }, lease.CondIfNoneMatch},
		{"dropped on update", func(v string) bool { return v != "0" }, lease.CondIfMatch},
		{"dropped on both", func(string) bool { return true }, ""},
	}
	for i, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			proxy, seen := condStrip(t, base, tc.drop)
			st := fakeStore(t, proxy, name, string(rune('a'+i))+"/")
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			_, err := lease.Probe(ctx, st)
			t.Logf("probe: %v (parameters dropped: %d)", err, seen.dropped.Load())
			if got := seen.types(); !slices.Equal(got, []string{"multipart"}) {
				t.Errorf("the store's uploads were of types %q, want multipart alone", got)
			}
			if i == 0 {
				if err != nil {
					t.Fatalf("probe through a proxy that keeps the conditions: %v", err)
				}
				return
			}
			var ci *lease.ConditionIgnoredError
			if !errors.As(err, &ci) || !errors.Is(err, lease.ErrConditionIgnored) {
				t.Fatalf("probe error = %v, want a *lease.ConditionIgnoredError", err)
			}
			if tc.want != "" && ci.Condition != tc.want {
				t.Fatalf("probe named %s, want %s", ci.Condition, tc.want)
			}
		})
	}
}

// TestFakeGCSHonoursConditions sends conditional uploads straight through the
// client (no store code in the way) on both upload paths the client has: a
// multipart upload (one request; the store's) and a resumable one (a session
// opened by a POST carrying the conditions, then the body; the client's for a
// body above Writer.ChunkSize). On each, ifGenerationMatch=0 on an existing
// object, ifGenerationMatch with a replaced generation, and with a
// generation on a missing object must be refused with 412 and the object left
// as it was.
func TestFakeGCSHonoursConditions(t *testing.T) {
	base := fakeGCSURL(t)
	name := newBucket(t, base)
	st := fakeStore(t, base, name, "")
	const chunk = 256 << 10 // the smallest chunk size
	for _, path := range []struct {
		name      string
		chunkSize int
		size      int // body size
	}{
		{"multipart", 0, 100},
		{"resumable", chunk, chunk + 1000},
	} {
		t.Run(path.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			// Through a proxy that drops nothing, to see the upload type.
			proxy, seen := condStrip(t, base, func(string) bool { return false })
			bucket := fakeStore(t, proxy, name, "").Client().Bucket(name)
			body := func(c byte) []byte { return bytes.Repeat([]byte{c}, path.size) }
			put := func(key string, b []byte, cond storage.Conditions) (*storage.ObjectAttrs, error) {
				w := bucket.Object(key).If(cond).Retryer(storage.WithPolicy(storage.RetryNever)).NewWriter(ctx)
				w.ChunkSize = path.chunkSize
				if _, err := w.Write(b); err != nil {
					_ = w.Close()
					return nil, err
				}
				return w.Attrs(), w.Close()
			}
			refused := func(what string, err error) {
				t.Helper()
				var ge *googleapi.Error
				if !errors.As(err, &ge) || ge.Code != http.StatusPreconditionFailed {
					t.Fatalf("%s: error = %v, want HTTP 412", what, err)
				}
				t.Logf("%s: HTTP %d", what, ge.Code)
			}
			key := path.name
			if _, err := put(key, body('1'), storage.Conditions{DoesNotExist: true}); err != nil {
				t.Fatalf("first create: %v", err)
			}
			first, err := bucket.Object(key).Attrs(ctx)
			if err != nil {
				t.Fatal(err)
			}
			_, err = put(key, body('2'), storage.Conditions{DoesNotExist: true})
			refused("ifGenerationMatch=0 on an existing object", err)
			if _, err := put(key, body('3'), storage.Conditions{GenerationMatch: first.Generation}); err != nil {
				t.Fatalf("ifGenerationMatch with the current generation: %v", err)
			}
			second, err := bucket.Object(key).Attrs(ctx)
			if err != nil {
				t.Fatal(err)
			}
			_, err = put(key, body('4'), storage.Conditions{GenerationMatch: first.Generation})
			refused("ifGenerationMatch with a replaced generation", err)
			_, err = put(key+"-missing", body('5'), storage.Conditions{GenerationMatch: first.Generation})
			refused("ifGenerationMatch on a missing object", err)
			got, m, err := st.Get(ctx, key)
			if err != nil || !bytes.Equal(got, body('3')) || m.ETag != `"`+strconv.FormatInt(second.Generation, 10)+`"` {
				t.Fatalf("after the refused writes: Get = %d bytes, %+v, %v; want the third body at generation %d", len(got), m, err, second.Generation)
			}
			if _, _, err := st.Get(ctx, key+"-missing"); !errors.Is(err, lease.ErrNotFound) {
				t.Fatalf("Get of the object a conditional write should not have created: %v, want ErrNotFound", err)
			}
			if got := seen.types(); !slices.Equal(got, []string{path.name}) {
				t.Fatalf("uploads of types %q, want %s alone", got, path.name)
			}
		})
	}
}
