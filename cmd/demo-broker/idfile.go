package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/nodeid/nodeid/nodeid"
)

// idFileContent is the JSON of --id-file: the held node ID, its version (the
// fencing token) and how long it may be used. A sidecar application reads it,
// uses the node ID while the file exists with that content and its clock is
// before ValidUntilMs, and stops the moment either ends. The broker rewrites
// the file after every renewal, with a later ValidUntilMs.
type idFileContent struct {
	NodeID  int   `json:"nodeId"`
	Version int64 `json:"version"`
	// ValidUntilMs, in Unix ms on the host's clock, is when the broker's own
	// fence falls unless a renewal succeeds first, capped by the lease's
	// reservation: a broker that crashed or froze cannot remove the file, but
	// the application stops here by itself, before another task can take
	// the lease, and below the floor any successor starts from.
	ValidUntilMs int64 `json:"validUntilMs"`
}

// idFileFor returns the id file of claim now. ValidUntilMs is the claim's
// monotonic fence deadline moved onto clock's wall clock, capped by its
// reservation; 0 once the claim is fenced.
func idFileFor(claim *nodeid.Claim, clock nodeid.Clock) idFileContent {
	c := idFileContent{NodeID: claim.NodeID(), Version: claim.Version()}
	if until := claim.ValidUntil(); !until.IsZero() {
		c.ValidUntilMs = min(claim.Reservation(), clock.Wall().Add(until.Sub(clock.Now())).UnixMilli())
	}
	return c
}

// writeIDFile writes the file atomically: a temporary file in the same
// directory, synced, then renamed over path, so a reader sees the old content,
// the new content or no file, never a partial one. The file is readable by
// all (the application may run as another user).
func writeIDFile(path string, c idFileContent) error {
	body, err := json.Marshal(c)
	if err != nil {
		return err
	}
	body = append(body, '\n')
	dir := filepath.Dir(path)
	tmp, err := os.CreateTemp(dir, "."+filepath.Base(path)+".tmp-*")
	if err != nil {
		return fmt.Errorf("id file: %w", err)
	}
	defer os.Remove(tmp.Name()) // after a successful rename there is nothing left to remove
	_, err = tmp.Write(body)
	if err == nil {
		err = tmp.Chmod(0o644)
	}
	if err == nil {
		err = tmp.Sync()
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp.Name(), path)
	}
	if err != nil {
		return fmt.Errorf("id file: %w", err)
	}
	if d, err := os.Open(dir); err == nil { // make the rename durable; best effort
		_ = d.Sync()
		_ = d.Close()
	}
	return nil
}

// removeIDFile removes the file and reports whether it was there; a file that
// is not there is no error.
func removeIDFile(path string) (bool, error) {
	err := os.Remove(path)
	switch {
	case err == nil:
		return true, nil
	case errors.Is(err, fs.ErrNotExist):
		return false, nil
	}
	return false, fmt.Errorf("id file: %w", err)
}

// checkIDFileDir fails when the file's directory does not exist or is not
// writable, so that a broker with a wrong --id-file stops at start.
func checkIDFileDir(path string) error {
	dir := filepath.Dir(path)
	st, err := os.Stat(dir)
	if err != nil {
		return fmt.Errorf("--id-file %s: %w (mount the shared volume there)", path, err)
	}
	if !st.IsDir() {
		return fmt.Errorf("--id-file %s: %s is not a directory", path, dir)
	}
	probe, err := os.CreateTemp(dir, ".nodeid-probe-*")
	if err != nil {
		return fmt.Errorf("--id-file %s: the directory is not writable by this user (uid %d): %w", path, os.Getuid(), err)
	}
	_ = probe.Close()
	return os.Remove(probe.Name())
}
