package ctl

import (
	"time"

	"testing"

	"github.com/nodeid/nodeid/lease"
)

// TestKeepAliveRead: init --keepalive read writes the mode, window and
// backstop into the manifest; status shows them; resize keeps them; a second
// init asking for another keep-alive is refused naming both.
func TestKeepAliveRead(t *testing.T) {
	h := newHarness(t)
	_, stderr := h.mustRun(ExitUsage, "init", "--window", "3s")
	contains(t, "window in write mode", stderr, "--window and --backstop are for --keepalive read only")
	_, stderr = h.mustRun(ExitUsage, "init", "--keepalive", "gossip")
	contains(t, "unknown mode", stderr, `--keepalive "gossip" is not write or read`)
	_, stderr = h.mustRun(ExitUsage, "init", "--keepalive", "read", "--window", "3s", "--backstop", "3s")
	contains(t, "backstop not above window", stderr, "the window must be at least 1s, the backstop above it")

	stdout, _ := h.mustRun(ExitOK, "init", "--cluster-size", "4", "--keepalive", "read", "--window", "3s", "--backstop", "12s", "--max-lease-duration", "12s")
	contains(t, "init", stdout, "keep-alive read, window 3s, backstop 12s")
	if m := h.manifest(); m.KeepAlive != lease.KeepAliveRead || m.WindowMillis != 3000 || m.BackstopMillis != 12000 {
		t.Fatalf("manifest = %+v", m)
	}
	st := h.status()
	if st.Manifest.KeepAlive != lease.KeepAliveRead || st.Manifest.WindowMs != 3000 || st.Manifest.BackstopMs != 12000 {
		t.Fatalf("status manifest %+v", st.Manifest)
	}
	stdout, _ = h.mustRun(ExitOK, "status", "--max-lease-duration", "12s")
	contains(t, "status", stdout, "keep-alive    read, window 3s, backstop 12s")

	_, stderr = h.mustRun(ExitFailed, "init", "--keepalive", "write", "--max-lease-duration", "12s")
	contains(t, "init with another mode", stderr, "the cluster manifest has keep-alive read, window 3s, backstop 12s, not the keep-alive write asked for")
	_, stderr = h.mustRun(ExitFailed, "init", "--keepalive", "read", "--window", "2s", "--backstop", "8s", "--max-lease-duration", "12s")
	contains(t, "init with another window", stderr, "not the keep-alive read, window 2s, backstop 8s asked for")
	h.mustRun(ExitOK, "init", "--max-lease-duration", "12s") // no keep-alive flag: the manifest's

	h.mustRun(ExitOK, "resize", "--cluster-size", "6", "--max-lease-duration", "12s")
	if m := h.manifest(); m.ClusterSize != 6 || m.KeepAlive != lease.KeepAliveRead || m.WindowMillis != 3000 || m.BackstopMillis != 12000 {
		t.Fatalf("manifest after resize = %+v", m)
	}
}

// TestKeepAliveWriteStatus: a write-mode manifest shows its mode.
func TestKeepAliveWriteStatus(t *testing.T) {
	h := newHarness(t)
	h.mustRun(ExitOK, "init", "--cluster-size", "2")
	if st := h.status(); st.Manifest.KeepAlive != lease.KeepAliveWrite || st.Manifest.WindowMs != 0 {
		t.Fatalf("status manifest %+v", st.Manifest)
	}
	stdout, _ := h.mustRun(ExitOK, "status")
	contains(t, "status", stdout, "keep-alive    write\n")
}

// TestStatusReadModeChallenges: in a read-mode cluster whose backstop (10 m)
// is above --max-lease-duration (60 s by default), records are judged with
// the backstop as their maximum lease (held, not corrupt); a standing
// challenge and a confirm show who wrote them, and the confirm expires by its
// window. repair refuses to rewrite such a record.
func TestStatusReadModeChallenges(t *testing.T) {
	h := newHarness(t)
	h.mustRun(ExitOK, "init", "--cluster-size", "3", "--keepalive", "read")
	held := lease.Record{NodeID: 0, Holder: "task-a", Version: 2, LeaseMillis: 600000}
	challenge := lease.Record{NodeID: 1, Holder: "task-b", Version: 3, LeaseMillis: 600000,
		Challenge: &lease.Challenge{Of: "00000000000000aa", By: "task-c", WindowMillis: 15000}}
	confirm := lease.Record{NodeID: 2, Holder: "task-d", Version: 4, LeaseMillis: 600000,
		Challenge: &lease.Challenge{Of: "00000000000000bb", By: "task-e", Confirmed: true, WindowMillis: 15000}}
	for _, r := range []lease.Record{held, challenge, confirm} {
		h.put(r)
	}
	h.clk.Advance(5 * time.Second)
	st := h.status()
	for i, want := range []struct {
		state     State
		challenge *ChallengeJSON
		expiresS  int64
	}{
		{StateHeld, nil, 598},
		{StateHeld, &ChallengeJSON{By: "task-c", Of: "00000000000000aa", WindowMs: 15000}, 598},
		{StateHeld, &ChallengeJSON{By: "task-e", Of: "00000000000000bb", Confirmed: true, WindowMs: 15000}, 13},
	} {
		l := st.Leases[i]
		if l.State != want.state || (l.Challenge == nil) != (want.challenge == nil) ||
			(l.Challenge != nil && *l.Challenge != *want.challenge) || l.ExpiresInMs == nil || *l.ExpiresInMs/1000 != want.expiresS {
			t.Fatalf("lease %d: %+v (challenge %+v, expires in %v), want %s, %+v, %d s", i, l, l.Challenge, l.ExpiresInMs, want.state, want.challenge, want.expiresS)
		}
	}
	stdout, _ := h.mustRun(ExitOK, "status")
	contains(t, "status table", stdout, "task-b, challenged by task-c")
	contains(t, "status table", stdout, "task-d, confirmed challenge by task-e")
	_, stderr := h.mustRun(ExitFailed, "repair", "--id", "0", "--floor", "1", "--yes")
	contains(t, "repair of a read-mode record", stderr, "decodes fine")
	h.clk.Advance(15 * time.Second)
	if l := h.status().Leases[2]; l.State != StateExpired {
		t.Fatalf("a confirm past its window: %+v", l)
	}
}
