package node

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/nodeid/nodeid/lease/storetest"
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
