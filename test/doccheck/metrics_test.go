package doccheck

import (
	"context"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/nodeid/nodeid/lease/storetest"
	"github.com/nodeid/nodeid/node"
)

// registeredMetrics returns the names of the nodeid_ metrics a node serves
// once it holds a node ID, has issued an ID and campaigns in an election.
func registeredMetrics(t *testing.T) map[string]bool {
	t.Helper()
	reg := prometheus.NewRegistry()
	cfg := node.DefaultLocalConfig()
	cfg.Provider.TaskID, cfg.Provider.ClusterSize = "doccheck", 1
	cfg.Metrics = reg
	cfg.Elect = "doccheck" // the election's metrics appear only with one
	n, err := node.New(storetest.NewMemStore(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := n.Start(ctx); err != nil {
		t.Fatal(err)
	}
	defer n.Close(ctx)
	if _, err := n.Next(); err != nil { // the ID counters appear once used
		t.Fatal(err)
	}
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	names := map[string]bool{}
	for _, f := range families {
		if name := f.GetName(); regexp.MustCompile(`^nodeid_`).MatchString(name) {
			names[name] = true
		}
	}
	return names
}

// TestMetricsTable: every nodeid_ metric a node registers has a row of its
// own in the metrics table of docs/nodeid-broker.md, and every row names a
// metric the node registers, so that a new or renamed metric cannot go
// undocumented.
func TestMetricsTable(t *testing.T) {
	served := registeredMetrics(t)
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
