package nodeid

import (
	"context"
	"testing"
	"time"
)

// TestValueIsPublishedWhileHeld: Config.Value is in the record from the take
// (by create, and by CAS of a free record) through every renewal, and the
// release writes the record free without it.
func TestValueIsPublishedWhileHeld(t *testing.T) {
	e := newEnv(t)
	cfg := e.config("a")
	cfg.ClusterSize, cfg.Value = 1, "http://10.0.0.7:8080"
	c := e.acquire(e.provider(cfg)) // never created: taken by create
	if r, _ := e.record(0); r.Value != cfg.Value {
		t.Fatalf("after the create, value %q, want %q", r.Value, cfg.Value)
	}
	e.advance(2*time.Second, c)
	e.settle(c)
	if r, _ := e.record(0); r.Value != cfg.Value || r.Version != 1 || r.RenewedAt.Equal(start) {
		t.Fatalf("after renewals, %+v: want value %q, version 1, renewed", r, cfg.Value)
	}
	if err := c.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	if r, _ := e.record(0); r.Holder != "" || r.Value != "" {
		t.Fatalf("released record %+v: want free and no value", r)
	}
	cfg.TaskID, cfg.Value = "b", "b's value"
	e.acquire(e.provider(cfg)) // free: taken by CAS
	if r, _ := e.record(0); r.Holder != "b" || r.Value != "b's value" || r.Version != 2 {
		t.Fatalf("after the CAS, %+v: want holder b, b's value, version 2", r)
	}
}

// TestGossipAddrIsPublishedWhileHeld: Config.GossipAddr is in the record from
// the take (by create, and by CAS of a free record) through every renewal,
// and the release writes the record free without it.
func TestGossipAddrIsPublishedWhileHeld(t *testing.T) {
	e := newEnv(t)
	cfg := e.config("a")
	cfg.ClusterSize, cfg.GossipAddr = 1, "10.0.0.7:7946"
	c := e.acquire(e.provider(cfg)) // never created: taken by create
	if r, _ := e.record(0); r.Gossip != cfg.GossipAddr {
		t.Fatalf("after the create, gossip %q, want %q", r.Gossip, cfg.GossipAddr)
	}
	e.advance(2*time.Second, c)
	e.settle(c)
	if r, _ := e.record(0); r.Gossip != cfg.GossipAddr || r.RenewedAt.Equal(start) {
		t.Fatalf("after renewals, %+v: want gossip %q, renewed", r, cfg.GossipAddr)
	}
	if err := c.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	if r, _ := e.record(0); r.Holder != "" || r.Gossip != "" {
		t.Fatalf("released record %+v: want free and no gossip address", r)
	}
	cfg.TaskID, cfg.GossipAddr = "b", "10.0.0.8:7946"
	e.acquire(e.provider(cfg)) // free: taken by CAS
	if r, _ := e.record(0); r.Holder != "b" || r.Gossip != "10.0.0.8:7946" {
		t.Fatalf("after the CAS, %+v: want holder b at 10.0.0.8:7946", r)
	}
}
