package azblobstore_test

import (
	"bytes"
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/streaming"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/blob"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/blockblob"
	bloblease "github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/lease"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/sas"

	"github.com/nodeid/nodeid/azblobstore"
	"github.com/nodeid/nodeid/lease"
)

// condStrip is a reverse proxy in front of Azurite that drops the named
// conditional headers from every Put Blob (a PUT on a blob: no restype or comp
// parameter): a blob store that ignores write conditions, made from a correct
// one. Shared key signatures cover If-Match and If-None-Match, so stores
// behind it authenticate with a SAS (query string), which does not.
func condStrip(t *testing.T, target string, drop ...string) string {
	t.Helper()
	u, err := url.Parse(target)
	if err != nil {
		t.Fatal(err)
	}
	rp := &httputil.ReverseProxy{Rewrite: func(r *httputil.ProxyRequest) {
		r.SetURL(u)
		q := r.In.URL.Query()
		if r.In.Method == http.MethodPut && !q.Has("restype") && !q.Has("comp") {
			for _, h := range drop {
				r.Out.Header.Del(h)
			}
		}
	}}
	srv := httptest.NewServer(rp)
	t.Cleanup(srv.Close)
	return srv.URL
}

// containerSAS returns a SAS for the container with the permissions a store
// needs (read, add, create, write, list; no delete).
func containerSAS(t *testing.T, accountURL, name string) string {
	t.Helper()
	st, err := azblobstore.New(azuriteConfig(accountURL, name, ""))
	if err != nil {
		t.Fatal(err)
	}
	full, err := st.Client().GetSASURL(sas.ContainerPermissions{Read: true, Add: true, Create: true, Write: true, List: true},
		time.Now().Add(time.Hour), nil)
	if err != nil {
		t.Fatal(err)
	}
	_, query, ok := strings.Cut(full, "?")
	if !ok {
		t.Fatalf("SAS URL %q has no query", full)
	}
	return query
}

// sasStore returns a store on container name through accountURL (Azurite, or
// a proxy in front of it whose URL has no account path yet), authenticated by
// a SAS.
func sasStore(t *testing.T, accountURL, name, sasQuery, prefix string) *azblobstore.Store {
	t.Helper()
	c := azblobstore.DefaultConfig()
	c.AccountURL = accountURL
	c.Container = name
	c.Prefix = prefix
	c.SAS = sasQuery
	c.RequestTimeout = 30 * time.Second
	st, err := azblobstore.New(c)
	if err != nil {
		t.Fatal(err)
	}
	return st
}

// TestProbeRefusesAzuriteWithoutConditions: the store probe passes on Azurite
// through a proxy that forwards every header, and refuses it, with
// lease.ErrConditionIgnored, when the proxy drops If-None-Match, If-Match or
// both from Put Blob.
func TestProbeRefusesAzuriteWithoutConditions(t *testing.T) {
	accountURL := azuriteURL(t)
	name := newContainer(t, accountURL)
	sasQuery := containerSAS(t, accountURL, name)
	u, err := url.Parse(accountURL)
	if err != nil {
		t.Fatal(err)
	}
	origin := u.Scheme + "://" + u.Host
	tests := []struct {
		name string
		drop []string
		want string // the condition the probe must name; "" for none
	}{
		{"both kept", nil, ""},
		{"If-None-Match dropped", []string{"If-None-Match"}, lease.CondIfNoneMatch},
		{"If-Match dropped", []string{"If-Match"}, lease.CondIfMatch},
		{"both dropped", []string{"If-None-Match", "If-Match"}, ""},
	}
	for i, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			proxy := condStrip(t, origin, tc.drop...)
			st := sasStore(t, proxy+u.Path, name, sasQuery, string(rune('a'+i))+"/")
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			_, err := lease.Probe(ctx, st)
			t.Logf("probe: %v", err)
			if tc.drop == nil {
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

// TestAzuriteHonoursConditions sends each conditional Put Blob the store uses
// straight through the SDK (no store code in the way) and records Azurite's
// answer: If-None-Match: * on an existing blob, If-Match with a stale ETag,
// and If-Match on a missing blob must all be refused, and the blob left as it
// was.
func TestAzuriteHonoursConditions(t *testing.T) {
	accountURL := azuriteURL(t)
	name := newContainer(t, accountURL)
	st, err := azblobstore.New(azuriteConfig(accountURL, name, ""))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	put := func(key, body string, cond blob.ModifiedAccessConditions) (blockblob.UploadResponse, error) {
		return st.Client().NewBlockBlobClient(key).Upload(ctx, streaming.NopCloser(bytes.NewReader([]byte(body))),
			&blockblob.UploadOptions{AccessConditions: &blob.AccessConditions{ModifiedAccessConditions: &cond}})
	}
	refused := func(what string, err error, wantStatus ...int) {
		t.Helper()
		var re *azcore.ResponseError
		if !errors.As(err, &re) {
			t.Fatalf("%s: error = %v, want an HTTP refusal", what, err)
		}
		t.Logf("%s: HTTP %d %s", what, re.StatusCode, re.ErrorCode)
		for _, s := range wantStatus {
			if re.StatusCode == s {
				return
			}
		}
		t.Fatalf("%s: HTTP %d %s, want one of %v", what, re.StatusCode, re.ErrorCode, wantStatus)
	}
	any := azcore.ETagAny
	first, err := put("k", "v1", blob.ModifiedAccessConditions{IfNoneMatch: &any})
	if err != nil {
		t.Fatalf("first create: %v", err)
	}
	_, err = put("k", "v2", blob.ModifiedAccessConditions{IfNoneMatch: &any})
	refused("If-None-Match: * on an existing blob", err, http.StatusConflict, http.StatusPreconditionFailed)
	second, err := put("k", "v3", blob.ModifiedAccessConditions{IfMatch: first.ETag})
	if err != nil {
		t.Fatalf("If-Match with the current ETag: %v", err)
	}
	_, err = put("k", "v4", blob.ModifiedAccessConditions{IfMatch: first.ETag})
	refused("If-Match with a replaced ETag", err, http.StatusPreconditionFailed)
	bogus := azcore.ETag(`"0x8D000000BOGUS"`)
	_, err = put("missing", "v5", blob.ModifiedAccessConditions{IfMatch: &bogus})
	refused("If-Match on a missing blob", err, http.StatusPreconditionFailed, http.StatusNotFound)
	body, m, err := st.Get(ctx, "k")
	if err != nil || string(body) != "v3" || m.ETag != string(*second.ETag) {
		t.Fatalf("after the refused writes: Get = %q, %+v, %v; want v3 with ETag %s", body, m, err, *second.ETag)
	}
	if _, _, err := st.Get(ctx, "missing"); !errors.Is(err, lease.ErrNotFound) {
		t.Fatalf("Get of the blob an If-Match write should not have created: %v, want ErrNotFound", err)
	}
	if m.Date.IsZero() || m.LastModified.IsZero() || second.LastModified == nil || second.Date == nil {
		t.Fatalf("missing times: Get %+v, Put Blob Date %v Last-Modified %v", m, second.Date, second.LastModified)
	}
}

// TestBlobLeaseIsNotALostRace: a blob someone holds an Azure blob lease on
// refuses nodeid's writes (Azurite: 412 LeaseIdMissing); the store reports a
// misconfiguration that names the lease, not ErrPreconditionFailed.
func TestBlobLeaseIsNotALostRace(t *testing.T) {
	accountURL := azuriteURL(t)
	name := newContainer(t, accountURL)
	st, err := azblobstore.New(azuriteConfig(accountURL, name, "p/"))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	m, err := st.Create(ctx, "7.json", []byte("v1"))
	if err != nil {
		t.Fatal(err)
	}
	lc, err := bloblease.NewBlobClient(st.Client().NewBlobClient("p/7.json"), nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := lc.AcquireLease(ctx, -1, nil); err != nil {
		t.Fatalf("acquire a blob lease: %v", err)
	}
	defer func() { _, _ = lc.BreakLease(context.Background(), nil) }()
	_, err = st.Update(ctx, "7.json", []byte("v2"), m.ETag)
	t.Logf("update of a leased blob: %v", err)
	if !errors.Is(err, lease.ErrMisconfigured) || errors.Is(err, lease.ErrPreconditionFailed) || !strings.Contains(err.Error(), "blob lease") {
		t.Fatalf("update of a leased blob: %v, want ErrMisconfigured naming the blob lease", err)
	}
}
