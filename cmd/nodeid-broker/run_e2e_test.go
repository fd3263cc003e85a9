//go:build linux

package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/nodeid/nodeid/snowflake"
)

// startRun starts nodeid-broker run with args (and --http-addr on a free
// loopback port), with this test binary as its child, and waits until its
// HTTP server listens. env selects the child's mode (childEnv).
func startRun(t *testing.T, name string, env []string, args ...string) *proc {
	t.Helper()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	args = append(append([]string{"run", "--http-addr", "127.0.0.1:0"}, args...), "--", self)
	p := start(t, name, env, args...)
	p.httpAddr = p.waitLog("http listening", 15*time.Second)["addr"].(string)
	return p
}

// childEnv returns the environment of a nodeid-broker run whose child is this
// test binary in mode, writing into dir.
// The race detector's exit sleep (1 s) is off: a child exits when it says
// so.
func childEnv(t *testing.T, mode, dir string, extra ...string) []string {
	gorace := strings.TrimSpace(os.Getenv("GORACE") + " atexit_sleep_ms=0")
	return brokerEnv(t, append([]string{testChildEnv + "=" + mode, testChildDir + "=" + dir, "GORACE=" + gorace}, extra...)...)
}

// waitJSON waits until the file at path holds JSON, decodes it into v, and
// returns; it fails the test if the broker p exits first.
func waitJSON(t *testing.T, p *proc, path string, v any) {
	t.Helper()
	waitFor(t, 20*time.Second, path, func() (bool, string) {
		b, err := os.ReadFile(path)
		if err == nil {
			return json.Unmarshal(b, v) == nil, string(b)
		}
		select {
		case <-p.exited:
			t.Fatalf("broker %s exited (code %d) before %s appeared:\n%s", p.name, p.ExitCode(), path, p.log())
		default:
		}
		return false, err.Error()
	})
}

// killGroupAtEnd SIGKILLs the child's process group at the end of the test,
// before the broker is reaped: a child that outlived its supervisor must fail
// the test, not hang it on the stderr pipe it shares with the broker.
func killGroupAtEnd(t *testing.T, pid int) {
	t.Cleanup(func() { _ = syscall.Kill(-pid, syscall.SIGKILL) })
}

// procGone reports whether process pid has exited: it is gone, or a zombie.
func procGone(pid int) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return true
	}
	// pid (comm) S ...: the state follows the last ')'.
	i := bytes.LastIndexByte(b, ')')
	return i < 0 || i+2 >= len(b) || b[i+2] == 'Z' || b[i+2] == 'X'
}

// watchGone polls process pid every millisecond and, once it is gone, sends
// when it was last seen alive and when it was first seen gone: it died in
// between. (How soon the poller notices depends on the load; it was certainly
// alive at lastAlive.)
func watchGone(t *testing.T, pid int) <-chan lifetime {
	gone := make(chan lifetime, 1)
	stop := make(chan struct{})
	t.Cleanup(func() { close(stop) })
	go func() {
		tick := time.NewTicker(time.Millisecond)
		defer tick.Stop()
		var alive time.Time
		for {
			probed := time.Now()
			if procGone(pid) {
				gone <- lifetime{lastAlive: alive, gone: time.Now()}
				return
			}
			alive = probed
			select {
			case <-tick.C:
			case <-stop:
				return
			}
		}
	}()
	return gone
}

// lifetime is what watchGone saw of a process's end.
type lifetime struct {
	lastAlive time.Time // a probe begun then found it alive (zero: never)
	gone      time.Time // a probe found it gone
}

// logIndex returns the index of the first log line of p whose msg is msg,
// -1 when there is none.
func logIndex(p *proc, msg string) int {
	return slices.IndexFunc(p.Lines(), func(l string) bool {
		var m map[string]any
		return json.Unmarshal([]byte(l), &m) == nil && m["msg"] == msg
	})
}

// TestRunChildExitStatus runs a child that exits 7 by itself: the broker
// releases the ID after the child is gone and exits 7. The child saw the
// ID, its version and floor, the broker's /ids URL and (with --id-file) the
// id file, written already; it led a process group of its own; and the
// release kept the reservation above the child's clock.
func TestRunChildExitStatus(t *testing.T) {
	t.Parallel()
	for _, withIDFile := range []bool{false, true} {
		t.Run(fmt.Sprintf("idFile=%v", withIDFile), func(t *testing.T) {
			t.Parallel()
			srv := startFakeS3(t)
			dir := t.TempDir()
			args := append([]string{"--bucket", srv.Bucket(), "--s3-endpoint", srv.URL(), "--s3-path-style", "--cluster-size", "4"}, shortLease...)
			idFile := ""
			if withIDFile {
				idFile = filepath.Join(t.TempDir(), "nodeid.json")
				args = append(args, "--id-file", idFile, "--id-file-grace", "100ms")
			}
			p := startRun(t, "run", childEnv(t, "exit", dir, testChildCode+"=7"), args...)
			if code := p.waitExit(30 * time.Second); code != 7 {
				t.Fatalf("exit code %d, want the child's 7:\n%s", code, p.log())
			}
			var c childInfo
			waitJSON(t, p, filepath.Join(dir, "child.json"), &c)
			id, err := strconv.Atoi(c.NodeID)
			if err != nil {
				t.Fatalf("child's %s %q: %v", "NODEID_NODE_ID", c.NodeID, err)
			}
			rec := readLease(t, srv.URL(), srv.Bucket(), id)
			if rec.Holder != "" || strconv.FormatInt(rec.Version, 10) != c.Version {
				t.Errorf("lease after the exit: holder %q version %d, want released, version %s (the child's)", rec.Holder, rec.Version, c.Version)
			}
			if rec.ReservedUntilMs < c.ExitMs {
				t.Errorf("released with reservedUntilMs %d, below the child's last clock reading %d", rec.ReservedUntilMs, c.ExitMs)
			}
			if floor, err := strconv.ParseInt(c.FloorMs, 10, 64); err != nil || c.StartMs <= floor {
				t.Errorf("child started at %d, floor %q: want above it", c.StartMs, c.FloorMs)
			}
			if want := "http://" + p.httpAddr; c.URL != want {
				t.Errorf("child's NODEID_URL %q, want the broker's base URL %q", c.URL, want)
			}
			if !c.GroupLeader {
				t.Errorf("the child does not lead a process group of its own")
			}
			if c.IDFile != idFile {
				t.Errorf("child's NODEID_ID_FILE %q, want %q", c.IDFile, idFile)
			}
			if withIDFile && (c.IDFileContent == nil || c.IDFileContent.NodeID != id || c.IDFileContent.ValidUntilMs <= c.StartMs) {
				t.Errorf("the id file when the child started: %+v, want node %d valid after %d", c.IDFileContent, id, c.StartMs)
			}
			exited, released := logIndex(p, "child exited"), logIndex(p, "released node ID")
			if exited < 0 || released < exited {
				t.Errorf("log lines 'child exited' at %d, 'released node ID' at %d: want the release after the exit", exited, released)
			}
		})
	}
}

// TestRunForwardsSignals sends SIGTERM or SIGINT to the broker: the child
// gets the same signal, exits 0, and the broker releases the ID and exits 0.
// A child that ignores it is killed after --child-stop-timeout: exit 137.
func TestRunForwardsSignals(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name        string
		sig         syscall.Signal
		mode        string
		stopTimeout string
		wantExit    int
	}{
		{"SIGTERM", syscall.SIGTERM, "trap", "10s", 0},
		{"SIGINT", syscall.SIGINT, "trap", "10s", 0},
		{"ignored", syscall.SIGTERM, "ignore", "500ms", 128 + int(syscall.SIGKILL)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			srv := startFakeS3(t)
			dir := t.TempDir()
			args := append([]string{"--bucket", srv.Bucket(), "--s3-endpoint", srv.URL(), "--s3-path-style", "--cluster-size", "4",
				"--child-stop-timeout", tc.stopTimeout}, shortLease...)
			p := startRun(t, "run", childEnv(t, tc.mode, dir), args...)
			var c childInfo
			waitJSON(t, p, filepath.Join(dir, "ready.json"), &c)
			killGroupAtEnd(t, c.Pid)
			p.signal(tc.sig)
			if code := p.waitExit(30 * time.Second); code != tc.wantExit {
				t.Fatalf("exit code %d, want %d:\n%s", code, tc.wantExit, p.log())
			}
			if !procGone(c.Pid) {
				t.Errorf("the child %d is still running after the broker exited", c.Pid)
			}
			switch tc.mode {
			case "trap":
				var got struct{ Signal string }
				waitJSON(t, p, filepath.Join(dir, "signal.json"), &got)
				if got.Signal != tc.sig.String() {
					t.Errorf("the child got %q, want %q", got.Signal, tc.sig.String())
				}
			case "ignore":
				b, _ := os.ReadFile(filepath.Join(dir, "signals.log"))
				if strings.TrimSpace(string(b)) != tc.sig.String() {
					t.Errorf("the child noted signals %q, want one %q", b, tc.sig.String())
				}
				if logIndex(p, "the child did not stop within the stop timeout: killing it") < 0 {
					t.Errorf("no log line about killing the child after the stop timeout")
				}
			}
			id, _ := strconv.Atoi(c.NodeID)
			if rec := readLease(t, srv.URL(), srv.Bucket(), id); rec.Holder != "" {
				t.Errorf("lease after the stop: holder %q, want released", rec.Holder)
			}
		})
	}
}

// TestRunKillsChildOnLeaseLoss cuts the broker off its S3 while its child,
// which ignores SIGTERM, runs: the child gets SIGTERM and then SIGKILL, and
// is gone before the lease could expire in the store's view (the last write
// that landed, sent at its renewedAt, plus the lease); the broker exits 3.
func TestRunKillsChildOnLeaseLoss(t *testing.T) {
	t.Parallel()
	const leaseDuration = 3 * time.Second
	srv := startFakeS3(t)
	proxy := newCutProxy(t, strings.TrimPrefix(srv.URL(), "http://"))
	dir := t.TempDir()
	// Safety margin 750 ms: the child has 650 ms between SIGTERM and SIGKILL.
	p := startRun(t, "run", childEnv(t, "ignore", dir), "--bucket", srv.Bucket(), "--s3-endpoint", proxy.URL(), "--s3-path-style",
		"--cluster-size", "4", "--lease-duration", leaseDuration.String(), "--renew-interval", "500ms", "--renew-deadline", "1500ms",
		"--drain-delay", "100ms")
	var c childInfo
	waitJSON(t, p, filepath.Join(dir, "ready.json"), &c)
	killGroupAtEnd(t, c.Pid)
	gone := watchGone(t, c.Pid)
	id, _ := strconv.Atoi(c.NodeID)
	waitFor(t, 10*time.Second, "a renewal", func() (bool, string) { // the child runs under a renewed lease
		rec := readLease(t, srv.URL(), srv.Bucket(), id)
		return rec.RenewedAt.UnixMilli() > c.StartMs, fmt.Sprint(rec.RenewedAt)
	})

	proxy.Cut()
	cut := time.Now()
	if code := p.waitExit(30 * time.Second); code != exitLeaseLost {
		t.Fatalf("exit code %d, want %d (lease lost):\n%s", code, exitLeaseLost, p.log())
	}
	var dead lifetime
	select {
	case dead = <-gone:
	case <-time.After(5 * time.Second):
		t.Fatalf("the child %d still runs after the broker exited", c.Pid)
	}
	rec := readLease(t, srv.URL(), srv.Bucket(), id) // the store's view, not through the cut proxy
	expiry := rec.RenewedAt.Add(leaseDuration)
	t.Logf("child last seen alive %v after the cut, gone %v after it; the lease's last write + lease %v after it",
		dead.lastAlive.Sub(cut).Round(time.Millisecond), dead.gone.Sub(cut).Round(time.Millisecond), expiry.Sub(cut).Round(time.Millisecond))
	if rec.Holder == "" || strconv.FormatInt(rec.Version, 10) != c.Version {
		t.Errorf("lease after the loss: holder %q version %d, want still held at version %s", rec.Holder, rec.Version, c.Version)
	}
	// Evidence of a late kill is the child seen alive at or after the
	// expiry; seeing it gone late only says the poller was slow.
	if !dead.lastAlive.Before(expiry) {
		t.Errorf("the child was alive at %s, when the lease could expire: last write sent at %s + %v = %s",
			dead.lastAlive.Format(time.RFC3339Nano), rec.RenewedAt.Format(time.RFC3339Nano), leaseDuration, expiry.Format(time.RFC3339Nano))
	}
	// The child ignores SIGTERM: it is killed at the fence, always. The loss
	// is declared before (SIGTERM first) unless the renewal loop was stuck in
	// a store call (a read-back) past the fence: then the kill comes first,
	// on its own, and the loss is declared after it, or only by the exit.
	lost, killed := logIndex(p, "lease lost: stopping the child before the claim's fence"), logIndex(p, "the claim's fence is due: killing the child")
	b, _ := os.ReadFile(filepath.Join(dir, "signals.log"))
	switch {
	case killed < 0:
		t.Errorf("no log line of the kill at the fence (the loss declared at line %d)", lost)
	case lost >= 0 && lost < killed && strings.TrimSpace(string(b)) != syscall.SIGTERM.String():
		t.Errorf("the child noted signals %q, want one SIGTERM between the loss and the kill", b)
	case lost < 0 || lost > killed:
		t.Logf("the loss was not declared before the fence fell: killed without SIGTERM (signals noted: %q)", b)
	}
}

// TestRunChildDiesWithSupervisor kills the broker with SIGKILL: its child
// dies too (the parent-death signal), without a SIGTERM.
func TestRunChildDiesWithSupervisor(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	p := startRun(t, "run", childEnv(t, "ignore", dir), append([]string{"--embedded-s3", "127.0.0.1:0", "--cluster-size", "4"}, shortLease...)...)
	var c childInfo
	waitJSON(t, p, filepath.Join(dir, "ready.json"), &c)
	killGroupAtEnd(t, c.Pid)
	gone := watchGone(t, c.Pid)
	p.signal(syscall.SIGKILL)
	select {
	case <-gone:
	case <-time.After(5 * time.Second):
		t.Fatalf("the child %d still runs 5 s after its broker was killed", c.Pid)
	}
	if b, err := os.ReadFile(filepath.Join(dir, "signals.log")); err == nil {
		t.Errorf("the child noted signals %q, want none (SIGKILL only)", b)
	}
}

// TestRunSnowflakeChildNeverRepeats runs, one after the other on a cluster
// of one node ID, supervisors whose children issue Snowflake IDs themselves
// from NODEID_NODE_ID with their own clocks (floor: their start), some
// clocks 3.5 s ahead (as the broker's, --debug-clock-offset); each
// supervisor starts while its predecessor still holds the ID, then the
// predecessor is killed (kill -9) or stopped (SIGTERM). No ID repeats: a
// successor's child starts only once its clock is past the floor, which
// covers the predecessor's child's clock whether it was released or expired.
//
// A supervisor that loses its lease on its own (exit 3: a renewal to the
// test's S3 did not land within its 450 ms store timeout, as happens on a
// loaded machine) ends its round early, failing closed as it must; its
// successor takes the ID over expired, a handover like the others. The test
// then checks the IDs of the children that ran, and needs two of them.
func TestRunSnowflakeChildNeverRepeats(t *testing.T) {
	t.Parallel()
	srv := startFakeS3(t)
	dir := t.TempDir()
	args := []string{"--bucket", srv.Bucket(), "--s3-endpoint", srv.URL(), "--s3-path-style", "--cluster-size", "1",
		"--lease-duration", "1500ms", "--renew-interval", "300ms", "--renew-deadline", "900ms", "--clock-margin", "200ms",
		"--drain-delay", "100ms", "--child-stop-timeout", "2s"}
	const ahead = 3500 * time.Millisecond
	rounds := []struct {
		offset time.Duration
		kill   bool // how this round's supervisor ends: kill -9, else SIGTERM
	}{{ahead, true}, {0, false}, {ahead, false}, {0, false}}
	var prev *proc
	var prevChild childInfo
	children := 0
	for i, r := range rounds {
		env := childEnv(t, "snowflake", dir, testChildOffset+"="+r.offset.String())
		p := startRun(t, fmt.Sprintf("run%d", i), env, append(slices.Clone(args), "--debug-clock-offset", r.offset.String())...)
		if prev != nil {
			stopRound(t, prev, rounds[i-1].kill)
		}
		c, ok := waitSnowflakeChild(t, p, dir, i+1)
		if !ok {
			prev, prevChild = p, childInfo{}
			continue
		}
		children++
		killGroupAtEnd(t, c.Pid)
		if prevChild.Pid != 0 && rounds[i-1].offset > r.offset {
			// A child behind its predecessor's clock runs until its IDs'
			// times pass all of the predecessor's: any overlap would show.
			prevLast := lastIDTime(t, dir, prevChild.Pid)
			waitFor(t, 20*time.Second, "child "+p.name+" to issue past its predecessor's last ID time", func() (bool, string) {
				if lostLease(p) {
					return true, ""
				}
				last := lastIDTime(t, dir, c.Pid)
				return last.After(prevLast), fmt.Sprintf("last ID at %s, predecessor's at %s", last.Format(time.RFC3339Nano), prevLast.Format(time.RFC3339Nano))
			})
		}
		prev, prevChild = p, c
	}
	stopRound(t, prev, rounds[len(rounds)-1].kill)

	if errs, _ := filepath.Glob(filepath.Join(dir, "error-*.txt")); len(errs) > 0 {
		for _, f := range errs {
			b, _ := os.ReadFile(f)
			t.Errorf("%s: %s", filepath.Base(f), b)
		}
	}
	files, _ := filepath.Glob(filepath.Join(dir, "ids-*.txt"))
	if len(files) < max(children, 2) {
		t.Fatalf("%d children wrote IDs, want at least %d (and two, to check a handover)", len(files), max(children, 2))
	}
	seen := map[snowflake.ID]string{}
	for _, f := range files {
		n := 0
		fh, err := os.Open(f)
		if err != nil {
			t.Fatal(err)
		}
		sc := bufio.NewScanner(fh)
		for sc.Scan() {
			id, err := snowflake.Parse(sc.Text())
			if err != nil || id.NodeID() != 0 {
				t.Fatalf("%s: line %q: %v (node %d, want 0)", filepath.Base(f), sc.Text(), err, id.NodeID())
			}
			if other, dup := seen[id]; dup {
				t.Errorf("ID %d (time %s, seq %d) issued by two children: %s and %s", id, id.Time().Format(time.RFC3339Nano), id.Seq(), other, filepath.Base(f))
			}
			seen[id] = filepath.Base(f)
			n++
		}
		_ = fh.Close()
		if n == 0 {
			t.Errorf("%s: no IDs", filepath.Base(f))
		}
		t.Logf("%s: %d IDs", filepath.Base(f), n)
	}
}

// lastIDTime returns the time of the last ID child pid wrote.
func lastIDTime(t *testing.T, dir string, pid int) time.Time {
	t.Helper()
	f, err := os.Open(filepath.Join(dir, fmt.Sprintf("ids-%d.txt", pid)))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, min(st.Size(), 256))
	if _, err := f.ReadAt(buf, st.Size()-int64(len(buf))); err != nil {
		t.Fatal(err)
	}
	lines := strings.Fields(string(buf))
	if len(lines) == 0 {
		return time.Time{}
	}
	id, err := snowflake.Parse(lines[len(lines)-1])
	if err != nil {
		t.Fatalf("ids-%d.txt: last line %q: %v", pid, lines[len(lines)-1], err)
	}
	return id.Time()
}

// lostLease reports whether p has exited after losing its lease (exit 3).
func lostLease(p *proc) bool {
	select {
	case <-p.exited:
		return p.ExitCode() == exitLeaseLost
	default:
		return false
	}
}

// stopRound ends a round's supervisor: kill -9, or SIGTERM and exit 0; one
// that already lost its lease has ended.
func stopRound(t *testing.T, p *proc, kill bool) {
	t.Helper()
	if lostLease(p) {
		return
	}
	if kill {
		p.signal(syscall.SIGKILL)
		p.waitExit(10 * time.Second)
		return
	}
	p.signal(syscall.SIGTERM)
	code := p.waitExit(20 * time.Second)
	switch {
	case code == exitLeaseLost:
		t.Logf("broker %s lost its lease before its SIGTERM took effect (a loaded machine): exit 3", p.name)
	case code != exitOK:
		t.Fatalf("broker %s: exit code %d after SIGTERM, want 0:\n%s", p.name, code, p.log())
	}
}

// waitSnowflakeChild waits until the n-th snowflake child (started by p)
// has written IDs, and returns what it saw at its start; false if p lost its
// lease before (logged).
func waitSnowflakeChild(t *testing.T, p *proc, dir string, n int) (childInfo, bool) {
	t.Helper()
	var c childInfo
	lost := false
	waitFor(t, 30*time.Second, fmt.Sprintf("child %d of broker %s to issue IDs", n, p.name), func() (bool, string) {
		select {
		case <-p.exited:
			if lostLease(p) {
				t.Logf("broker %s lost its lease (exit 3) before the test saw its child issue IDs (a loaded machine): its round ends", p.name)
				lost = true
				return true, ""
			}
			t.Fatalf("broker %s exited (code %d) before its child issued IDs:\n%s", p.name, p.ExitCode(), p.log())
		default:
		}
		line := p.findLog("child started")
		if line == nil {
			return false, "no child started by " + p.name
		}
		pid := int(line["pid"].(float64))
		b, err := os.ReadFile(filepath.Join(dir, fmt.Sprintf("ready-%d.json", pid)))
		if err != nil {
			return false, err.Error()
		}
		if err := json.Unmarshal(b, &c); err != nil {
			return false, err.Error()
		}
		st, err := os.Stat(filepath.Join(dir, fmt.Sprintf("ids-%d.txt", pid)))
		if err != nil {
			return false, err.Error()
		}
		return st.Size() > 1000, fmt.Sprintf("%d bytes of IDs", st.Size())
	})
	return c, !lost
}

// TestRunBadInput: run refuses, before doing anything (exit 2), a missing
// command, a bad --child-stop-timeout, and lease timings that leave a lost
// lease's child no time to stop; a command that cannot start is exit 1;
// --help lists run's flag.
func TestRunBadInput(t *testing.T) {
	t.Parallel()
	env := brokerEnv(t)
	for _, tc := range []struct {
		name     string
		args     []string
		code     int
		contains string
	}{
		{"no command", []string{"run", "--bucket", "b"}, 2, "no command"},
		{"empty command", []string{"run", "--bucket", "b", "--"}, 2, "no command"},
		{"bad stop timeout", []string{"run", "--bucket", "b", "--child-stop-timeout", "0s", "--", "true"}, 2, "--child-stop-timeout"},
		{"no time to stop after a loss", []string{"run", "--bucket", "b", "--lease-duration", "3s", "--renew-deadline", "2250ms", "--", "true"}, 2, "too little for the child to stop"},
		{"serve flags checked", []string{"run", "--bukket", "b", "--", "true"}, 2, "bukket"},
		{"missing command", []string{"run", "--embedded-s3", "127.0.0.1:0", "--http-addr", "127.0.0.1:0", "--", "/nonexistent/cmd"}, 2, `CMD "/nonexistent/cmd" cannot be run`},
		{"command not on PATH", []string{"run", "--embedded-s3", "127.0.0.1:0", "--http-addr", "127.0.0.1:0", "--", "nodeid-no-such-command"}, 2, `CMD "nodeid-no-such-command" cannot be run`},
		{"help", []string{"run", "--help"}, 0, "NODEID_CHILD_STOP_TIMEOUT"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, out, errOut := runBin(t, env, tc.args...)
			if code != tc.code || !strings.Contains(out+errOut, tc.contains) {
				t.Errorf("exit %d, want %d with %q in the output:\n%s%s", code, tc.code, tc.contains, out, errOut)
			}
		})
	}
}

// TestRunChildEnvironment: the child gets the documented NODEID_ values and
// the caller's environment, but none of the broker's own configuration
// variables, the gossip key and the etcd password first; a caller's
// variable that is no flag of the broker passes. The broker was configured
// by variables alone here.
func TestRunChildEnvironment(t *testing.T) {
	t.Parallel()
	srv := startFakeS3(t)
	dir := t.TempDir()
	idFile := filepath.Join(t.TempDir(), "id.json")
	secrets := []string{"NODEID_GOSSIP_KEY=MDEyMzQ1Njc4OWFiY2RlZg==", "NODEID_ETCD_PASSWORD=etcd-secret"}
	config := []string{"NODEID_BUCKET=" + srv.Bucket(), "NODEID_S3_ENDPOINT=" + srv.URL(), "NODEID_S3_PATH_STYLE=true",
		"NODEID_CLUSTER_SIZE=2", "NODEID_LEASE_DURATION=2s", "NODEID_ID_FILE=" + idFile, "NODEID_CHILD_STOP_TIMEOUT=1s"}
	callers := []string{"MY_APP_SETTING=kept", "NODEID_APP_MODE=kept"}
	env := childEnv(t, "exit", dir, append(append(append([]string{testChildCode + "=0"}, secrets...), config...), callers...)...)
	p := startRun(t, "run", env)
	if code := p.waitExit(30 * time.Second); code != 0 {
		t.Fatalf("exit code %d, want the child's 0:\n%s", code, p.log())
	}
	var c childInfo
	waitJSON(t, p, filepath.Join(dir, "child.json"), &c)
	got := map[string]string{}
	for _, kv := range c.Environ {
		k, v, _ := strings.Cut(kv, "=")
		got[k] = v
	}
	for _, kv := range append(secrets, config...) {
		k, _, _ := strings.Cut(kv, "=")
		if v, ok := got[k]; ok && !(k == "NODEID_ID_FILE" && v == idFile) {
			t.Errorf("the child's environment has the broker's %s=%q", k, v)
		}
	}
	for _, k := range []string{"NODEID_NODE_ID", "NODEID_VERSION", "NODEID_FLOOR_MS", "NODEID_URL", "NODEID_ID_FILE"} {
		if got[k] == "" {
			t.Errorf("the child's environment lacks %s: %q", k, c.Environ)
		}
	}
	for _, kv := range callers {
		k, v, _ := strings.Cut(kv, "=")
		if got[k] != v {
			t.Errorf("the caller's %s=%q did not reach the child (%q)", k, v, got[k])
		}
	}
}
