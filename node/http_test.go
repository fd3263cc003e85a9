package node

import (
	"bytes"
	"encoding/json"
	"math/rand/v2"
	"net/http"
	"strconv"
	"testing"

	"github.com/nodeid/nodeid/lease/storetest"
	"github.com/nodeid/nodeid/snowflake"
)

// The hand-written /ids body is byte for byte what encoding/json writes for
// the same IDsResponse, across ranges whose decimal forms carry into more
// digits, and split into several ranges as NextN returns them, with and
// without a recovery count.
func TestIDsBodyMatchesEncodingJSON(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	type tc struct {
		node       int
		version    int64
		ranges     []snowflake.Range
		recoveries int64
	}
	cases := []tc{
		{0, 0, []snowflake.Range{{First: 0, N: 1}}, 0},
		{1, 1, []snowflake.Range{{First: 0, N: 25}}, 1},
		{5, 3, []snowflake.Range{{First: 7, N: 5}}, 0},                           // 7..11: one digit more
		{1023, 1 << 40, []snowflake.Range{{First: 95, N: 1010}}, 12},             // 95..1104: two carries
		{7, 2, []snowflake.Range{{First: 999_999_999_999_999_990, N: 20}}, 0},    // to 19 digits
		{7, 2, []snowflake.Range{{First: 9_223_372_036_854_775_000, N: 808}}, 0}, // up to MaxInt64
		{3, 9, []snowflake.Range{{First: 249806480323117056, N: 4096}, {First: 249806480327311360, N: 4096}, {First: 249806480331505664, N: 1808}}, 0},
	}
	for range 200 {
		c := tc{node: rng.IntN(1024), version: rng.Int64N(1 << 50), recoveries: rng.Int64N(3)}
		for range 1 + rng.IntN(4) {
			c.ranges = append(c.ranges, snowflake.Range{First: snowflake.ID(rng.Int64N(1 << 62)), N: 1 + rng.IntN(3000)})
		}
		cases = append(cases, c)
	}
	var buf []byte
	for _, c := range cases {
		want := IDsResponse{NodeID: c.node, Version: c.version, IDs: []string{}, Recoveries: c.recoveries}
		buf = appendIDsHead(buf[:0], c.node, c.version)
		for i, r := range c.ranges {
			buf = appendIDs(buf, r, i == 0)
			for id := range r.All() {
				want.IDs = append(want.IDs, strconv.FormatInt(id.Int64(), 10))
			}
		}
		buf = appendIDsTail(buf, c.recoveries)
		wb, err := json.Marshal(want)
		if err != nil {
			t.Fatal(err)
		}
		wb = append(wb, '\n')
		if !bytes.Equal(buf, wb) {
			t.Fatalf("node %d version %d ranges %v:\n got %.300s\nwant %.300s", c.node, c.version, c.ranges, buf, wb)
		}
	}
}

func BenchmarkIDsBody(b *testing.B) {
	r := snowflake.Range{First: 249806480323117056, N: 4096}
	var buf []byte
	for b.Loop() {
		buf = appendIDsHead(buf[:0], 12, 3)
		for i := range 3 {
			buf = appendIDs(buf, r, i == 0)
		}
		buf = appendIDsTail(buf, 0)
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/(3*4096), "ns/id")
}

// TestOpsHandlerServesNoIDs: the operator handler answers everything
// Handler does but /ids.
func TestOpsHandlerServesNoIDs(t *testing.T) {
	n, err := New(storetest.NewMemStore(), testConfig("a", 1))
	if err != nil {
		t.Fatal(err)
	}
	for path, want := range map[string]int{"/ids": http.StatusNotFound, "/health": http.StatusServiceUnavailable,
		"/ready": http.StatusServiceUnavailable, "/status": http.StatusOK, "/metrics": http.StatusOK} {
		if code, _ := get(n.OpsHandler(), path); code != want {
			t.Errorf("OpsHandler %s: %d, want %d", path, code, want)
		}
	}
	if code, _ := get(n.Handler(), "/ids"); code != http.StatusServiceUnavailable {
		t.Errorf("Handler /ids before Start: %d, want 503", code)
	}
}
