package main

// The ids scenario's command: its flags, the run over the S3 set-ups, and one
// broker's sequence of start, idle measurement, loads and stop. The load
// generator is in ids_load.go, the broker process and its measurements in
// ids_proc.go, the report in ids_report.go.

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
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

func runIDs(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	var (
		o               idsOpts
		modes, batchStr string
	)
	fs := flag.NewFlagSet("nodeid-bench ids", flag.ContinueOnError)
	addCommon(fs, &o.common)
	fs.StringVar(&o.brokerBin, "broker-bin", "", "nodeid-broker binary to run (empty: go build ./cmd/nodeid-broker into a temporary directory; needs the module as working directory)")
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
	if o.store != "s3" {
		fmt.Fprintf(stderr, "nodeid-bench ids: --store %q: the ids scenario runs brokers on S3 only\n", o.store)
		return 2
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
		bin = filepath.Join(dir, "nodeid-broker")
		fmt.Fprintln(stderr, "nodeid-bench ids: building nodeid-broker")
		build := exec.CommandContext(ctx, "go", "build", "-o", bin, "github.com/nodeid/nodeid/cmd/nodeid-broker")
		if out, err := build.CombinedOutput(); err != nil {
			return nil, fmt.Errorf("go build nodeid-broker (run from the module, or give --broker-bin): %v\n%s", err, out)
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
