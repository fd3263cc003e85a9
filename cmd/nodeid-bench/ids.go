package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"text/tabwriter"
	"time"

	"github.com/nodeid/nodeid/internal/ctxtime"
	"github.com/nodeid/nodeid/s3store/s3fake"
)

// The issue-7 targets of the ids scenario.
const (
	idsTargetPerSec = 2_000_000
	idsTargetRSSMB  = 40
)

// The S3 set-ups of the broker under test (--s3).
const (
	s3Embedded = "embedded" // the broker's own --embedded-s3: its RSS includes gofakes3
	s3External = "external" // S3 in this process (or --s3-endpoint) through the latency proxy
)

type idsOpts struct {
	common
	brokerBin string
	s3Modes   []string
	batches   []int
	conns     int
	duration  time.Duration
	warmup    time.Duration
	settle    time.Duration
}

// idsLoad is one load run: conns connections asking for batch IDs per request.
type idsLoad struct {
	Batch    int `json:"batch"`
	Conns    int `json:"conns"`
	Duration ms  `json:"durationMs"`
	Requests int `json:"requests"`
	// IDs counts the IDs in the 200 responses of the window.
	IDs            int64   `json:"ids"`
	IDsPerSec      float64 `json:"idsPerSec"`
	RequestsPerSec float64 `json:"requestsPerSec"`
	// Latency of one request, from sending it to the last byte of the body
	// read and checked, in ms.
	LatencyP50 float64 `json:"latencyP50Ms"`
	LatencyP99 float64 `json:"latencyP99Ms"`
	LatencyMax float64 `json:"latencyMaxMs"`
	// BodyBytes is the mean size of a response body.
	BodyBytes int `json:"meanBodyBytes"`
	// RSS of the broker during the window: the highest sample (every 100 ms)
	// and the last one, MB (2^20 bytes).
	RSSMaxMB float64 `json:"rssMaxMB"`
	RSSEndMB float64 `json:"rssEndMB"`
	// CPU used during the window, in cores (CPU seconds per second): the
	// broker process, and this process (the clients, and the S3 server and
	// proxy when external).
	BrokerCores float64 `json:"brokerCores"`
	BenchCores  float64 `json:"benchCores"`
	// Errors counts failed requests (not 200, or a body that did not check).
	Errors    int    `json:"errors"`
	FirstFail string `json:"firstError,omitempty"`
}

// idsBroker is one broker process and what was measured on it.
type idsBroker struct {
	S3       string `json:"s3"`
	S3Detail string `json:"s3Detail"`
	Args     string `json:"brokerArgs"`
	NodeID   int    `json:"nodeId"`
	Version  int64  `json:"version"`
	// StartToHealthy is the time from starting the process to /health 200.
	StartToHealthy ms `json:"startToHealthyMs"`
	// Idle figures, --settle after /health turned 200: VmRSS, and the Go
	// runtime's view from /metrics (heap in use, memory obtained from the OS).
	IdleRSSMB float64 `json:"idleRssMB"`
	// The idle RSS split: anonymous memory (heap, stacks) and file-backed
	// pages (the binary's code and data, clean).
	IdleRSSAnonMB   float64   `json:"idleRssAnonMB"`
	IdleRSSFileMB   float64   `json:"idleRssFileMB"`
	IdleHeapInuseMB float64   `json:"idleHeapInuseMB"`
	IdleGoSysMB     float64   `json:"idleGoSysMB"`
	IdleGoroutines  int       `json:"idleGoroutines"`
	Loads           []idsLoad `json:"loads"`
	// AfterRSSMB is VmRSS --settle after the last load; PeakRSSMB is VmHWM.
	AfterRSSMB float64 `json:"afterLoadRssMB"`
	PeakRSSMB  float64 `json:"peakRssMB"`
	// IDs checked for uniqueness: every ID of every 200 response from this
	// broker, warm-ups included.
	CheckedIDs int64 `json:"checkedIds"`
	Unique     bool  `json:"unique"`
	ExitCode   int   `json:"exitCode"`
}

type idsReport struct {
	Scenario string      `json:"scenario"`
	Command  string      `json:"command"`
	Started  string      `json:"started"`
	Cores    int         `json:"cores"`
	LoadAvg  string      `json:"loadAvgAtStart"`
	Latency  ms          `json:"latencyMs"`
	Brokers  []idsBroker `json:"brokers"`
	Targets  []target    `json:"targets,omitempty"`
}

func runIDs(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	var (
		o               idsOpts
		modes, batchStr string
	)
	fs := flag.NewFlagSet("nodeid-bench ids", flag.ContinueOnError)
	addCommon(fs, &o.common)
	fs.StringVar(&o.brokerBin, "broker-bin", "", "demo-broker binary to run (empty: go build ./cmd/demo-broker into a temporary directory; needs the module as working directory)")
	fs.StringVar(&modes, "s3", s3Embedded+","+s3External, "S3 set-ups of the broker, comma-separated, one broker each: "+
		"embedded (the broker's own --embedded-s3, in its RSS) or external (the S3 server of this process, or --s3-endpoint, through the latency proxy)")
	fs.StringVar(&batchStr, "batch", "10000,1000,100", "IDs per request (n of /ids?n=), comma-separated: one load run each")
	fs.IntVar(&o.conns, "conns", 4, "concurrent keep-alive connections (one client goroutine each)")
	fs.DurationVar(&o.duration, "duration", 10*time.Second, "measured window of each load run")
	fs.DurationVar(&o.warmup, "warmup", time.Second, "unmeasured load before each window")
	fs.DurationVar(&o.settle, "settle", 5*time.Second, "idle time before the idle RSS is read (after /health 200, and after the last load)")
	if code, ok := parseFlags(fs, args, stdout, stderr); !ok {
		return code
	}
	for _, m := range strings.Split(modes, ",") {
		switch m = strings.TrimSpace(m); m {
		case s3Embedded, s3External:
			o.s3Modes = append(o.s3Modes, m)
		default:
			fmt.Fprintf(stderr, "nodeid-bench ids: --s3 %q: want embedded and/or external\n", m)
			return 2
		}
	}
	for _, s := range strings.Split(batchStr, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(s))
		if err != nil || n < 1 || n > 10000 {
			fmt.Fprintf(stderr, "nodeid-bench ids: --batch %q: want integers in 1..10000\n", s)
			return 2
		}
		o.batches = append(o.batches, n)
	}
	if o.conns < 1 || o.duration <= 0 || o.warmup < 0 || o.settle < 0 {
		fmt.Fprintln(stderr, "nodeid-bench ids: want --conns >= 1, --duration > 0, --warmup and --settle >= 0")
		return 2
	}
	rep, err := ids(ctx, o, args, stderr)
	if rep != nil {
		if eerr := emit(stdout, o.common, rep, func() { printIDs(stdout, rep) }); eerr != nil {
			fmt.Fprintf(stderr, "nodeid-bench: %v\n", eerr)
			return 1
		}
	}
	if err != nil {
		fmt.Fprintf(stderr, "nodeid-bench ids: %v\n", err)
		return 1
	}
	return 0
}

// ids runs the scenario. It returns the report so far with an error when a
// check failed (a duplicate ID, a broker that did not exit cleanly).
func ids(ctx context.Context, o idsOpts, args []string, stderr io.Writer) (*idsReport, error) {
	rep := &idsReport{
		Scenario: "ids", Command: strings.Join(append([]string{"nodeid-bench", "ids"}, args...), " "),
		Started: time.Now().UTC().Format(time.RFC3339), Cores: runtime.NumCPU(), LoadAvg: loadAvg(),
		Latency: toMS(o.latency),
	}
	bin := o.brokerBin
	if bin == "" {
		dir, err := os.MkdirTemp("", "nodeid-bench-ids-")
		if err != nil {
			return nil, err
		}
		defer os.RemoveAll(dir)
		bin = filepath.Join(dir, "demo-broker")
		fmt.Fprintln(stderr, "nodeid-bench ids: building demo-broker")
		build := exec.CommandContext(ctx, "go", "build", "-o", bin, "github.com/nodeid/nodeid/cmd/demo-broker")
		if out, err := build.CombinedOutput(); err != nil {
			return nil, fmt.Errorf("go build demo-broker (run from the module, or give --broker-bin): %v\n%s", err, out)
		}
	}
	var errs []error
	for _, mode := range o.s3Modes {
		br, err := idsOneBroker(ctx, o, bin, mode)
		if br != nil {
			rep.Brokers = append(rep.Brokers, *br)
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("%s S3: %w", mode, err))
		}
		if ctx.Err() != nil {
			break
		}
	}
	rep.Targets = idsTargets(rep, o)
	return rep, errors.Join(errs...)
}

func idsTargets(rep *idsReport, o idsOpts) []target {
	var ts []target
	for _, br := range rep.Brokers {
		for _, l := range br.Loads {
			if l.Batch != 10000 {
				continue
			}
			t := target{
				What:   fmt.Sprintf("IDs/s, /ids?n=10000, %d conns (%s S3)", l.Conns, br.S3),
				Target: ">= 2,000,000/s", Measured: thousands(int64(l.IDsPerSec)) + "/s", Met: l.IDsPerSec >= idsTargetPerSec,
			}
			if o.duration < 5*time.Second {
				t.Note = "short window"
			}
			ts = append(ts, t)
		}
		t := target{
			What:   fmt.Sprintf("idle broker RSS (%s S3)", br.S3),
			Target: "<= 40 MB", Measured: fmt.Sprintf("%.1f MB", br.IdleRSSMB), Met: br.IdleRSSMB <= idsTargetRSSMB,
		}
		if br.S3 == s3Embedded {
			t.Note = "includes the embedded gofakes3"
		}
		ts = append(ts, t)
	}
	return ts
}

// idsOneBroker starts one broker, measures it idle and under each load, and
// stops it.
func idsOneBroker(ctx context.Context, o idsOpts, bin, mode string) (*idsBroker, error) {
	br := &idsBroker{S3: mode, ExitCode: -1}
	home, err := os.MkdirTemp("", "nodeid-bench-ids-home-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(home)
	env := []string{
		"HOME=" + home, "PATH=" + os.Getenv("PATH"),
		"AWS_CONFIG_FILE=" + filepath.Join(home, "none"), "AWS_SHARED_CREDENTIALS_FILE=" + filepath.Join(home, "none"),
		"AWS_EC2_METADATA_DISABLED=true",
	}
	args := []string{"serve", "--http-addr", "127.0.0.1:0", "--task-id", "nodeid-bench-ids-" + mode + "-" + randomHex(4)}
	switch mode {
	case s3Embedded:
		addr, err := freeAddr()
		if err != nil {
			return nil, err
		}
		args = append(args, "--embedded-s3", addr)
		env = append(env, "AWS_ACCESS_KEY_ID="+s3fake.AccessKeyID, "AWS_SECRET_ACCESS_KEY="+s3fake.SecretAccessKey)
		br.S3Detail = "gofakes3 in the broker process (--embedded-s3)"
	case s3External:
		b, err := startBackend(ctx, o.common, false)
		if err != nil {
			return nil, err
		}
		defer b.close()
		args = append(args, "--s3-endpoint", b.proxy.URL(), "--s3-path-style", "--bucket", b.bucket,
			"--prefix", b.prefix("ids"), "--region", b.c.region)
		env = append(env, "AWS_ACCESS_KEY_ID="+b.c.accessKey, "AWS_SECRET_ACCESS_KEY="+b.c.secretKey)
		where := "gofakes3 in the nodeid-bench process"
		if b.fake == nil {
			where = b.c.endpoint
		}
		br.S3Detail = fmt.Sprintf("%s, through the latency proxy (%v round trip)", where, o.latency)
	}
	br.Args = strings.Join(args, " ")

	p, err := startBrokerProc(bin, args, env)
	if err != nil {
		return br, err
	}
	defer p.kill()
	started := time.Now()
	if err := p.waitHealthy(ctx, 60*time.Second); err != nil {
		return br, err
	}
	br.StartToHealthy = toMS(time.Since(started))

	var ledger idLedger
	c := newIDsClient(p.url, o.conns)
	defer c.close()
	// One request to learn the node ID and version, then idle.
	if l := c.load(ctx, p, 1, 1, 0, &ledger); l.Errors > 0 {
		return br, fmt.Errorf("first /ids request: %s", l.FirstFail)
	}
	br.NodeID, br.Version = ledger.node, ledger.version
	if err := ctxtime.Sleep(ctx, o.settle); err != nil {
		return br, err
	}
	br.IdleRSSMB = p.rssMB()
	br.IdleRSSAnonMB, br.IdleRSSFileMB = p.statusMB("RssAnon"), p.statusMB("RssFile")
	if m, err := p.goMetrics(); err == nil {
		br.IdleHeapInuseMB = roundMB(m["go_memstats_heap_inuse_bytes"])
		br.IdleGoSysMB = roundMB(m["go_memstats_sys_bytes"])
		br.IdleGoroutines = int(m["go_goroutines"])
	}

	var failed error
	for _, batch := range o.batches {
		if o.warmup > 0 {
			c.load(ctx, p, batch, o.conns, o.warmup, &ledger)
		}
		l := c.load(ctx, p, batch, o.conns, o.duration, &ledger)
		br.Loads = append(br.Loads, l)
		if l.Errors > 0 && failed == nil {
			failed = fmt.Errorf("n=%d: %d failed requests, the first: %s", batch, l.Errors, l.FirstFail)
		}
		if ctx.Err() != nil {
			return br, ctx.Err()
		}
	}
	if ctxtime.Sleep(ctx, o.settle) == nil {
		br.AfterRSSMB = p.rssMB()
	}
	br.PeakRSSMB = p.statusMB("VmHWM")
	br.CheckedIDs = ledger.count
	dup := ledger.check()
	br.Unique = dup == nil
	br.ExitCode = p.stop(15 * time.Second)
	var errs []error
	if failed != nil {
		errs = append(errs, failed)
	}
	if dup != nil {
		errs = append(errs, fmt.Errorf("DUPLICATE ID: %w", dup))
	}
	if br.ExitCode != 0 {
		errs = append(errs, fmt.Errorf("broker exited %d after SIGTERM:\n%s", br.ExitCode, p.tail()))
	}
	return br, errors.Join(errs...)
}

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

// brokerProc is a demo-broker serve process.
type brokerProc struct {
	cmd    *exec.Cmd
	url    string // http://addr, once listening
	exited chan struct{}
	code   int

	mu    sync.Mutex
	lines []string // the last lines of its stderr
}

// startBrokerProc starts the broker and waits for its "http listening" log line.
func startBrokerProc(bin string, args, env []string) (*brokerProc, error) {
	cmd := exec.Command(bin, args...)
	cmd.Env = env
	cmd.Stdout = io.Discard
	stderr, err := cmd.StderrPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	p := &brokerProc{cmd: cmd, exited: make(chan struct{}), code: -1}
	addr := make(chan string, 1)
	scanned := make(chan struct{})
	go func() {
		defer close(scanned)
		sc := bufio.NewScanner(stderr)
		sc.Buffer(make([]byte, 64<<10), 1<<20)
		for sc.Scan() {
			line := sc.Text()
			p.mu.Lock()
			p.lines = append(p.lines, line)
			if len(p.lines) > 50 {
				p.lines = p.lines[1:]
			}
			p.mu.Unlock()
			if strings.Contains(line, `"msg":"http listening"`) {
				var v struct{ Addr string }
				if json.Unmarshal([]byte(line), &v) == nil {
					select {
					case addr <- v.Addr:
					default:
					}
				}
			}
		}
	}()
	go func() {
		<-scanned
		err := cmd.Wait()
		var ee *exec.ExitError
		switch {
		case err == nil:
			p.code = 0
		case errors.As(err, &ee):
			p.code = ee.ExitCode()
		}
		close(p.exited)
	}()
	select {
	case a := <-addr:
		p.url = "http://" + a
		return p, nil
	case <-p.exited:
		return nil, fmt.Errorf("demo-broker exited %d before listening:\n%s", p.code, p.tail())
	case <-time.After(30 * time.Second):
		p.kill()
		return nil, fmt.Errorf("demo-broker did not listen within 30 s:\n%s", p.tail())
	}
}

func (p *brokerProc) tail() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return strings.Join(p.lines, "\n")
}

// kill kills the process unless it has exited.
func (p *brokerProc) kill() {
	select {
	case <-p.exited:
	default:
		_ = p.cmd.Process.Kill()
		<-p.exited
	}
}

// stop sends SIGTERM and returns the exit code (-1 if it had to be killed).
func (p *brokerProc) stop(timeout time.Duration) int {
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.exited:
		return p.code
	case <-time.After(timeout):
		p.kill()
		return -1
	}
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
		case <-p.exited:
			return fmt.Errorf("demo-broker exited %d before /health 200:\n%s", p.code, p.tail())
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
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", p.cmd.Process.Pid))
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
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", p.cmd.Process.Pid))
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

// idsClient drives GET /ids over keep-alive connections.
type idsClient struct {
	base string
	hc   *http.Client
}

func newIDsClient(base string, conns int) *idsClient {
	tr := &http.Transport{
		MaxIdleConns: conns, MaxIdleConnsPerHost: conns, MaxConnsPerHost: conns,
		IdleConnTimeout: time.Minute, DisableCompression: true,
	}
	return &idsClient{base: base, hc: &http.Client{Transport: tr, Timeout: 30 * time.Second}}
}

func (c *idsClient) close() { c.hc.CloseIdleConnections() }

// load runs conns clients asking for batch IDs per request for d (one request
// each when d is 0), checks every response and adds its IDs to ledger.
func (c *idsClient) load(ctx context.Context, p *brokerProc, batch, conns int, d time.Duration, ledger *idLedger) idsLoad {
	l := idsLoad{Batch: batch, Conns: conns}
	url := fmt.Sprintf("%s/ids?n=%d", c.base, batch)
	var (
		stop     atomic.Bool
		wg       sync.WaitGroup
		mu       sync.Mutex
		lats     []time.Duration
		bodySize int64
		rss      []float64
	)
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	cpu0, self0, t0 := p.cpuTime(), selfCPU(), time.Now()
	for range conns {
		wg.Go(func() {
			var (
				buf  []byte
				runs []idRun
				my   []time.Duration
				n    int64
				errs int
				fail string
				size int64
			)
			req, _ := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
			for !stop.Load() {
				start := time.Now()
				var (
					dec decoded
					err error
				)
				buf, dec, err = c.get(req, buf, runs[:0], batch)
				runs = dec.runs
				if ctx.Err() != nil {
					break
				}
				my = append(my, time.Since(start))
				if err == nil {
					err = ledger.add(dec)
				}
				if err != nil {
					errs++
					if fail == "" {
						fail = err.Error()
					}
				} else {
					n += int64(dec.n)
					size += int64(len(buf))
				}
				if d == 0 {
					break
				}
			}
			mu.Lock()
			lats = append(lats, my...)
			l.IDs += n
			bodySize += size
			l.Errors += errs
			if l.FirstFail == "" {
				l.FirstFail = fail
			}
			mu.Unlock()
		})
	}
	if d > 0 {
		tick := time.NewTicker(100 * time.Millisecond)
		end := time.NewTimer(d)
	sample:
		for {
			select {
			case <-tick.C:
				rss = append(rss, p.rssMB())
			case <-end.C:
				break sample
			case <-ctx.Done():
				break sample
			}
		}
		tick.Stop()
		stop.Store(true)
	}
	wg.Wait()
	// The window ends with the last request: each client finishes the one it
	// was sending when told to stop, and its IDs count.
	el := time.Since(t0)
	cpu1, self1 := p.cpuTime(), selfCPU()
	rss = append(rss, p.rssMB())
	l.Requests = len(lats)
	l.Duration = toMS(el)
	l.IDsPerSec = math.Round(float64(l.IDs) / el.Seconds())
	l.RequestsPerSec = math.Round(float64(l.Requests)/el.Seconds()*10) / 10
	if ok := l.Requests - l.Errors; ok > 0 {
		l.BodyBytes = int(bodySize / int64(ok))
	}
	slices.Sort(lats)
	if len(lats) > 0 {
		rank := func(q float64) float64 {
			i := max(0, min(int(math.Ceil(q*float64(len(lats))))-1, len(lats)-1))
			return roundMs(lats[i])
		}
		l.LatencyP50, l.LatencyP99, l.LatencyMax = rank(0.5), rank(0.99), roundMs(lats[len(lats)-1])
	}
	l.RSSMaxMB, l.RSSEndMB = slices.Max(rss), rss[len(rss)-1]
	l.BrokerCores = math.Round((cpu1-cpu0).Seconds()/el.Seconds()*100) / 100
	l.BenchCores = math.Round((self1-self0).Seconds()/el.Seconds()*100) / 100
	return l
}

// roundMB is bytes in MB (2^20), to 0.1 MB.
func roundMB(bytes float64) float64 { return math.Round(bytes/(1<<20)*10) / 10 }

// roundMs is d in ms to the microsecond.
func roundMs(d time.Duration) float64 { return math.Round(float64(d)/1e3) / 1e3 }

// get sends one request, reads the body into buf and decodes it, its runs of
// consecutive IDs appended to runs.
func (c *idsClient) get(req *http.Request, buf []byte, runs []idRun, want int) ([]byte, decoded, error) {
	d := decoded{runs: runs}
	resp, err := c.hc.Do(req)
	if err != nil {
		return buf, d, err
	}
	defer resp.Body.Close()
	buf, err = readBody(resp, buf)
	if err != nil {
		return buf, d, err
	}
	if resp.StatusCode != http.StatusOK {
		return buf, d, fmt.Errorf("%s: %s", resp.Status, bytes.TrimSpace(buf))
	}
	d, err = decodeIDs(buf, runs)
	if err != nil {
		return buf, decoded{runs: runs}, err
	}
	if d.n != want {
		return buf, d, fmt.Errorf("asked for %d IDs, got %d", want, d.n)
	}
	return buf, d, nil
}

// readBody reads the response body into buf, reusing its memory.
func readBody(resp *http.Response, buf []byte) ([]byte, error) {
	buf = buf[:0]
	if n := resp.ContentLength; n >= 0 {
		buf = slices.Grow(buf, int(n))[:n]
		_, err := io.ReadFull(resp.Body, buf)
		return buf, err
	}
	w := bytes.NewBuffer(buf)
	_, err := w.ReadFrom(resp.Body)
	return w.Bytes(), err
}

// idRun is a run of consecutive IDs, first to last.
type idRun struct{ first, last int64 }

// decoded is a /ids response body: its node, version and IDs, as runs.
type decoded struct {
	node    int
	version int64
	n       int
	runs    []idRun
}

// decodeIDs reads a /ids body, {"nodeId":N,"version":V,"ids":["...",...]},
// with a scanner for that exact shape (the one the broker writes), falling
// back to encoding/json for any other spelling. IDs must increase within a
// response; consecutive ones are merged into runs, appended to runs.
func decodeIDs(b []byte, runs []idRun) (decoded, error) {
	if d, ok := scanIDs(b, runs); ok {
		return d, nil
	}
	var v struct {
		NodeID  *int     `json:"nodeId"`
		Version *int64   `json:"version"`
		IDs     []string `json:"ids"`
	}
	if err := json.Unmarshal(b, &v); err != nil {
		return decoded{}, fmt.Errorf("bad /ids body: %v: %.200s", err, b)
	}
	if v.NodeID == nil || v.Version == nil || v.IDs == nil {
		return decoded{}, fmt.Errorf("bad /ids body: nodeId, version or ids missing: %.200s", b)
	}
	d := decoded{node: *v.NodeID, version: *v.Version, runs: runs}
	for _, s := range v.IDs {
		id, err := strconv.ParseInt(s, 10, 64)
		if err != nil || id < 0 || strconv.FormatInt(id, 10) != s {
			return decoded{}, fmt.Errorf("bad ID %q in /ids body", s)
		}
		if err := d.add(id); err != nil {
			return decoded{}, err
		}
	}
	return d, nil
}

func (d *decoded) add(id int64) error {
	d.n++
	if k := len(d.runs) - 1; k >= 0 && d.n > 1 {
		last := d.runs[k].last
		switch {
		case id == last+1:
			d.runs[k].last = id
			return nil
		case id <= last:
			return fmt.Errorf("IDs not increasing within a response: %d after %d", id, last)
		}
	}
	d.runs = append(d.runs, idRun{id, id})
	return nil
}

// scanIDs is the fast path of decodeIDs; ok is false when b is not exactly
// in the broker's shape (and then d is to be ignored).
func scanIDs(b []byte, runs []idRun) (d decoded, ok bool) {
	d.runs = runs
	rest, ok := bytes.CutPrefix(b, []byte(`{"nodeId":`))
	if !ok {
		return d, false
	}
	node, rest, ok := scanInt(rest)
	if !ok {
		return d, false
	}
	d.node = int(node)
	if rest, ok = bytes.CutPrefix(rest, []byte(`,"version":`)); !ok {
		return d, false
	}
	if d.version, rest, ok = scanInt(rest); !ok {
		return d, false
	}
	if rest, ok = bytes.CutPrefix(rest, []byte(`,"ids":[`)); !ok {
		return d, false
	}
	for len(rest) > 0 && rest[0] == '"' {
		var id int64
		if id, rest, ok = scanInt(rest[1:]); !ok || len(rest) < 2 || rest[0] != '"' {
			return d, false
		}
		if d.add(id) != nil {
			return d, false // let the slow path say what is wrong
		}
		rest = rest[1:]
		if rest[0] == ',' && len(rest) > 1 && rest[1] == '"' {
			rest = rest[1:]
		}
	}
	rest, ok = bytes.CutPrefix(rest, []byte("]}"))
	return d, ok && len(bytes.TrimSpace(rest)) == 0
}

// scanInt reads a non-negative decimal integer in canonical form (no leading
// zero) at the start of b.
func scanInt(b []byte) (int64, []byte, bool) {
	i := 0
	var n uint64
	for i < len(b) && b[i] >= '0' && b[i] <= '9' {
		n = n*10 + uint64(b[i]-'0')
		i++
		if i > 19 {
			return 0, b, false
		}
	}
	if i == 0 || (b[0] == '0' && i > 1) || n > math.MaxInt64 {
		return 0, b, false
	}
	return int64(n), b[i:], true
}

// idLedger collects the runs of IDs of one broker's responses, to check at the
// end that no ID was issued twice: every response's IDs increase, and no two
// runs overlap.
type idLedger struct {
	mu      sync.Mutex
	runs    []idRun
	count   int64
	node    int
	version int64
	seen    bool
}

// add records the IDs of one response, after checking its node and version
// against the first response's.
func (l *idLedger) add(d decoded) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if !l.seen {
		l.node, l.version, l.seen = d.node, d.version, true
	} else if d.node != l.node || d.version != l.version {
		return fmt.Errorf("node %d version %d, then node %d version %d", l.node, l.version, d.node, d.version)
	}
	l.runs = append(l.runs, d.runs...)
	for _, r := range d.runs {
		l.count += r.last - r.first + 1
	}
	return nil
}

// check sorts the runs and returns an error naming an ID issued twice.
func (l *idLedger) check() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	slices.SortFunc(l.runs, func(a, b idRun) int {
		switch {
		case a.first < b.first:
			return -1
		case a.first > b.first:
			return 1
		}
		return 0
	})
	for i := 1; i < len(l.runs); i++ {
		if p, r := l.runs[i-1], l.runs[i]; r.first <= p.last {
			return fmt.Errorf("%d was issued twice (runs %d..%d and %d..%d)", r.first, p.first, p.last, r.first, r.last)
		}
	}
	return nil
}

func printIDs(w io.Writer, rep *idsReport) {
	fmt.Fprintf(w, "ids: GET /ids?n=K through demo-broker serve, %d cores, load average at start %s\n", rep.Cores, rep.LoadAvg)
	for _, br := range rep.Brokers {
		fmt.Fprintf(w, "\nbroker with %s S3: %s\n", br.S3, br.S3Detail)
		fmt.Fprintf(w, "  node %d version %d, /health 200 after %.0f ms; idle RSS %.1f MB: %.1f MB anonymous, %.1f MB file-backed (Go heap in use %.1f MB, from the OS %.1f MB, %d goroutines)\n",
			br.NodeID, br.Version, float64(br.StartToHealthy), br.IdleRSSMB, br.IdleRSSAnonMB, br.IdleRSSFileMB,
			br.IdleHeapInuseMB, br.IdleGoSysMB, br.IdleGoroutines)
		tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
		fmt.Fprintln(tw, "K\tconns\twindow s\tIDs/s\treq/s\tp50 ms\tp99 ms\tmax ms\tbody KB\tRSS max MB\tRSS end MB\tbroker cores\tbench cores\terrors\t")
		for _, l := range br.Loads {
			fmt.Fprintf(tw, "%d\t%d\t%.1f\t%s\t%.0f\t%.3f\t%.3f\t%.3f\t%.1f\t%.1f\t%.1f\t%.2f\t%.2f\t%d\t\n",
				l.Batch, l.Conns, float64(l.Duration)/1000, thousands(int64(l.IDsPerSec)), l.RequestsPerSec,
				l.LatencyP50, l.LatencyP99, l.LatencyMax, float64(l.BodyBytes)/1024, l.RSSMaxMB, l.RSSEndMB,
				l.BrokerCores, l.BenchCores, l.Errors)
		}
		_ = tw.Flush()
		uniq := "all distinct"
		if !br.Unique {
			uniq = "DUPLICATES"
		}
		fmt.Fprintf(w, "  after the loads: RSS %.1f MB idle, %.1f MB peak (VmHWM); %s IDs checked: %s; exit %d after SIGTERM\n",
			br.AfterRSSMB, br.PeakRSSMB, thousands(br.CheckedIDs), uniq, br.ExitCode)
	}
	printTargets(w, rep.Targets)
}

// thousands formats n with commas.
func thousands(n int64) string {
	s := strconv.FormatInt(n, 10)
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(s, "-")
	var b strings.Builder
	for i, c := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(c)
	}
	if neg {
		return "-" + b.String()
	}
	return b.String()
}
