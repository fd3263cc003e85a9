package node

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/nodeid/nodeid/nodeid"
)

// IDFileContent is the JSON of the id file (Config.IDFile): the held node ID,
// its version (the fencing token), its floor and how long it may be used. An
// application in another process reads it, uses the node ID while the file
// exists with that content and its clock is before ValidUntilMs, issues only
// timestamps above FloorMs, re-reads it at least every second, and stops the
// moment either ends. The node rewrites the file after every renewal, with a
// later ValidUntilMs.
type IDFileContent struct {
	NodeID  int   `json:"nodeId"`
	Version int64 `json:"version"`
	// FloorMs, in Unix ms, is the node ID's floor: the predecessor's
	// reservation. The file is written once the host's clock is past it,
	// but that clock can step back afterwards: the application issues only
	// timestamps above it, whatever its clock says (as a generator never
	// issues a timestamp below its last).
	FloorMs int64 `json:"floorMs"`
	// ValidUntilMs, in Unix ms on the host's clock, is when the node's own
	// fence falls unless a renewal succeeds first, capped by the lease's
	// reservation: a node that crashed or froze cannot remove the file, but
	// the application stops here by itself, before another task can take
	// the lease, and below the floor any successor starts from.
	ValidUntilMs int64 `json:"validUntilMs"`
}

// idFileContentOf returns the id file of claim now. ValidUntilMs is the
// claim's fence moved onto the host's clock, which the application stamps
// its IDs with, and capped by the reservation (Claim.ValidUntilOn); 0 once
// the claim is fenced.
func idFileContentOf(claim *nodeid.Claim, host *nodeid.HostClock) IDFileContent {
	return IDFileContent{NodeID: claim.NodeID(), Version: claim.Version(), FloorMs: claim.Floor(), ValidUntilMs: claim.ValidUntilOn(host.Read())}
}

// idFileState is the node's id file: what was written, and whether it is
// known to be gone. Its methods serialise on mu.
type idFileState struct {
	path string // "" for none

	mu         sync.Mutex
	up         bool  // written and not removed since: refreshes rewrite it
	written    bool  // written at least once
	retired    bool  // removed for good: never written again
	childRan   bool  // a supervised child (Supervise) used the ID with the host's clock
	removedOK  bool  // the last removal succeeded: the file is known to be gone
	graceDone  bool  // the application had its grace after the removal
	maxValidMs int64 // the highest ValidUntilMs written
}

// prepare checks the file's directory and removes a file left by an earlier
// process of this task: it names an ID not held.
func (f *idFileState) prepare(log *slog.Logger) error {
	if f.path == "" {
		return nil
	}
	if err := checkIDFileDir(f.path); err != nil {
		return err
	}
	removed, err := removeIDFile(f.path)
	if err != nil {
		return err
	}
	if removed {
		log.Warn("removed an id file left by an earlier process", "path", f.path)
	}
	return nil
}

// writeOnceFloorPassed writes the file once the host's clock is past the
// claim's floor (the predecessor's reservation), so that an application
// generating IDs itself with that clock never repeats one of its
// predecessor's. It returns nil without writing when ctx ends or the claim
// ends first.
func (f *idFileState) writeOnceFloorPassed(ctx context.Context, claim *nodeid.Claim, host *nodeid.HostClock, log *slog.Logger) error {
	if !waitFloorPassed(ctx, claim, host, log, "writing the id file") {
		return nil // the watcher reports a loss; Close releases the claim
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.retired || !claim.Valid() {
		return nil
	}
	c := idFileContentOf(claim, host)
	if err := f.writeLocked(c); err != nil {
		return err
	}
	log.Info("id file written", "path", f.path, "nodeId", c.NodeID, "version", c.Version, "validUntilMs", c.ValidUntilMs)
	return nil
}

// waitFloorPassed waits until the host's clock is past the claim's floor (the
// predecessor's reservation), so that whoever issues IDs with that clock from
// then on never repeats one of its predecessor's; before names what waits,
// for the log. It reports false when ctx or the claim ends first.
func waitFloorPassed(ctx context.Context, claim *nodeid.Claim, host *nodeid.HostClock, log *slog.Logger, before string) bool {
	for {
		ahead := time.Duration(claim.Floor()-host.Read().UnixMilli()+1) * time.Millisecond
		if ahead <= 0 {
			return true
		}
		log.Info("waiting for the host's clock to pass the node ID's floor before "+before, "wait", ahead.String())
		select {
		case <-claim.Done():
			return false
		case <-ctx.Done():
			return false
		case <-time.After(ahead):
		}
	}
}

// refresh rewrites the file after a renewal, with the later validUntilMs, or
// writes it again after a recovery took it down. A failure only logs: the
// file on disk expires earlier, which stops the application early, never
// late.
func (f *idFileState) refresh(claim *nodeid.Claim, host *nodeid.HostClock, log *slog.Logger) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if !f.written || f.retired { // not written yet (the floor), or removed for good
		return
	}
	c := idFileContentOf(claim, host)
	if err := f.writeLocked(c); err != nil {
		log.Error("could not refresh the id file: the application will stop at its old validUntilMs", "path", f.path, "err", err)
		return
	}
	log.Debug("id file refreshed", "validUntilMs", c.ValidUntilMs)
}

func (f *idFileState) writeLocked(c IDFileContent) error {
	if err := writeIDFile(f.path, c); err != nil {
		return err
	}
	f.up, f.written = true, true
	f.maxValidMs = max(f.maxValidMs, c.ValidUntilMs)
	return nil
}

// takeDown removes the file while the lease is in jeopardy: the application
// stops at its next read (and at validUntilMs anyway); refresh writes it
// again after a recovery.
func (f *idFileState) takeDown(log *slog.Logger) {
	if f.path == "" {
		return
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if !f.up {
		return
	}
	f.up = false
	if _, err := removeIDFile(f.path); err != nil {
		log.Error("could not take the id file down in jeopardy: the application stops at its validUntilMs", "path", f.path, "err", err)
		return
	}
	log.Warn("id file taken down: the lease is in jeopardy", "path", f.path)
}

// remove removes the file for good and reports whether it had been written
// (the application may be using the ID: it needs its grace).
func (f *idFileState) remove(log *slog.Logger) bool {
	if f.path == "" {
		return false
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.up, f.retired = false, true
	removed, err := removeIDFile(f.path)
	f.removedOK = err == nil
	switch {
	case err != nil:
		log.Error("could not remove the id file: the release keeps the reservation at its last validUntilMs", "path", f.path, "err", err)
	case removed:
		log.Info("id file removed", "path", f.path)
	}
	return f.written
}

// graceOver records whether the application had its full grace after the
// removal.
func (f *idFileState) graceOver(complete bool) {
	f.mu.Lock()
	f.graceDone = complete
	f.mu.Unlock()
}

// childGone reports whether a supervised child used the ID; Close asks once
// the child has exited, and then skips the grace: the child was the file's
// reader.
func (f *idFileState) childGone() bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.childRan
}

// childStarted records that a supervised child may use the ID from now on:
// the release covers the host's clock, as for the file.
func (f *idFileState) childStarted() {
	f.mu.Lock()
	f.childRan = true
	f.mu.Unlock()
}

// lowestRelease returns the reservation a release may write, given last, the
// highest timestamp the node's own generator issued. The application may have
// issued IDs with the host's clock up to the highest reading of it anyone
// took (host.High) while it used the file (or ran as the supervised child,
// dead by now): at or above that, even when it is above the reservation (a
// step forward of the host clock), so that a successor's floor covers them.
// And if the file is not known to be gone, or the application did not get
// its grace, up to the last validUntilMs it read.
func (f *idFileState) lowestRelease(last int64, host *nodeid.HostClock) int64 {
	f.mu.Lock()
	defer f.mu.Unlock()
	if !f.written && !f.childRan {
		return last
	}
	last = max(last, host.High().UnixMilli())
	if f.written && (!f.removedOK || !f.graceDone) {
		last = max(last, f.maxValidMs)
	}
	return last
}

// writeIDFile writes the file atomically: a temporary file in the same
// directory, synced, then renamed over path, so a reader sees the old content,
// the new content or no file, never a partial one. The file is readable by
// all (the application may run as another user).
func writeIDFile(path string, c IDFileContent) error {
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
// writable, so that a node with a wrong id file path stops at start.
func checkIDFileDir(path string) error {
	dir := filepath.Dir(path)
	st, err := os.Stat(dir)
	if err != nil {
		return fmt.Errorf("id file %s: %w (mount the shared volume there)", path, err)
	}
	if !st.IsDir() {
		return fmt.Errorf("id file %s: %s is not a directory", path, dir)
	}
	probe, err := os.CreateTemp(dir, ".nodeid-probe-*")
	if err != nil {
		return fmt.Errorf("id file %s: the directory is not writable by this user (uid %d): %w", path, os.Getuid(), err)
	}
	_ = probe.Close()
	return os.Remove(probe.Name())
}
