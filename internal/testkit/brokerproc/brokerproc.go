// Package brokerproc starts nodeid-broker processes and follows their JSON log
// lines (log/slog's JSON handler on stderr): the one launcher that the
// end-to-end tests, the fault suite and nodeid-bench share.
package brokerproc

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"time"
)

// Config says what to start and what to do with its output.
type Config struct {
	// Bin is the program, Args its arguments, Env its whole environment.
	Bin  string
	Args []string
	Env  []string
	// Stdout receives the process's standard output; nil discards it.
	Stdout io.Writer
	// SysProcAttr, when set, is the process's attributes (a process group,
	// a parent-death signal).
	SysProcAttr *syscall.SysProcAttr
	// OnLine, when set, is called with each line of standard error, in
	// order, on the goroutine that reads them: before Exited is closed, so
	// that a caller copying lines to a file may close it once Exited is.
	OnLine func(line string)
	// KeepLines bounds the lines kept for Lines, Log, Find and WaitLog (the
	// last ones); 0 keeps them all.
	KeepLines int
}

// Proc is a started process. Its methods are safe for concurrent use.
type Proc struct {
	cmd  *exec.Cmd
	keep int

	mu      sync.Mutex
	lines   []string
	changed chan struct{} // closed and replaced at every line, and at exit

	exited chan struct{}
	code   int // valid once exited is closed
}

// Start starts the process and the goroutines that read its standard error
// and wait for its exit.
func Start(cfg Config) (*Proc, error) {
	cmd := exec.Command(cfg.Bin, cfg.Args...)
	cmd.Env = cfg.Env
	cmd.Stdout = cfg.Stdout
	if cmd.Stdout == nil {
		cmd.Stdout = io.Discard
	}
	cmd.SysProcAttr = cfg.SysProcAttr
	stderr, err := cmd.StderrPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start %s: %w", cfg.Bin, err)
	}
	p := &Proc{cmd: cmd, keep: cfg.KeepLines, changed: make(chan struct{}), exited: make(chan struct{})}
	go p.run(stderr, cfg.OnLine)
	return p, nil
}

// run reads standard error to its end, then waits for the exit.
func (p *Proc) run(stderr io.Reader, onLine func(string)) {
	sc := bufio.NewScanner(stderr)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if onLine != nil {
			onLine(line)
		}
		p.mu.Lock()
		p.lines = append(p.lines, line)
		if p.keep > 0 && len(p.lines) > p.keep {
			p.lines = p.lines[len(p.lines)-p.keep:]
		}
		p.broadcastLocked()
		p.mu.Unlock()
	}
	err := p.cmd.Wait() // after the pipe was read to its end: Wait closes it
	var ee *exec.ExitError
	switch {
	case err == nil:
		p.code = 0
	case errors.As(err, &ee):
		p.code = ee.ExitCode() // -1 when killed by a signal
	default:
		p.code = -2
	}
	close(p.exited)
	p.mu.Lock()
	p.broadcastLocked()
	p.mu.Unlock()
}

func (p *Proc) broadcastLocked() {
	close(p.changed)
	p.changed = make(chan struct{})
}

// Pid returns the process ID.
func (p *Proc) Pid() int { return p.cmd.Process.Pid }

// Signal sends sig to the process.
func (p *Proc) Signal(sig os.Signal) error { return p.cmd.Process.Signal(sig) }

// Exited is closed once the process has exited and its output was read.
func (p *Proc) Exited() <-chan struct{} { return p.exited }

// ExitCode returns the exit code once Exited is closed: -1 when a signal
// killed the process, -2 when waiting for it failed otherwise.
func (p *Proc) ExitCode() int {
	<-p.exited
	return p.code
}

// Kill kills the process unless it has exited, and waits for the exit.
func (p *Proc) Kill() {
	select {
	case <-p.exited:
	default:
		_ = p.cmd.Process.Kill()
		<-p.exited
	}
}

// Stop sends SIGTERM and waits up to timeout for the exit; then it kills the
// process. It returns the exit code, and false when it had to kill.
func (p *Proc) Stop(timeout time.Duration) (int, bool) {
	_ = p.Signal(syscall.SIGTERM)
	select {
	case <-p.exited:
		return p.code, true
	case <-time.After(timeout):
		p.Kill()
		return p.code, false
	}
}

// Lines returns the lines of standard error kept so far.
func (p *Proc) Lines() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]string(nil), p.lines...)
}

// Log returns the lines kept so far, joined by newlines.
func (p *Proc) Log() string { return strings.Join(p.Lines(), "\n") }

// Find returns the first kept JSON log line whose msg is msg, decoded, or nil.
func (p *Proc) Find(msg string) map[string]any {
	p.mu.Lock()
	defer p.mu.Unlock()
	return findLocked(p.lines, msg)
}

func findLocked(lines []string, msg string) map[string]any {
	for _, l := range lines {
		if !strings.Contains(l, msg) {
			continue
		}
		var m map[string]any
		if json.Unmarshal([]byte(l), &m) == nil && m["msg"] == msg {
			return m
		}
	}
	return nil
}

// ErrExited is returned by WaitLog when the process exited before logging.
var ErrExited = errors.New("brokerproc: the process exited before logging the message")

// WaitLog waits up to timeout for a JSON log line whose msg is msg and
// returns it decoded. It fails with an error wrapping ErrExited when the
// process exits first, and with a timeout error otherwise.
func (p *Proc) WaitLog(msg string, timeout time.Duration) (map[string]any, error) {
	deadline := time.NewTimer(timeout)
	defer deadline.Stop()
	for {
		p.mu.Lock()
		m, changed := findLocked(p.lines, msg), p.changed
		p.mu.Unlock()
		if m != nil {
			return m, nil
		}
		select {
		case <-p.exited:
			if m := p.Find(msg); m != nil {
				return m, nil
			}
			return nil, fmt.Errorf("%w: %q (exit code %d)", ErrExited, msg, p.code)
		default:
		}
		select {
		case <-changed:
		case <-deadline.C:
			return nil, fmt.Errorf("brokerproc: no %q logged within %v", msg, timeout)
		}
	}
}

// WaitAddr waits for the log line msg (such as "http listening") and returns
// its addr attribute.
func (p *Proc) WaitAddr(msg string, timeout time.Duration) (string, error) {
	m, err := p.WaitLog(msg, timeout)
	if err != nil {
		return "", err
	}
	addr, ok := m["addr"].(string)
	if !ok || addr == "" {
		return "", fmt.Errorf("brokerproc: %q has no addr: %v", msg, m)
	}
	return addr, nil
}
