package main

import (
	"encoding/json"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/nodeid/nodeid/node"
	"github.com/nodeid/nodeid/snowflake"
)

// The test binary is also the child nodeid-broker run starts in the tests:
// TestMain runs testChild instead of the tests when testChildEnv is set.
const (
	testChildEnv    = "NODEIDBROKER_TEST_CHILD"        // the mode: exit, trap, ignore, snowflake
	testChildDir    = "NODEIDBROKER_TEST_DIR"          // where the child writes what it saw
	testChildCode   = "NODEIDBROKER_TEST_CODE"         // exit: the status to exit with
	testChildOffset = "NODEIDBROKER_TEST_CLOCK_OFFSET" // snowflake: the clock offset, as the broker's --debug-clock-offset
)

// childInfo is what a test child saw at its start (and, in mode exit, when
// it exited).
type childInfo struct {
	Pid             int
	NodeID, Version string
	FloorMs, URL    string
	IDFile          string
	IDFileContent   *node.IDFileContent // read at the start, when IDFile is set
	StartMs, ExitMs int64
	GroupLeader     bool     // the child leads a process group of its own
	Environ         []string // its whole environment
}

// testChild is the test binary as nodeid-broker run's child; it returns the
// exit status.
func testChild(mode string) int {
	dir := os.Getenv(testChildDir)
	sigs := make(chan os.Signal, 8)
	signal.Notify(sigs, syscall.SIGTERM, syscall.SIGINT)
	info := childInfo{
		Pid: os.Getpid(), NodeID: os.Getenv(node.EnvNodeID), Version: os.Getenv(node.EnvVersion),
		FloorMs: os.Getenv(node.EnvFloorMs), URL: os.Getenv(node.EnvURL), IDFile: os.Getenv(node.EnvIDFile),
		StartMs: time.Now().UnixMilli(), Environ: os.Environ(),
	}
	pgid, _ := syscall.Getpgid(0)
	info.GroupLeader = pgid == info.Pid
	if info.IDFile != "" {
		if b, err := os.ReadFile(info.IDFile); err == nil {
			info.IDFileContent = new(node.IDFileContent)
			_ = json.Unmarshal(b, info.IDFileContent)
		}
	}
	switch mode {
	case "exit":
		code, _ := strconv.Atoi(os.Getenv(testChildCode))
		info.ExitMs = time.Now().UnixMilli()
		writeJSON(dir, "child.json", info)
		return code
	case "trap": // exits 0 on the first SIGTERM or SIGINT, naming it
		writeJSON(dir, "ready.json", info)
		s := <-sigs
		writeJSON(dir, "signal.json", map[string]any{"signal": s.String(), "ms": time.Now().UnixMilli()})
		return 0
	case "ignore": // notes every SIGTERM or SIGINT and keeps running: only SIGKILL ends it
		writeJSON(dir, "ready.json", info)
		for s := range sigs {
			appendLine(filepath.Join(dir, "signals.log"), s.String())
		}
		return 0
	case "snowflake":
		return snowflakeChild(dir, info, sigs)
	}
	fmt.Fprintf(os.Stderr, "test child: unknown mode %q\n", mode)
	return 100
}

// offsetClock is the system clock shifted by an offset, as the broker's
// --debug-clock-offset shifts its own.
type offsetClock struct{ offset time.Duration }

func (c offsetClock) Now() time.Time        { return time.Now().Add(c.offset) }
func (c offsetClock) Sleep(d time.Duration) { time.Sleep(d) }

// snowflakeChild issues Snowflake IDs itself, with the node ID from the
// environment and its own (offset) clock, its floor being its start time,
// and appends them to ids-PID.txt, ten every millisecond or so, until a
// signal (or SIGKILL). A start not above NODEID_FLOOR_MS is written to
// error-PID.txt.
func snowflakeChild(dir string, info childInfo, sigs <-chan os.Signal) int {
	offset, _ := time.ParseDuration(os.Getenv(testChildOffset))
	clk := offsetClock{offset}
	start := clk.Now().UnixMilli()
	fail := func(format string, args ...any) int {
		appendLine(filepath.Join(dir, fmt.Sprintf("error-%d.txt", info.Pid)), fmt.Sprintf(format, args...))
		return 101
	}
	floor, err := strconv.ParseInt(info.FloorMs, 10, 64)
	if err != nil || start <= floor {
		return fail("started at %d on its clock, not above the floor %q (%v)", start, info.FloorMs, err)
	}
	id, err := strconv.ParseInt(info.NodeID, 10, 64)
	if err != nil {
		return fail("node ID %q: %v", info.NodeID, err)
	}
	cfg := snowflake.DefaultConfig()
	cfg.NodeID, cfg.FloorMs, cfg.Clock = id, start, clk
	g, err := snowflake.New(cfg)
	if err != nil {
		return fail("generator: %v", err)
	}
	f, err := os.OpenFile(filepath.Join(dir, fmt.Sprintf("ids-%d.txt", info.Pid)), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return fail("%v", err)
	}
	writeJSON(dir, fmt.Sprintf("ready-%d.json", info.Pid), info)
	var b strings.Builder
	for {
		select {
		case <-sigs:
			return 0
		default:
		}
		r, err := g.NextN(10)
		if err != nil {
			return fail("NextN: %v", err)
		}
		b.Reset()
		for i := range r.N {
			b.WriteString(strconv.FormatInt(r.First.Int64()+int64(i), 10))
			b.WriteByte('\n')
		}
		if _, err := f.WriteString(b.String()); err != nil { // one write: a SIGKILL never tears a line
			return fail("%v", err)
		}
		time.Sleep(time.Millisecond)
	}
}

// writeJSON writes v to dir/name atomically.
func writeJSON(dir, name string, v any) {
	b, _ := json.Marshal(v)
	tmp := filepath.Join(dir, "."+name+".tmp")
	if err := os.WriteFile(tmp, b, 0o644); err == nil {
		_ = os.Rename(tmp, filepath.Join(dir, name))
	}
}

// appendLine appends line to the file at path in one write.
func appendLine(path, line string) {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return
	}
	_, _ = f.WriteString(line + "\n")
	_ = f.Close()
}
