package main

import (
	"syscall"
	"testing"
	"time"
)

// serveAndHandOver runs brokers with args (a store's flags, a cluster of two
// and the lease flags) and env, as a store's end-to-end test: two get
// distinct IDs at version 1 and serve them; SIGTERM releases at once (exit
// 0) and a newcomer takes the released ID free with the next version; no
// ID repeats across the three. on names the store in the log.
func serveAndHandOver(t *testing.T, on string, env, args []string) {
	t.Helper()
	var ids idLedger
	a := startBroker(t, "a", env, args...)
	bb := startBroker(t, "b", env, args...)
	as, bs := a.waitHeld(15*time.Second), bb.waitHeld(15*time.Second)
	if as.NodeID == bs.NodeID || as.Version != 1 || bs.Version != 1 {
		t.Fatalf("a holds node %d version %d, b node %d version %d: want two IDs, version 1", as.NodeID, as.Version, bs.NodeID, bs.Version)
	}
	fetchIDs(t, a, as.NodeID, &ids)
	fetchIDs(t, bb, bs.NodeID, &ids)

	a.signal(syscall.SIGTERM)
	if code := a.waitExit(15 * time.Second); code != 0 {
		t.Fatalf("a exited %d after SIGTERM, want 0", code)
	}
	c := startBroker(t, "c", env, args...)
	cs := c.waitTakeover(as, "free", 15*time.Second)
	fetchIDs(t, c, cs.NodeID, &ids)
	t.Logf("%d IDs from 3 brokers on %s, none repeated", ids.len(), on)
}
