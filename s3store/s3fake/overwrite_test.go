package s3fake_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"hash/crc32"
	"net/http"
	"strings"
	"testing"

	"github.com/nodeid/nodeid/s3store"
	"github.com/nodeid/nodeid/s3store/s3fake"
)

// TestOverwriteByAnyClient checks that an object overwritten by a client other
// than the SDK (a plain PUT with no checksum, one with another checksum
// algorithm, a conditional PUT) reads back through s3store: the stored checksum
// follows the new body, as on S3, instead of the old body's staying behind and
// failing every read.
func TestOverwriteByAnyClient(t *testing.T) {
	body := []byte(`{"new":true}`)
	sum := sha256.Sum256(body)
	crc := binary.BigEndian.AppendUint32(nil, crc32.Checksum(body, crc32.MakeTable(crc32.Castagnoli)))
	for _, tc := range []struct {
		name   string
		header http.Header
	}{
		{"plain", http.Header{}},
		{"sha256", http.Header{"X-Amz-Checksum-Sha256": {base64.StdEncoding.EncodeToString(sum[:])}}},
		{"crc32c", http.Header{"X-Amz-Checksum-Crc32c": {base64.StdEncoding.EncodeToString(crc)}}},
		{"if-match", http.Header{"If-Match": {""}}},
		{"content-type", http.Header{"Content-Type": {"text/plain"}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv, st := startWithStore(t, s3fake.Config{})
			ctx := context.Background()
			url := srv.URL() + "/" + srv.Bucket() + "/nodeid/1.json"
			m, err := st.Create(ctx, "1.json", []byte(`{"old":true}`))
			if err != nil {
				t.Fatal(err)
			}
			if h := head(t, url); h.Get("X-Amz-Checksum-Crc32") == "" {
				t.Fatalf("the SDK's PUT stored no CRC32 (headers %v): nothing to go stale", h)
			}
			req, err := http.NewRequest(http.MethodPut, url, bytes.NewReader(body))
			if err != nil {
				t.Fatal(err)
			}
			for k, v := range tc.header {
				if k == "If-Match" {
					v = []string{m.ETag}
				}
				req.Header[k] = v
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			_ = resp.Body.Close()
			if resp.StatusCode != http.StatusOK {
				t.Fatalf("PUT: %s", resp.Status)
			}
			got, _, err := st.Get(ctx, "1.json")
			if err != nil {
				t.Fatalf("Get after the overwrite: %v", err)
			}
			if !bytes.Equal(got, body) {
				t.Fatalf("Get = %q, want %q", got, body)
			}
			for k, v := range head(t, url) {
				if strings.HasPrefix(k, "X-Amz-Checksum-") && tc.header.Get(k) != v[0] {
					t.Errorf("HEAD after the overwrite has %s %s, the PUT sent %q", k, v[0], tc.header.Get(k))
				}
			}
		})
	}
}

// head returns the headers of a HEAD of url.
func head(t *testing.T, url string) http.Header {
	t.Helper()
	resp, err := http.Head(url)
	if err != nil {
		t.Fatal(err)
	}
	_ = resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("HEAD %s: %s", url, resp.Status)
	}
	return resp.Header
}

// TestPutChecksumChecked checks that a PUT whose checksum header does not
// match its body is refused with 400 BadDigest and leaves the object as it
// was, as S3 does, and that one that matches (CRC64NVME, by its published
// check value) is stored.
func TestPutChecksumChecked(t *testing.T) {
	srv, _ := startWithStore(t, s3fake.Config{})
	url := srv.URL() + "/" + srv.Bucket() + "/k"
	put := func(body, header, value string) *http.Response {
		t.Helper()
		req, err := http.NewRequest(http.MethodPut, url, strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set(header, value)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		_ = resp.Body.Close()
		return resp
	}
	check := binary.BigEndian.AppendUint64(nil, 0xAE8B14860A799888) // CRC-64/NVME of "123456789"
	if resp := put("123456789", "X-Amz-Checksum-Crc64nvme", base64.StdEncoding.EncodeToString(check)); resp.StatusCode != http.StatusOK {
		t.Fatalf("PUT with the right CRC64NVME: %s", resp.Status)
	}
	etag := head(t, url).Get("Etag")
	for _, h := range []string{"X-Amz-Checksum-Crc32", "X-Amz-Checksum-Crc32c", "X-Amz-Checksum-Crc64nvme", "X-Amz-Checksum-Sha1", "X-Amz-Checksum-Sha256"} {
		if resp := put("other", h, base64.StdEncoding.EncodeToString(check)); resp.StatusCode != http.StatusBadRequest {
			t.Errorf("PUT with a wrong %s: %s, want 400 BadDigest", h, resp.Status)
		}
	}
	if got := head(t, url).Get("Etag"); got != etag {
		t.Fatalf("a refused PUT changed the object: ETag %s, was %s", got, etag)
	}
}

// startWithStore starts a server with cfg for the test, closed at its end,
// and opens an s3store on its bucket under the prefix "nodeid/".
func startWithStore(t *testing.T, cfg s3fake.Config) (*s3fake.Server, *s3store.Store) {
	t.Helper()
	srv, err := s3fake.Start(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = srv.Close() })
	st, err := s3store.New(context.Background(), srv.StoreConfig("nodeid/"))
	if err != nil {
		t.Fatal(err)
	}
	return srv, st
}
