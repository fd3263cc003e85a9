package node

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"runtime"
	"slices"
	"strconv"
	"syscall"
	"time"

	"github.com/nodeid/nodeid/internal/hostclock"
	"github.com/nodeid/nodeid/nodeid"
)

// The environment Supervise gives its child, on top of the command's own.
const (
	// EnvNodeID is the held node ID, in decimal.
	EnvNodeID = "NODEID_NODE_ID"
	// EnvVersion is the node ID's version (the fencing token), in decimal.
	EnvVersion = "NODEID_VERSION"
	// EnvFloorMs is the node ID's floor (Unix ms, host clock): a child that
	// issues Snowflake IDs itself issues only above it. The host's clock
	// (Config.HostClock) is past it when the child starts.
	EnvFloorMs = "NODEID_FLOOR_MS"
	// EnvIDFile is the id file's path (Config.IDFile), when the node
	// writes one.
	EnvIDFile = "NODEID_ID_FILE"
	// EnvURL is the base URL of the node's HTTP server (its /ids is
	// EnvURL + "/ids"), the name the clients' HttpGenerator reads and the
	// deploy kit sets; Supervise does not set it (it does not know where
	// Handler is served): nodeid-broker run does.
	EnvURL = "NODEID_URL"
)

// ErrSupervised is returned by Supervise while the node supervises another
// child: one process at a time uses the node ID.
var ErrSupervised = errors.New("node: a child is already supervised")

// deadlinePoll is how often Supervise reads the claim's fence, its
// reservation and the host's clock while its child runs, so that the fence it
// knows when the lease is lost is at most this old (older is earlier: safe).
// It is also the bound on how long a child runs after a VM resumes (the
// monotonic clock, which the poll's timer runs on, stood still while the
// host's kept counting) or after a step of the host's clock past the
// reservation, before its SIGKILL: at most deadlinePoll of monotonic time,
// plus the time the kernel takes to schedule the supervisor.
const deadlinePoll = 50 * time.Millisecond

// ChildConfig configures Supervise. Start from DefaultChildConfig.
type ChildConfig struct {
	// StopTimeout is how long the child has to exit after a stop request
	// (ctx ends, a signal arrives on Signals, or Close) before it gets
	// SIGKILL. After a lease loss it has less: at most until KillMargin
	// before the claim's fence, which falls LeaseDuration - SafetyMargin -
	// RenewDeadline after the renewals gave up (see Validate). Default 10 s.
	StopTimeout time.Duration

	// KillMargin is how long before the claim's fence the child gets
	// SIGKILL at the latest, for the kill to land: the child is gone before
	// the fence, which itself falls SafetyMargin before any other task can
	// judge the lease expired. Default 100 ms.
	KillMargin time.Duration

	// Signals, when set, are forwarded to the child's process group as
	// they arrive (SIGTERM or SIGINT from the orchestrator or a terminal);
	// the first also starts the stop, as ctx ending does, without a SIGTERM
	// of its own. Nil: none.
	Signals <-chan os.Signal
}

// DefaultChildConfig returns the defaults documented on each field.
func DefaultChildConfig() ChildConfig {
	return ChildConfig{StopTimeout: 10 * time.Second, KillMargin: 100 * time.Millisecond}
}

// Validate fills in the defaults of c's zero fields and checks c against nc,
// a validated node configuration (its loss window is
// nc.Provider.LossWindow): after a loss, the child must have some time
// between the SIGTERM and the kill. Errors are nodeid.FieldErrors on "Child.<Field>".
func (c *ChildConfig) Validate(nc Config) error {
	d := DefaultChildConfig()
	if c.StopTimeout == 0 {
		c.StopTimeout = d.StopTimeout
	}
	if c.KillMargin == 0 {
		c.KillMargin = d.KillMargin
	}
	var errs []error
	check := func(ok bool, field, format string, args ...any) {
		if !ok {
			errs = append(errs, &nodeid.FieldError{Field: "Child." + field, Reason: fmt.Sprintf(format, args...)})
		}
	}
	check(c.StopTimeout > 0, "StopTimeout", "%v must be positive", c.StopTimeout)
	check(c.KillMargin > 0, "KillMargin", "%v must be positive", c.KillMargin)
	if w := nc.Provider.LossWindow(); c.KillMargin > 0 {
		check(c.KillMargin < w, "KillMargin",
			"%v leaves a lost lease's child no time to stop: it must be below LeaseDuration - SafetyMargin - RenewDeadline (%v)", c.KillMargin, w)
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("node: invalid child config: %w", err)
	}
	return nil
}

// stopBudget is what the child has after a SIGTERM for a lease loss, at most,
// under a claim whose loss window is lossWindow (Claim.LossWindow).
func (c *ChildConfig) stopBudget(lossWindow time.Duration) time.Duration {
	return min(c.StopTimeout, lossWindow-c.KillMargin)
}

// ChildExitError is how a supervised child ended when it did not exit 0 and
// was not stopped on request.
type ChildExitError struct {
	Code   int            // exit code; -1 when a signal ended the child
	Signal syscall.Signal // the signal that ended it; 0 when it exited
	Killed bool           // SIGKILL from Supervise: it outlived StopTimeout
}

func (e *ChildExitError) Error() string {
	switch {
	case e.Killed:
		return "node: child killed: it did not stop within the stop timeout"
	case e.Signal != 0:
		return fmt.Sprintf("node: child ended by signal %v", e.Signal)
	}
	return fmt.Sprintf("node: child exited with status %d", e.Code)
}

// ExitCode returns the status a shell reports for the child: its exit code,
// or 128 + the signal that ended it.
func (e *ChildExitError) ExitCode() int {
	if e.Signal != 0 {
		return 128 + int(e.Signal)
	}
	return e.Code
}

// Supervise runs cmd as the one user of the node's ID, and returns once it
// has exited (and, on Linux, every process left in its process group has
// been killed). It waits until the node serves (Start) and the wall clock
// is past the ID's floor, then starts cmd with EnvNodeID, EnvVersion,
// EnvFloorMs and, when set, EnvIDFile added to its environment (cmd.Env,
// else the process's), in a process group of its own, with the parent-death
// signal SIGKILL: the child dies with the supervising process, even with
// kill -9. It supports Linux only (errors.ErrUnsupported elsewhere).
//
// While the child runs:
//   - ctx ending or a signal on cfg.Signals stops it: the signal (or
//     SIGTERM) to its group, SIGKILL after cfg.StopTimeout. Supervise then
//     returns nil when the child exited 0 or died of that signal.
//   - Close stops it the same way, and releases the ID only once it is gone;
//     Supervise returns ErrClosed.
//   - A lease loss, or the lease entering jeopardy, sends SIGTERM at once
//     and SIGKILL no later than cfg.KillMargin before the instant the
//     claim's fence falls, so the child is gone before any other task can
//     judge the lease expired; so do, in read mode, two reads of the lease
//     in a row that failed (readsFailing). The fence falling otherwise
//     (renewals too late) sends SIGKILL at once. Supervise returns an error wrapping
//     nodeid.ErrLeaseLost: a lease that recovers from jeopardy serves the
//     node, not the child, which is gone.
//   - The child exiting by itself ends Supervise: nil for status 0, else a
//     *ChildExitError.
//
// ctx ending before the child started returns nil; the node's end before
// it, its error. The release (Close) keeps the lease's reservation at or
// above the host's wall clock once a child ran, as for the id file. The
// caller Closes the node after Supervise returns.
//
// The remaining risk is a supervising process that freezes (not dies) while
// the child runs: then nothing kills the child at the fence. A child closes
// it by also checking the id file's validUntilMs (EnvIDFile) on its own.
func (n *Node) Supervise(ctx context.Context, cmd *exec.Cmd, cfg ChildConfig) error {
	if err := cfg.Validate(n.cfg); err != nil {
		return err
	}
	if !childSupported {
		return fmt.Errorf("node: Supervise on %s: %w", runtime.GOOS, errors.ErrUnsupported)
	}
	if ctx.Err() != nil {
		return nil
	}
	select {
	case <-n.serving:
	case <-n.done:
		return n.Err()
	case <-ctx.Done():
		return nil
	}
	claim := n.Claim()
	// The child stamps IDs with the host's clock: from now on every write
	// reserves above it too, and the child starts once that clock is past
	// the floor and below the reservation, with KillMargin to spare.
	n.hostIssues.Store(true) // the claim's reserveClock
	if !waitFloorPassed(ctx, claim, n.host, n.log, "starting the child") ||
		!waitReservationCovers(ctx, claim, n.host, cfg.KillMargin, n.log) {
		if err := claim.Err(); err != nil {
			return err
		}
		return nil
	}
	childDone, err := n.registerChild()
	if err != nil {
		return err
	}
	defer n.unregisterChild(childDone)
	select {
	case <-n.closing:
		return ErrClosed // Close began meanwhile (it waits for this return): no child
	default:
	}
	if !claim.Valid() {
		return fmt.Errorf("node: child not started: %w", nodeid.ErrLeaseLost)
	}
	n.idFile.childStarted() // before the child can issue anything
	r := &childRun{n: n, claim: claim, cfg: cfg, cmd: cmd}
	return r.run(ctx)
}

// waitReservationCovers waits until the claim's reservation is more than
// margin ahead of the host's clock, which the child stamps its IDs with: the
// reservation of the take was stamped from the node's wall clock, which the
// host's may have stepped past; the next renewal reserves above the host's
// too (reserveClock). It reports false when ctx or the claim ends first.
func waitReservationCovers(ctx context.Context, claim *nodeid.Claim, host *hostclock.Clock, margin time.Duration, log *slog.Logger) bool {
	for logged := false; ; logged = true {
		if host.Read().Add(margin).UnixMilli() < claim.Reservation() {
			return true
		}
		if !logged {
			log.Warn("the host's clock is past the lease's reservation (it stepped forward?): starting the child after the next renewal reserves above it",
				"reservedUntilMs", claim.Reservation(), "hostMs", host.Read().UnixMilli())
		}
		select {
		case <-claim.Done():
			return false
		case <-ctx.Done():
			return false
		case <-time.After(deadlinePoll):
		}
	}
}

// RunChild is Run with a child: Start, Supervise(cmd), then Close (bounded
// by Config.ShutdownTimeout), the whole life of a supervisor. It returns nil after
// a clean stop and release (or when ctx ended before a node ID was held), an
// error wrapping nodeid.ErrLeaseLost after a loss, a *ChildExitError when
// the child failed by itself (the ID released), and any other error of
// Start, Supervise or Close.
func (n *Node) RunChild(ctx context.Context, cmd *exec.Cmd, cfg ChildConfig) error {
	return n.runWith(ctx, func(ctx context.Context) error { return n.Supervise(ctx, cmd, cfg) })
}

// registerChild records that a child is about to run, so that Close waits
// for it before releasing; it fails once Close has begun.
func (n *Node) registerChild() (chan struct{}, error) {
	n.mu.Lock()
	defer n.mu.Unlock()
	switch {
	case n.closed:
		return nil, ErrClosed
	case n.childDone != nil:
		return nil, ErrSupervised
	}
	n.childDone = make(chan struct{})
	return n.childDone, nil
}

// unregisterChild records that the child is gone (Close may release).
func (n *Node) unregisterChild(childDone chan struct{}) {
	n.mu.Lock()
	n.childDone = nil
	n.mu.Unlock()
	close(childDone)
}

// childRun is one supervised child, from its start to its exit.
type childRun struct {
	n     *Node
	claim *nodeid.Claim
	cfg   ChildConfig
	cmd   *exec.Cmd
	pid   int

	fence     time.Time // the claim's fence as last read (n.clock); it only rises
	fenceReal time.Time // the same on the host's real-time clock, which counts a suspended host
	reserved  int64     // the claim's reservation as last read (Unix ms)
	stopSig   os.Signal // the signal sent for a stop request; nil: none
	killAt    time.Time // SIGKILL then (n.clock); zero: none due
	killed    bool      // SIGKILL sent
	cause     error     // why Supervise stopped the child itself: a loss, Close
}

// run starts the child and supervises it until it exits.
func (r *childRun) run(ctx context.Context) error {
	n, c := r.n, r.claim
	env := r.cmd.Env
	if env == nil {
		env = os.Environ()
	}
	env = append(slices.Clip(env), EnvNodeID+"="+strconv.Itoa(c.NodeID()), EnvVersion+"="+strconv.FormatInt(c.Version(), 10),
		EnvFloorMs+"="+strconv.FormatInt(c.Floor(), 10))
	if n.cfg.IDFile != "" {
		env = append(env, EnvIDFile+"="+n.cfg.IDFile)
	}
	r.cmd.Env = env
	setChildAttr(r.cmd)
	r.refresh()
	waited, err := startLocked(r.cmd)
	if err != nil {
		return fmt.Errorf("node: start the child: %w", err)
	}
	r.pid = r.cmd.Process.Pid
	n.log.Info("child started", "pid", r.pid, "path", r.cmd.Path, "nodeId", c.NodeID(), "version", c.Version(),
		"stopTimeout", r.cfg.StopTimeout.String(), "stopTimeoutOnLoss", r.cfg.stopBudget(c.LossWindow()).String())

	tick := time.NewTicker(deadlinePoll)
	defer tick.Stop()
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	ctxDone, closing, claimDone, changed := ctx.Done(), n.closing, c.Done(), c.Changed()
	for {
		timer.Reset(r.untilWake())
		select {
		case werr := <-waited:
			return r.exited(werr)
		case s := <-r.cfg.Signals:
			r.requestStop(s)
		case <-ctxDone:
			ctxDone = nil
			if r.stopSig != nil {
				break // a signal forwarded already
			}
			select {
			case s := <-r.cfg.Signals: // the signal that ended ctx, when the caller sends it first
				r.requestStop(s)
			default:
				r.requestStop(syscall.SIGTERM)
			}
		case <-closing:
			closing = nil
			r.stop(ErrClosed, syscall.SIGTERM, "the node is closing: stopping the child")
		case <-claimDone:
			claimDone = nil
			r.stop(c.Err(), syscall.SIGTERM, "lease lost: stopping the child before the claim's fence")
		case <-changed: // a jeopardy, a recovery, a renewal: read below at once, not at the next tick
			changed = c.Changed()
			if claimDone == nil {
				changed = nil // ended: Changed stays closed
			}
		case <-tick.C:
		case <-timer.C:
		}
		r.refresh()
		switch {
		case r.cause != nil:
		case errors.Is(c.Check(), nodeid.ErrJeopardy):
			// Jeopardy stops the child as a loss does: it may not issue
			// while the lease is fenced, and it cannot be told to pause.
			r.stop(fmt.Errorf("node: the lease entered jeopardy while the child ran: %w", nodeid.ErrLeaseLost), syscall.SIGTERM,
				"lease in jeopardy: stopping the child before the claim's fence")
		case r.readsFailing():
			r.stop(fmt.Errorf("node: the lease's reads failed while the child ran: %w", nodeid.ErrLeaseLost), syscall.SIGTERM,
				"reads of the lease failing: stopping the child before the claim's fence")
		}
		r.enforce()
	}
}

// readsFailing reports, in read mode, that the claim's reads count as
// failing (Claim.ReadsFailingAt) since more than one deadlinePoll: two reads
// in a row failed or timed out, and the fence falls soon. Write mode's
// renewals enter jeopardy before the fence (RenewDeadline); a read-mode claim
// enters it only when its backstop writes fail, so without this the child of
// a claim whose reads fail got SIGKILL at the fence, with no SIGTERM first.
func (r *childRun) readsFailing() bool {
	at := r.claim.ReadsFailingAt()
	return !at.IsZero() && r.n.clock.Now().Sub(at) > deadlinePoll
}

// untilWake returns the time until the next kill deadline (or a while).
func (r *childRun) untilWake() time.Duration {
	if r.killed {
		return time.Hour
	}
	wake := r.fence.Add(-r.cfg.KillMargin)
	if !r.killAt.IsZero() && r.killAt.Before(wake) {
		wake = r.killAt
	}
	return max(wake.Sub(r.n.clock.Now()), 0)
}

// refresh reads the claim's fence and reservation; a fenced claim keeps the
// last fence read, which is earlier than the real one by at most
// deadlinePoll.
func (r *childRun) refresh() {
	now := r.n.clock.Now()
	if v := r.claim.ValidUntil(); v.After(r.fence) {
		r.fence = v
		r.fenceReal = r.n.host.Read().Add(v.Sub(now))
	}
	r.reserved = r.claim.Reservation()
}

// enforce kills the child when a kill is due: the fence is within
// KillMargin (on the monotonic clock, or on the host's real-time clock after
// the host was suspended), the host's clock, which the child stamps its IDs
// with, is within KillMargin of the reservation (it stepped forward: the
// child's IDs would no longer be covered), or the stop timeout is over.
func (r *childRun) enforce() {
	if r.killed {
		return
	}
	now, host := r.n.clock.Now(), r.n.host.Read()
	switch {
	case !now.Before(r.fence.Add(-r.cfg.KillMargin)) || !host.Before(r.fenceReal.Add(-r.cfg.KillMargin)):
		if r.cause == nil || errors.Is(r.cause, ErrClosed) {
			r.cause = fmt.Errorf("node: the claim's fence fell while the child ran: %w", nodeid.ErrLeaseLost)
		}
		r.kill("the claim's fence is due: killing the child")
	case host.Add(r.cfg.KillMargin).UnixMilli() >= r.reserved:
		if r.cause == nil || errors.Is(r.cause, ErrClosed) {
			r.cause = fmt.Errorf("node: the host's clock reached the lease's reservation %d while the child ran (it stepped forward): the child's IDs would no longer be covered", r.reserved)
		}
		r.kill("the host's clock reached the lease's reservation: killing the child")
	case !r.killAt.IsZero() && !now.Before(r.killAt):
		r.kill("the child did not stop within the stop timeout: killing it")
	}
}

// requestStop forwards a stop request's signal; the first starts the stop
// timeout.
func (r *childRun) requestStop(s os.Signal) {
	if r.stopSig == nil && r.cause == nil {
		r.stopSig = s
		r.killAt = r.n.clock.Now().Add(r.cfg.StopTimeout)
	}
	r.n.log.Info("forwarding a signal to the child", "pid", r.pid, "signal", s.String())
	r.signal(s)
}

// stop starts a stop of the supervisor's own (a loss, Close): SIGTERM now,
// SIGKILL after the stop timeout at the latest (enforce brings it forward
// to the fence).
func (r *childRun) stop(cause error, sig syscall.Signal, msg string) {
	if r.cause == nil || errors.Is(r.cause, ErrClosed) {
		r.cause = cause
	}
	if r.killAt.IsZero() {
		r.killAt = r.n.clock.Now().Add(r.cfg.StopTimeout)
	}
	r.n.log.Warn(msg, "pid", r.pid, "cause", cause, "killIn", max(r.fence.Add(-r.cfg.KillMargin).Sub(r.n.clock.Now()), 0).String())
	r.signal(sig)
}

func (r *childRun) kill(msg string) {
	r.killed = true
	r.n.log.Warn(msg, "pid", r.pid)
	r.signal(syscall.SIGKILL)
}

// signal sends s to the child's process group.
func (r *childRun) signal(s os.Signal) {
	sig, ok := s.(syscall.Signal)
	if !ok {
		return
	}
	if err := signalGroup(r.pid, sig); err != nil && !errors.Is(err, syscall.ESRCH) {
		r.n.log.Error("could not signal the child's process group", "pid", r.pid, "signal", s.String(), "err", err)
	}
}

// exited reports how the child ended, once it is gone with its group.
func (r *childRun) exited(werr error) error {
	// Whatever the child left in its group goes with it: the ID is
	// released only once none of them can use it.
	if err := signalGroup(r.pid, syscall.SIGKILL); err == nil {
		r.n.log.Warn("killed the processes the child left in its process group", "pgid", r.pid)
	}
	st := r.cmd.ProcessState
	if st == nil {
		return fmt.Errorf("node: wait for the child: %w", werr)
	}
	ee := &ChildExitError{Code: st.ExitCode(), Killed: r.killed}
	if ws, ok := st.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		ee.Signal = ws.Signal()
	}
	attrs := []any{"pid", r.pid, "code", ee.Code, "killed", r.killed}
	if ee.Signal != 0 {
		attrs = append(attrs, "signal", ee.Signal.String())
	}
	r.n.log.Info("child exited", attrs...)
	switch {
	case r.cause != nil:
		return r.cause
	case ee.Code == 0:
		return nil
	case r.stopSig != nil && !r.killed && ee.Signal == r.stopSig:
		return nil // it died of the stop request's signal: a clean stop
	}
	return ee
}

// startLocked starts cmd from a goroutine locked to its OS thread for the
// child's whole life, and returns a channel that receives cmd.Wait's result.
// The parent-death signal fires when the thread that forked the child
// exits, not the process: the thread must outlive the child. The goroutine
// never unlocks, so no other goroutine runs on the thread, and it ends (with
// the thread) only after the child was waited for.
func startLocked(cmd *exec.Cmd) (<-chan error, error) {
	started := make(chan error, 1)
	waited := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		if err := cmd.Start(); err != nil {
			started <- err
			return
		}
		started <- nil
		waited <- cmd.Wait()
	}()
	if err := <-started; err != nil {
		return nil, err
	}
	return waited, nil
}
