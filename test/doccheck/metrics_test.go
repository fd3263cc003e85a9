package doccheck

import (
	"regexp"
	"strings"
	"testing"

	"github.com/nodeid/nodeid/internal/testkit/nodemetrics"
)

// TestMetricsTable: every nodeid_ metric a node registers has a row of its
// own in the metrics table of docs/nodeid-broker.md, and every row names a
// metric the node registers, so that a new or renamed metric cannot go
// undocumented.
func TestMetricsTable(t *testing.T) {
	served := map[string]bool{}
	for name := range nodemetrics.Served(t) {
		if strings.HasPrefix(name, "nodeid_") {
			served[name] = true
		}
	}
	if len(served) < 20 || !served["nodeid_lease_jeopardy"] || !served["nodeid_leader"] {
		t.Fatalf("the node serves %d nodeid_ metrics: %v", len(served), served)
	}
	text := read(t, "docs/nodeid-broker.md")
	i := strings.Index(text, "### `GET /metrics`")
	if i < 0 {
		t.Fatal("docs/nodeid-broker.md has no GET /metrics section")
	}
	rows := map[string]bool{}
	for _, m := range regexp.MustCompile("(?m)^\\| `(nodeid_[a-z0-9_]+)` \\|").FindAllStringSubmatch(text[i:], -1) {
		rows[m[1]] = true
	}
	for name := range served {
		if !rows[name] {
			t.Errorf("docs/nodeid-broker.md, GET /metrics: no row for %s", name)
		}
	}
	for name := range rows {
		if !served[name] {
			t.Errorf("docs/nodeid-broker.md, GET /metrics: a row for %s, which the node does not register", name)
		}
	}
}
