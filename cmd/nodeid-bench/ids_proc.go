package main

// The broker process under test and its measurements: start and stop, /health,
// RSS and CPU time from /proc, the Go runtime gauges from /metrics.

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"os"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/nodeid/nodeid/internal/testkit/brokerproc"
)

// freeAddr returns a loopback address with a port free a moment ago.
func freeAddr() (string, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	addr := ln.Addr().String()
	return addr, ln.Close()
}

// loadAvg returns the first three fields of /proc/loadavg, or "".
func loadAvg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return ""
	}
	f := strings.Fields(string(b))
	return strings.Join(f[:min(3, len(f))], " ")
}

// brokerProc is a nodeid-broker serve process.
type brokerProc struct {
	*brokerproc.Proc
	url string // http://addr, once listening
}

// startBrokerProc starts the broker and waits for its "http listening" log line.
func startBrokerProc(bin string, args, env []string) (*brokerProc, error) {
	bp, err := brokerproc.Start(brokerproc.Config{Bin: bin, Args: args, Env: env, KeepLines: 50})
	if err != nil {
		return nil, err
	}
	addr, err := bp.WaitAddr("http listening", 30*time.Second)
	if err != nil {
		bp.Kill()
		return nil, fmt.Errorf("nodeid-broker did not listen: %w:\n%s", err, bp.Log())
	}
	return &brokerProc{Proc: bp, url: "http://" + addr}, nil
}

func (p *brokerProc) tail() string { return p.Log() }

// kill kills the process unless it has exited.
func (p *brokerProc) kill() { p.Kill() }

// stop sends SIGTERM and returns the exit code (-1 if it had to be killed).
func (p *brokerProc) stop(timeout time.Duration) int {
	code, ok := p.Stop(timeout)
	if !ok {
		return -1
	}
	return code
}

// waitHealthy polls /health until it answers 200.
func (p *brokerProc) waitHealthy(ctx context.Context, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for {
		resp, err := http.Get(p.url + "/health")
		if err == nil {
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
		select {
		case <-p.Exited():
			return fmt.Errorf("nodeid-broker exited %d before /health 200:\n%s", p.ExitCode(), p.tail())
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(20 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("/health not 200 within %v:\n%s", timeout, p.tail())
		}
	}
}

// statusMB returns a kB field of /proc/PID/status (VmRSS, VmHWM) in MB, or 0.
func (p *brokerProc) statusMB(field string) float64 {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", p.Pid()))
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		if rest, ok := strings.CutPrefix(line, field+":"); ok {
			f := strings.Fields(rest)
			if len(f) > 0 {
				kb, _ := strconv.ParseFloat(f[0], 64)
				return math.Round(kb/1024*10) / 10
			}
		}
	}
	return 0
}

func (p *brokerProc) rssMB() float64 { return p.statusMB("VmRSS") }

// cpuTime returns the CPU time (user + system) the process has used.
func (p *brokerProc) cpuTime() time.Duration {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", p.Pid()))
	if err != nil {
		return 0
	}
	// The fields after the command name, which is in parentheses.
	s := string(b)
	f := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
	if len(f) < 13 {
		return 0
	}
	ut, _ := strconv.ParseInt(f[11], 10, 64)        // field 14, utime
	st, _ := strconv.ParseInt(f[12], 10, 64)        // field 15, stime
	return time.Duration(ut+st) * time.Second / 100 // USER_HZ, 100 on Linux
}

// goMetrics reads the go_* gauges without labels from /metrics.
func (p *brokerProc) goMetrics() (map[string]float64, error) {
	resp, err := http.Get(p.url + "/metrics")
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	m := map[string]float64{}
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		name, val, ok := strings.Cut(sc.Text(), " ")
		if ok && strings.HasPrefix(name, "go_") && !strings.Contains(name, "{") {
			if v, err := strconv.ParseFloat(val, 64); err == nil {
				m[name] = v
			}
		}
	}
	return m, sc.Err()
}

// selfCPU returns the CPU time this process has used.
func selfCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
