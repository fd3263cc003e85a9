package node

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nodeid/nodeid/lease/storetest"
	"github.com/nodeid/nodeid/nodeid"
)

// childScript notes its node ID in $DIR/id, then waits; on SIGTERM it writes
// $DIR/term and exits 0. With an argument it exits with that status at once.
const childScript = `
if [ -n "$1" ]; then echo "$NODEID_NODE_ID" > "$DIR/id"; exit "$1"; fi
trap 'echo term > "$DIR/term"; exit 0' TERM
echo "$NODEID_NODE_ID" > "$DIR/id.tmp"; mv "$DIR/id.tmp" "$DIR/id"
while :; do sleep 0.01; done
`

// startedNode returns a started node on a fresh store.
func startedNode(t *testing.T) (*Node, *storetest.MemStore) {
	t.Helper()
	store := storetest.NewMemStore()
	n, err := New(store, testConfig("a", 4))
	if err != nil {
		t.Fatal(err)
	}
	if err := n.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = n.Close(closeCtx(t)) })
	return n, store
}

// childCmd returns childScript as a command writing into dir.
func childCmd(dir string, args ...string) *exec.Cmd {
	cmd := exec.Command("sh", append([]string{"-c", childScript, "child"}, args...)...)
	cmd.Env = append(os.Environ(), "DIR="+dir)
	return cmd
}

// waitFile waits until path exists and returns its trimmed content.
func waitFile(t *testing.T, path string, errc <-chan error) string {
	t.Helper()
	deadline := time.After(10 * time.Second)
	for {
		if b, err := os.ReadFile(path); err == nil {
			return strings.TrimSpace(string(b))
		}
		select {
		case err := <-errc:
			t.Fatalf("Supervise returned %v before %s appeared", err, path)
		case <-deadline:
			t.Fatalf("%s did not appear", path)
		case <-time.After(5 * time.Millisecond):
		}
	}
}

// TestSuperviseCloseStopsChildFirst: Close stops a supervised child
// (SIGTERM) and releases the ID only once it has exited; Supervise returns
// ErrClosed. The child saw the node ID.
func TestSuperviseCloseStopsChildFirst(t *testing.T) {
	n, store := startedNode(t)
	dir := t.TempDir()
	errc := make(chan error, 1)
	go func() { errc <- n.Supervise(context.Background(), childCmd(dir), DefaultChildConfig()) }()
	if id := waitFile(t, filepath.Join(dir, "id"), errc); id != strconv.Itoa(n.NodeID()) {
		t.Fatalf("child's NODEID_NODE_ID %q, want %d", id, n.NodeID())
	}
	if err := n.Supervise(context.Background(), childCmd(t.TempDir()), DefaultChildConfig()); !errors.Is(err, ErrSupervised) {
		t.Fatalf("a second Supervise: %v, want ErrSupervised", err)
	}
	if err := n.Close(closeCtx(t)); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, "term")); err != nil {
		t.Fatalf("Close returned before the child had stopped on SIGTERM: %v", err)
	}
	if err := <-errc; !errors.Is(err, ErrClosed) {
		t.Fatalf("Supervise: %v, want ErrClosed", err)
	}
	rec := readRecord(t, store, n.NodeID())
	if rec.Holder != "" || rec.ReservedUntilMs < time.Now().Add(-time.Minute).UnixMilli() {
		t.Fatalf("after Close: %+v, want released with the reservation at the host's clock", rec)
	}
}

// TestSuperviseEnds: a stop by ctx that the child obeys returns nil; a child
// exiting 7 by itself returns a *ChildExitError with code 7; a command that
// cannot start returns an error.
func TestSuperviseEnds(t *testing.T) {
	t.Run("ctx", func(t *testing.T) {
		n, _ := startedNode(t)
		dir := t.TempDir()
		ctx, cancel := context.WithCancel(context.Background())
		errc := make(chan error, 1)
		go func() { errc <- n.Supervise(ctx, childCmd(dir), DefaultChildConfig()) }()
		waitFile(t, filepath.Join(dir, "id"), errc)
		cancel()
		if err := <-errc; err != nil {
			t.Fatalf("Supervise after ctx ended: %v, want nil", err)
		}
		if _, err := os.Stat(filepath.Join(dir, "term")); err != nil {
			t.Fatalf("the child got no SIGTERM: %v", err)
		}
	})
	t.Run("exit 7", func(t *testing.T) {
		n, _ := startedNode(t)
		var ce *ChildExitError
		if err := n.Supervise(context.Background(), childCmd(t.TempDir(), "7"), DefaultChildConfig()); !errors.As(err, &ce) || ce.ExitCode() != 7 {
			t.Fatalf("Supervise: %v, want exit status 7", err)
		}
	})
	t.Run("no such command", func(t *testing.T) {
		n, _ := startedNode(t)
		if err := n.Supervise(context.Background(), exec.Command(filepath.Join(t.TempDir(), "none")), DefaultChildConfig()); err == nil {
			t.Fatal("Supervise of a missing command: nil error")
		}
	})
}

// TestRunChildSkipsTheGraceOnceTheChildExited: the child was the id file's
// reader, so once it has exited the release follows at once: with an
// IDFileGrace far longer than the ShutdownTimeout, a grace waited would cut
// the release short and leave the lease held.
func TestRunChildSkipsTheGraceOnceTheChildExited(t *testing.T) {
	store := storetest.NewMemStore()
	cfg := testConfig("a", 4)
	cfg.IDFile = filepath.Join(t.TempDir(), "id.json")
	cfg.IDFileGrace, cfg.ShutdownTimeout = time.Hour, 10*time.Second
	n, err := New(store, cfg)
	if err != nil {
		t.Fatal(err)
	}
	var ce *ChildExitError
	if err := n.RunChild(context.Background(), childCmd(t.TempDir(), "7"), DefaultChildConfig()); !errors.As(err, &ce) || ce.ExitCode() != 7 {
		t.Fatalf("RunChild: %v, want the child's exit status 7 after a release", err)
	}
	if rec := readRecord(t, store, n.NodeID()); rec.Holder != "" {
		t.Fatalf("after RunChild: %+v, want released", rec)
	}
	if _, err := os.Stat(cfg.IDFile); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the id file is still there: %v", err)
	}
}

// TestSuperviseReadModeStopsTheChildWhenReadsFail: in read mode a claim's
// fence is re-armed by each read, and its renewals (backstop writes) are far
// apart, so it is not in jeopardy when its reads fail. The child still gets
// SIGTERM before the fence (two reads in a row failed: readsFailing), not
// SIGKILL at it with no warning; while the reads work it gets nothing.
func TestSuperviseReadModeStopsTheChildWhenReadsFail(t *testing.T) {
	fs := storetest.NewFaultStore(storetest.NewMemStore())
	var reads atomic.Int64
	fs.SetInjector(func(op storetest.Op, _ string) storetest.Fault {
		if op == storetest.OpGetIfChanged {
			reads.Add(1)
		}
		return storetest.Fault{}
	})
	cfg := readModeConfig("a")
	// W 3 s, SafetyMargin 1 s: the fence stands 2 s after each read's send;
	// SIGTERM after 0.4 + 0.1 + 0.5 + 0.05 s without one, SIGKILL 0.1 s
	// before the fence.
	cfg.Provider.PollInterval, cfg.Provider.StoreTimeout = 400*time.Millisecond, 500*time.Millisecond
	n, err := New(fs, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := n.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { // the store is dead by then: the release cannot land
		ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
		defer cancel()
		_ = n.Close(ctx)
	})
	dir := t.TempDir()
	errc := make(chan error, 1)
	go func() { errc <- n.Supervise(context.Background(), childCmd(dir), DefaultChildConfig()) }()
	waitFile(t, filepath.Join(dir, "id"), errc)
	for from := reads.Load(); reads.Load() < from+5; { // five polls that proved the claim
		select {
		case err := <-errc:
			t.Fatalf("Supervise returned %v while the reads worked", err)
		case <-time.After(10 * time.Millisecond):
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "term")); err == nil {
		t.Fatal("the child got SIGTERM while the reads worked")
	}
	fs.Kill(nil) // every request fails from now on
	err = <-errc
	if !errors.Is(err, nodeid.ErrLeaseLost) || !strings.Contains(err.Error(), "reads failed") {
		t.Fatalf("Supervise = %v, want the lease's reads failed (ErrLeaseLost)", err)
	}
	if _, err := os.Stat(filepath.Join(dir, "term")); err != nil {
		t.Fatalf("the child got no SIGTERM before the fence: %v", err)
	}
}
