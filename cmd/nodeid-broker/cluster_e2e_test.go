package main

import (
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"
)

// TestServeTwoClustersOneGossipPool: two brokers of two clusters (their own
// embedded S3 and bucket) share a gossip seed by mistake. Their labels
// (s3://BUCKET/PREFIX) differ, so neither hears the other: both hold node 0 of
// their own bucket at version 1, serve, and warn that gossip is unencrypted.
func TestServeTwoClustersOneGossipPool(t *testing.T) {
	t.Parallel()
	env := brokerEnv(t)
	common := slices.Concat([]string{"--cluster-size", "1", "--gossip-addr", "127.0.0.1:0", "--embedded-s3", "127.0.0.1:0"}, shortLease)
	a := startBroker(t, "a", env, slices.Concat(common, []string{"--bucket", "cluster-a"})...)
	seed := a.waitLog("gossip listening", 15*time.Second)["addr"].(string)
	a.waitHeld(15 * time.Second)
	b := startBroker(t, "b", env, slices.Concat(common, []string{"--bucket", "cluster-b", "--join", seed})...)
	b.waitLog("gossip: joined no member at start; trying again until one answers", 15*time.Second)
	for _, p := range []*proc{a, b} {
		s := p.waitHeld(15 * time.Second)
		if s.NodeID != 0 || s.Version != 1 || len(s.KnownNodes) != 1 || len(s.ForeignMembers) != 0 {
			t.Errorf("broker %s: %+v", p.name, s)
		}
		if code, _, err := p.get("/ids"); err != nil || code != http.StatusOK {
			t.Errorf("broker %s /ids: %d %v", p.name, code, err)
		}
		p.waitLog("gossip is not encrypted: set --gossip-key (from a secret) so that only this cluster's brokers are heard", time.Second)
	}
}

// TestServeTwoRegionsDisjointRanges: two clusters, each on a bucket of its own
// (as two regions are), own the node IDs 510..511 and 512..513
// (--first-node-id). Their brokers hold one node ID of their own range each,
// at the same time, and none of the IDs they serve repeats; each ID's node
// bits carry its broker's node ID. A third broker configured for another
// range on the first region's bucket is refused (exit 1), naming both.
func TestServeTwoRegionsDisjointRanges(t *testing.T) {
	t.Parallel()
	env := brokerEnv(t)
	common := slices.Concat([]string{"--cluster-size", "2", "--embedded-s3", "127.0.0.1:0"}, shortLease)
	eu := startBroker(t, "eu", env, slices.Concat(common, []string{"--bucket", "ids-eu", "--first-node-id", "510"})...)
	us := startBroker(t, "us", env, slices.Concat(common, []string{"--bucket", "ids-us", "--first-node-id", "512"})...)
	var ledger idLedger
	for _, b := range []struct {
		p     *proc
		first int
	}{{eu, 510}, {us, 512}} {
		s := b.p.waitHeld(15 * time.Second)
		if s.NodeID < b.first || s.NodeID > b.first+1 {
			t.Fatalf("broker %s holds node %d, outside its range %d..%d", b.p.name, s.NodeID, b.first, b.first+1)
		}
		fetchIDs(t, b.p, s.NodeID, &ledger)
	}
	if n := ledger.len(); n != 2*int(idsPerFetch) {
		t.Fatalf("%d IDs recorded, want %d", n, 2*idsPerFetch)
	}

	endpoint := eu.waitLog("embedded S3 listening", 5*time.Second)["endpoint"].(string)
	other := startBroker(t, "other", env, slices.Concat([]string{"--cluster-size", "2", "--bucket", "ids-eu", "--s3-endpoint", endpoint,
		"--s3-path-style", "--first-node-id", "0"}, shortLease)...)
	if code := other.waitExit(15 * time.Second); code != 1 {
		t.Fatalf("a broker with another range exited %d, want 1:\n%s", code, other.log())
	}
	if log := other.log(); !strings.Contains(log, "owns node IDs 510..511") || !strings.Contains(log, "FirstNodeID 0") {
		t.Fatalf("the refusal does not name both ranges:\n%s", log)
	}
}
