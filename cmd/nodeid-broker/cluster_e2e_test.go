package main

import (
	"net/http"
	"slices"
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
	b.waitLog("gossip: joined no member at start; others may join this one later", 15*time.Second)
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
