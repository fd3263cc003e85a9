package brokerproc

import (
	"fmt"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// The test binary plays the broker when BROKERPROC_HELPER is set: it prints
// BROKERPROC_LINES (separated by |) on stderr, then exits with
// BROKERPROC_EXIT, or waits for SIGTERM and exits 0 when that is "term".
func TestMain(m *testing.M) {
	if os.Getenv("BROKERPROC_HELPER") == "" {
		os.Exit(m.Run())
	}
	term := make(chan os.Signal, 1)
	signal.Notify(term, syscall.SIGTERM) // before the lines: a test that saw them may signal
	for _, l := range strings.Split(os.Getenv("BROKERPROC_LINES"), "|") {
		fmt.Fprintln(os.Stderr, l)
	}
	if os.Getenv("BROKERPROC_EXIT") == "term" {
		<-term
		os.Exit(0)
	}
	code, _ := strconv.Atoi(os.Getenv("BROKERPROC_EXIT"))
	os.Exit(code)
}

func start(t *testing.T, exit string, lines ...string) *Proc {
	t.Helper()
	var seen []string
	p, err := Start(Config{
		Bin:    os.Args[0],
		Env:    append(os.Environ(), "BROKERPROC_HELPER=1", "BROKERPROC_EXIT="+exit, "BROKERPROC_LINES="+strings.Join(lines, "|")),
		OnLine: func(l string) { seen = append(seen, l) },
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		p.Kill()
		if len(seen) != len(lines) { // OnLine ran before Exited closed
			t.Errorf("OnLine saw %d lines, want %d", len(seen), len(lines))
		}
	})
	return p
}

func TestWaitLogAndExitCode(t *testing.T) {
	p := start(t, "3", `{"msg":"starting"}`, `not json`, `{"msg":"http listening","addr":"127.0.0.1:8080"}`)
	addr, err := p.WaitAddr("http listening", 10*time.Second)
	if err != nil || addr != "127.0.0.1:8080" {
		t.Fatalf("WaitAddr: %q %v", addr, err)
	}
	if code := p.ExitCode(); code != 3 {
		t.Fatalf("exit code %d, want 3", code)
	}
	if got := p.Lines(); len(got) != 3 || got[1] != "not json" {
		t.Fatalf("lines %q", got)
	}
	if p.Find("starting") == nil || p.Find("not json") != nil {
		t.Fatal("Find")
	}
}

func TestWaitLogFailsWhenTheProcessExits(t *testing.T) {
	p := start(t, "1", `{"msg":"other"}`)
	if _, err := p.WaitLog("http listening", 10*time.Second); err == nil || !strings.Contains(err.Error(), "exit code 1") {
		t.Fatalf("WaitLog: %v", err)
	}
}

func TestWaitLogTimesOut(t *testing.T) {
	p := start(t, "term", `{"msg":"other"}`)
	if _, err := p.WaitLog("other", 10*time.Second); err != nil {
		t.Fatal(err)
	}
	if _, err := p.WaitLog("never", 50*time.Millisecond); err == nil || strings.Contains(err.Error(), "exit") {
		t.Fatalf("WaitLog: %v, want a timeout", err)
	}
	if code, ok := p.Stop(10 * time.Second); !ok || code != 0 {
		t.Fatalf("Stop: %d %v, want 0 after SIGTERM", code, ok)
	}
}

func TestKeepLines(t *testing.T) {
	p, err := Start(Config{Bin: os.Args[0], KeepLines: 2,
		Env: append(os.Environ(), "BROKERPROC_HELPER=1", "BROKERPROC_EXIT=0", "BROKERPROC_LINES=a|b|c")})
	if err != nil {
		t.Fatal(err)
	}
	p.ExitCode()
	if got := strings.Join(p.Lines(), ","); got != "b,c" {
		t.Fatalf("lines %q, want the last two", got)
	}
}
