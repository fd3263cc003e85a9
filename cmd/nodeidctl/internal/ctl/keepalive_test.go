package ctl

import (
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
