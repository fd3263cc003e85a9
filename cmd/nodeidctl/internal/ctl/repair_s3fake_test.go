package ctl

import (
	"bytes"
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync"
	"testing"

	"github.com/nodeid/nodeid/lease"
	"github.com/nodeid/nodeid/s3store"
	"github.com/nodeid/nodeid/s3store/s3fake"
)

// TestRepairOnS3Fake repairs, through the real S3 store on gofakes3, lease
// objects that do not decode for each reason a bucket gives: bad JSON, an
// unknown schema, another node's record, a body too large, and a body that
// fails its checksum as served. Each is replaced by CAS on its ETag with the
// floor given, and reads back free with that floor. A body that fails its
// checksum but is a live lease is refused and left as it is.
func TestRepairOnS3Fake(t *testing.T) {
	clk := s3fake.NewClock(storeStart)
	h, err := s3fake.NewHandler(s3fake.Config{Now: clk.Now})
	if err != nil {
		t.Fatal(err)
	}
	bad := &badChecksum{etags: map[string]bool{}}
	srv := httptest.NewServer(bad.wrap(h))
	t.Cleanup(srv.Close)
	cfg := s3fake.StoreConfigAt(srv.URL, s3fake.DefaultBucket, "cluster-r/")
	run := s3fakeRun(t, cfg)
	url := func(id int) string { return srv.URL + "/" + cfg.Bucket + "/" + cfg.Prefix + lease.RecordKey(id) }
	run(ExitOK, "init", "--cluster-size", "7")

	rec := held(6, "task-live", 3)
	rec.WriteID = lease.NewWriteID()
	live, err := rec.Encode()
	if err != nil {
		t.Fatal(err)
	}
	const free = `"holder":"","version":2,"leaseMillis":0,"reservedUntilMs":1700000000000,"writeId":"0123456789abcdef"}`
	plants := []struct {
		id       int
		body     []byte
		checksum bool // served with a CRC32 that is not the body's
	}{
		{0, []byte(`{"schema":1,"nodeId":0,`), false},
		{1, []byte(`{"schema":9,"nodeId":1,` + free), false},
		{2, []byte(`{"schema":1,"nodeId":5,` + free), false},
		{3, bytes.Repeat([]byte(" "), s3store.MaxObjectSize+1), false},
		{4, []byte(`{"schema":1,"nodeId":4,` + free), true},
		{6, live, true},
	}
	etags := map[int]string{}
	for _, p := range plants {
		etags[p.id] = plainPut(t, url(p.id), p.body)
		if p.checksum {
			bad.add(etags[p.id])
		}
	}
	out, _ := run(ExitOK, "status", "--json")
	contains(t, "status", out, `"state": "corrupt"`)

	st, err := s3store.New(t.Context(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	floor := storeStart.UnixMilli()
	for _, p := range plants[:5] {
		id := strconv.Itoa(p.id)
		out, _ := run(ExitOK, "repair", "--id", id, "--floor", strconv.FormatInt(floor, 10), "--yes")
		contains(t, "repair "+id, out, "lease object "+lease.RecordKey(p.id)+" is corrupt: ", "write "+lease.RecordKey(p.id)+" with If-Match: "+etags[p.id], "repaired node "+id+": free")
		body, _, err := st.Get(t.Context(), lease.RecordKey(p.id))
		if err != nil {
			t.Fatalf("node %d after repair: %v", p.id, err)
		}
		r, err := lease.DecodeRecord(body, p.id)
		if err != nil || !r.Free() || r.ReservedUntilMs != floor {
			t.Fatalf("node %d after repair = %+v, %v; want free with floor %d", p.id, r, err, floor)
		}
	}

	_, stderr := run(ExitFailed, "repair", "--id", "6", "--floor", strconv.FormatInt(floor, 10), "--yes")
	contains(t, "repair 6", stderr, "fails its checksum", `held by "task-live" (version 3) and live on the store's clock`)
	if got := headETag(t, url(6)); got != etags[6] {
		t.Fatalf("node 6 was written: ETag %s, planted %s", got, etags[6])
	}
}

// badChecksum serves the objects whose ETag it was given with a CRC32 that is
// not their body's, as a server with a stale stored checksum does.
type badChecksum struct {
	mu    sync.Mutex
	etags map[string]bool
}

func (b *badChecksum) add(etag string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.etags[etag] = true
}

func (b *badChecksum) wrap(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h.ServeHTTP(&staleCRC{ResponseWriter: w, b: b}, r)
	})
}

// staleCRC sets the wrong CRC32 before the response's header is sent.
type staleCRC struct {
	http.ResponseWriter
	b    *badChecksum
	sent bool
}

func (s *staleCRC) WriteHeader(code int) {
	if !s.sent {
		s.sent = true
		s.b.mu.Lock()
		if s.b.etags[s.Header().Get("Etag")] {
			s.Header().Set("X-Amz-Checksum-Crc32", "AAAAAA==")
		}
		s.b.mu.Unlock()
	}
	s.ResponseWriter.WriteHeader(code)
}

func (s *staleCRC) Write(p []byte) (int, error) {
	s.WriteHeader(http.StatusOK)
	return s.ResponseWriter.Write(p)
}

// plainPut writes body at url with a plain HTTP PUT, as curl -X PUT does, and
// returns the new ETag.
func plainPut(t *testing.T, url string, body []byte) string {
	t.Helper()
	req, err := http.NewRequest(http.MethodPut, url, bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	_ = resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("PUT %s: %s", url, resp.Status)
	}
	return resp.Header.Get("Etag")
}

// headETag returns the ETag of the object at url.
func headETag(t *testing.T, url string) string {
	t.Helper()
	resp, err := http.Head(url)
	if err != nil {
		t.Fatal(err)
	}
	_ = resp.Body.Close()
	return resp.Header.Get("Etag")
}
