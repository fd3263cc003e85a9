// Package serverproc is what the test kits that run a pinned server binary
// (etcdtest, k8stest) share: finding the binary, and running it as one
// process at a time, its output appended to a log file, that a test can
// wait for, stop with a signal and start again.
package serverproc

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"
)

// Binary returns the server binary called name to run: the path in the
// environment variable env, else <NODEID_SERVER_CACHE or
// ~/.cache/nodeid-servers>/bin/<name>, else name on PATH; "" when there is
// none.
func Binary(env, name string) string {
	if b := os.Getenv(env); b != "" {
		return b
	}
	cache := os.Getenv("NODEID_SERVER_CACHE")
	if cache == "" {
		if home, err := os.UserHomeDir(); err == nil {
			cache = filepath.Join(home, ".cache", "nodeid-servers")
		}
	}
	if b := filepath.Join(cache, "bin", name); cache != "" && isExec(b) {
		return b
	}
	if b, err := exec.LookPath(name); err == nil {
		return b
	}
	return ""
}

func isExec(p string) bool {
	fi, err := os.Stat(p)
	return err == nil && fi.Mode().IsRegular() && fi.Mode()&0o111 != 0
}

// ErrExited is WaitReady's error when the process exits before it is ready.
var ErrExited = errors.New("exited at start")

// Proc runs a server binary, one process at a time; its output is appended
// to LogPath. The zero value with LogPath set is ready to Spawn.
type Proc struct {
	// LogPath is the file the process's stdout and stderr are appended to.
	LogPath string

	mu     sync.Mutex
	cmd    *exec.Cmd
	exited chan struct{}
}

// Spawn starts bin with args; what names it in errors.
func (p *Proc) Spawn(what, bin string, args ...string) error {
	logf, err := os.OpenFile(p.LogPath, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	if err != nil {
		return fmt.Errorf("%s log: %w", what, err)
	}
	cmd := exec.Command(bin, args...)
	cmd.Stdout, cmd.Stderr = logf, logf
	if err := cmd.Start(); err != nil {
		logf.Close()
		return fmt.Errorf("start %s %s: %w", what, bin, err)
	}
	exited := make(chan struct{})
	go func() { _ = cmd.Wait(); logf.Close(); close(exited) }()
	p.mu.Lock()
	p.cmd, p.exited = cmd, exited
	p.mu.Unlock()
	return nil
}

// WaitReady calls ready every pause until it reports true, and returns nil
// then; ErrExited when the process exits first; and, after timeout, kills
// the process and says so.
func (p *Proc) WaitReady(ready func() bool, pause, timeout time.Duration) error {
	p.mu.Lock()
	exited := p.exited
	p.mu.Unlock()
	deadline := time.Now().Add(timeout)
	for {
		select {
		case <-exited:
			return ErrExited
		default:
		}
		if ready() {
			return nil
		}
		if time.Now().After(deadline) {
			p.Stop(syscall.SIGKILL)
			return fmt.Errorf("not ready after %v", timeout)
		}
		time.Sleep(pause)
	}
}

// Running reports whether a process was spawned and not stopped since.
func (p *Proc) Running() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.cmd != nil
}

// Stop sends the process sig and waits for it to exit; nothing when none
// runs.
func (p *Proc) Stop(sig syscall.Signal) {
	p.mu.Lock()
	cmd, exited := p.cmd, p.exited
	p.cmd = nil
	p.mu.Unlock()
	if cmd == nil {
		return
	}
	_ = cmd.Process.Signal(sig)
	<-exited
}

// Log returns the log so far.
func (p *Proc) Log() string {
	b, _ := os.ReadFile(p.LogPath)
	return strings.TrimSpace(string(b))
}
