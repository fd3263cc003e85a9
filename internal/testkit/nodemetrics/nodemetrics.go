// Package nodemetrics tells the tests that keep the docs and the operator kit
// true which metrics a node serves.
package nodemetrics

import (
	"context"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/nodeid/nodeid/lease/storetest"
	"github.com/nodeid/nodeid/node"
)

// Served returns the names of the metric families a node registers once it
// holds a node ID, has issued an ID and campaigns in an election (the
// election's metrics appear only with one, the ID counters once used), on an
// in-memory store. Histograms appear under their family name, without the
// _bucket, _sum and _count series.
func Served(t testing.TB) map[string]bool {
	t.Helper()
	reg := prometheus.NewRegistry()
	cfg := node.DefaultLocalConfig()
	cfg.Provider.TaskID, cfg.Provider.ClusterSize = "nodemetrics", 1
	cfg.Metrics = reg
	cfg.Elect = "nodemetrics"
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
	if _, err := n.Next(); err != nil {
		t.Fatal(err)
	}
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	names := map[string]bool{}
	for _, f := range families {
		names[f.GetName()] = true
	}
	return names
}
