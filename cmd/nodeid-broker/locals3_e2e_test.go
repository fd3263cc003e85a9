package main

import (
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestLocalS3MultiProcess runs the standalone local S3 and, in processes of
// their own, two brokers and nodeidctl against it, as a trial on one machine
// does: the brokers hold distinct node IDs, nodeidctl sees both held, and
// local-s3 stops on SIGTERM with exit 0.
func TestLocalS3MultiProcess(t *testing.T) {
	t.Parallel()
	env := brokerEnv(t)
	s3 := start(t, "local-s3", env, "local-s3", "--addr", "127.0.0.1:0", "--bucket", "trial")
	addr := s3.waitLog("local S3 listening", 15*time.Second)["addr"].(string)
	args := []string{"--bucket", "trial", "--s3-endpoint", "http://" + addr, "--s3-path-style", "--cluster-size", "4"}
	a := startBroker(t, "a", env, append(args, shortLease...)...)
	b := startBroker(t, "b", env, append(args, shortLease...)...)
	sa, sb := a.waitHeld(20*time.Second), b.waitHeld(20*time.Second)
	if sa.NodeID == sb.NodeID {
		t.Fatalf("both brokers hold node %d", sa.NodeID)
	}
	code, out, errOut := runCtl(t, env, append([]string{"status"}, args[:4]...)...)
	if code != 0 || !strings.Contains(out, "summary: 4 node IDs: ") || strings.Count(out, " held ") != 2 {
		t.Errorf("nodeidctl status: exit %d:\n%s%s", code, out, errOut)
	}
	s3.signal(syscall.SIGTERM)
	if code := s3.waitExit(10 * time.Second); code != 0 {
		t.Errorf("local-s3 exited %d after SIGTERM, want 0", code)
	}
}
