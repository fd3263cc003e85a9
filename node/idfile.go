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
	"sync/atomic"
	"time"

	"github.com/nodeid/nodeid/internal/hostclock"
	"github.com/nodeid/nodeid/nodeid"
)

// IDFileContent is the JSON of the id file (Config.IDFile): the held node ID,
// its version (the fencing token), its floor and how long it may be used. An
// application in another process reads it, uses the node ID while the file
// exists with that content and its clock is before ValidUntilMs, issues only
// timestamps above FloorMs, re-reads it at least every second, and stops the
// moment either ends (the clients in clients/ do all of this). The node
// rewrites the file every Config.IDFileHorizon/4 and after every renewal,
// with a later ValidUntilMs.
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
	// reservation and by Config.IDFileHorizon past the write: a node that
	// crashed or froze cannot remove the file, but the application stops
	// here by itself, before another task can take the lease, and below the
	// floor any successor starts from.
	ValidUntilMs int64 `json:"validUntilMs"`
}

// idFileContentOf returns the id file of claim at host, the host's clock
// now. ValidUntilMs is the claim's fence moved onto the host's clock, which
// the application stamps its IDs with, capped by the reservation
// (Claim.ValidUntilOn) and by host + horizon (Config.IDFileHorizon); 0 once
// the claim is fenced.
func idFileContentOf(claim *nodeid.Claim, host time.Time, horizon time.Duration) IDFileContent {
	return IDFileContent{
		NodeID: claim.NodeID(), Version: claim.Version(), FloorMs: claim.Floor(),
		ValidUntilMs: min(claim.ValidUntilOn(host), host.Add(horizon).UnixMilli()),
	}
}

// idFileState is the node's id file: what was written, and whether it may be
// written again. Its methods serialise on mu.
type idFileState struct {
	path    string        // "" for none
	horizon time.Duration // Config.IDFileHorizon

	mu          sync.Mutex
	floorPassed bool        // Start saw the host's clock past the floor: the file may be written
	up          atomic.Bool // written and not removed since; set under mu, read by the health checks without it
	written     bool        // written at least once
	retired     bool        // removed for good: never written again
	childRan    bool        // a supervised child (Supervise) used the ID with the host's clock
	maxValidMs  int64       // the highest ValidUntilMs written
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

// writeOnceFloorPassed waits until the host's clock is past the claim's floor
// (the predecessor's reservation), so that an application generating IDs
// itself with that clock never repeats one of its predecessor's, and then
// writes the file if the claim is valid: a claim in jeopardy then gets it at
// its recovery (sync). It returns nil without writing when ctx ends or the
// claim ends first, and the error of the first write.
func (f *idFileState) writeOnceFloorPassed(ctx context.Context, claim *nodeid.Claim, host *hostclock.Clock, log *slog.Logger) error {
	if !waitFloorPassed(ctx, claim, host, log, "writing the id file") {
		return nil // the watcher reports a loss; Close releases the claim
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.floorPassed = true
	return f.syncLocked(claim, host, log, true)
}

// waitFloorPassed waits until the host's clock is past the claim's floor (the
// predecessor's reservation), so that whoever issues IDs with that clock from
// then on never repeats one of its predecessor's; before names what waits,
// for the log. It reports false when ctx or the claim ends first.
func waitFloorPassed(ctx context.Context, claim *nodeid.Claim, host *hostclock.Clock, log *slog.Logger, before string) bool {
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

// sync brings the file in line with the claim now: written, with a fresh
// validUntilMs, while the claim is valid and serving is true; taken down
// otherwise (jeopardy: the application stops at its next read, and at
// validUntilMs anyway). It does nothing before the floor has passed
// (writeOnceFloorPassed) or once the file is removed for good. It is called
// at every renewal, jeopardy and recovery, and every horizon/4: whatever
// order those signals come in, the file follows the claim's latest state. A
// failure only logs: the file on disk expires earlier, which stops the
// application early, never late.
func (f *idFileState) sync(claim *nodeid.Claim, host *hostclock.Clock, log *slog.Logger, serving bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.syncLocked(claim, host, log, serving); err != nil {
		log.Error("could not write the id file: the application will stop at its last validUntilMs", "path", f.path, "err", err)
	}
}

func (f *idFileState) syncLocked(claim *nodeid.Claim, host *hostclock.Clock, log *slog.Logger, serving bool) error {
	if f.path == "" || !f.floorPassed || f.retired {
		return nil
	}
	if !serving || !claim.Valid() {
		f.takeDownLocked(log)
		return nil
	}
	c := idFileContentOf(claim, host.Read(), f.horizon)
	first, back := !f.written, f.written && !f.up.Load()
	if err := writeIDFile(f.path, c); err != nil {
		return err
	}
	f.up.Store(true)
	f.written = true
	f.maxValidMs = max(f.maxValidMs, c.ValidUntilMs)
	switch {
	case first:
		log.Info("id file written", "path", f.path, "nodeId", c.NodeID, "version", c.Version, "validUntilMs", c.ValidUntilMs)
	case back:
		log.Info("id file written again: the lease recovered", "path", f.path, "validUntilMs", c.ValidUntilMs)
	default:
		log.Debug("id file refreshed", "validUntilMs", c.ValidUntilMs)
	}
	return nil
}

// takeDownLocked removes the file while the claim is not valid; sync writes
// it again once it is.
func (f *idFileState) takeDownLocked(log *slog.Logger) {
	if !f.up.Load() {
		return
	}
	f.up.Store(false)
	if _, err := removeIDFile(f.path); err != nil {
		log.Error("could not take the id file down while the lease is not valid: the application stops at its validUntilMs", "path", f.path, "err", err)
		return
	}
	log.Warn("id file taken down: the lease is not valid (jeopardy)", "path", f.path)
}

// remove removes the file for good and reports whether it had been written
// (the application may be using the ID: it needs its grace).
func (f *idFileState) remove(log *slog.Logger) bool {
	if f.path == "" {
		return false
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.up.Store(false)
	f.retired = true
	removed, err := removeIDFile(f.path)
	switch {
	case err != nil:
		log.Error("could not remove the id file: the application stops at its validUntilMs, which the release covers", "path", f.path, "err", err)
	case removed:
		log.Info("id file removed", "path", f.path)
	}
	return f.written
}

// check returns nil when the node has no id file or the file is up, and
// ErrIDFileDown otherwise: an application that waits for /health before it
// reads the file finds it there.
func (f *idFileState) check() error {
	if f.path == "" || f.up.Load() {
		return nil
	}
	return fmt.Errorf("%w: %s", ErrIDFileDown, f.path)
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
// highest timestamp the node's own generator issued. An application that
// read the file issued only timestamps below the validUntilMs it read, and
// none at or past the highest one written (maxValidMs), whatever its clock
// did: the release keeps the reservation there, so a successor's floor
// covers its IDs even after a host clock that stepped forward and back
// between two writes, which no reading of the node saw. The horizon keeps
// that bound close: by the end of the grace it is in the past
// (Config.IDFileHorizon). A supervised child (dead by now) issued with the
// host's clock up to the highest reading anyone took (host.High), at or
// above that even when it is above the reservation (a step forward of the
// host clock).
func (f *idFileState) lowestRelease(last int64, host *hostclock.Clock) int64 {
	f.mu.Lock()
	defer f.mu.Unlock()
	if !f.written && !f.childRan {
		return last
	}
	return max(last, host.High().UnixMilli(), f.maxValidMs)
}

// writeIDFile writes the file atomically: a temporary file in the same
// directory, then renamed over path, so a reader sees the old content, the
// new content or no file, never a partial one. The file is readable by all
// (the application may run as another user). It is not synced to disk: it
// is rewritten every IDFileHorizon/4, and it speaks for this process's claim
// only, which a crash of the host ends (a new node removes a file left over).
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
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp.Name(), path)
	}
	if err != nil {
		return fmt.Errorf("id file: %w", err)
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
