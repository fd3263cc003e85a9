package main

// The outage scenario: a fleet of real nodeid-broker serve processes loses
// its store for D seconds and gets it back; how many brokers exit, how far
// the IDs per second drop, how long after the store's return every broker
// serves again, and what the recovery costs in requests. Each case runs
// twice on one set-up: "before" (--loss-grace 0: a fence that falls is
// final) and "after" (the default grace, a lease: jeopardy, then recovery).

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"text/tabwriter"
	"time"

	"github.com/nodeid/nodeid/internal/testkit/etcdtest"
	"github.com/nodeid/nodeid/test/faults"
)

// The outages (--faults): S3's through a fault proxy in front of each
// broker, etcd's on a three-member cluster of the run's own.
const (
	outageBlackhole  = "blackhole"   // S3: every request held unanswered
	outage503        = "503"         // S3: every request answered 503 ServiceUnavailable
	outageLeaderKill = "leader-kill" // etcd: kill -9 the leader; it starts again after D
	outageQuorum     = "quorum-loss" // etcd: kill -9 the leader and a follower; both start again after D
)

type outageOpts struct {
	common
	brokerBin     string
	brokers       int
	downs         []time.Duration
	kinds         []string
	leaseDuration time.Duration
	renewInterval time.Duration
	idsN          int
	baseline      time.Duration
}

// outageCase is one measured outage.
type outageCase struct {
	Fault string `json:"fault"`
	Down  ms     `json:"downMs"`
	// Grace is the brokers' --loss-grace: "0" (before) or "default" (after,
	// a lease).
	Grace string `json:"grace"`
	// StoreBack is when the store answered again, from the fault's start:
	// the heal on S3, the new leader after a leader kill, the members
	// healthy again after a quorum loss.
	StoreBack ms `json:"storeBackMs"`
	// Exited is how many brokers exited (the fleet's restarts, on ECS), up
	// to a lease after every broker served again.
	Exited    int   `json:"exited"`
	ExitCodes []int `json:"exitCodes,omitempty"`
	// Serving is the time from the store's return until every broker that
	// had not exited answered /health 200; -1 when not within the wait.
	Serving ms `json:"servingAfterReturnMs"`
	// IDs per second before the fault (BaselineIDs), and from the fault's
	// start until every broker served again (DipIDs); the machine's other
	// work makes both noisy.
	BaselineIDs float64 `json:"baselineIdsPerSec"`
	DipIDs      float64 `json:"dipIdsPerSec"`
	// NoIDs is how long the fleet issued no ID from the fault's start until
	// every broker served again: the 100 ms windows with none.
	NoIDs ms `json:"noIdsMs"`
	// Requests are the S3 requests the brokers sent from the store's return
	// until every broker served again (none counted on etcd: its gRPC is
	// not read by a proxy here).
	Requests int `json:"recoveryRequests"`
}

type outageReport struct {
	Scenario      string       `json:"scenario"`
	Server        string       `json:"server"`
	Command       string       `json:"command"`
	Started       string       `json:"started"`
	Brokers       int          `json:"brokers"`
	LeaseDuration ms           `json:"leaseDurationMs"`
	RenewInterval ms           `json:"renewIntervalMs"`
	Cases         []outageCase `json:"cases"`
}

func runOutage(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	var (
		o            outageOpts
		downs, kinds string
	)
	fs := flag.NewFlagSet("nodeid-bench outage", flag.ContinueOnError)
	addCommon(fs, &o.common)
	fs.StringVar(&o.brokerBin, "broker-bin", "", "nodeid-broker binary to run (empty: go build ./cmd/nodeid-broker into a temporary directory)")
	fs.IntVar(&o.brokers, "brokers", 3, "brokers (N), each holding one of N node IDs")
	fs.StringVar(&downs, "down", "1s,3s,10s,30s", "outage lengths (D), comma-separated")
	fs.StringVar(&kinds, "faults", "", "outages, comma-separated (default: blackhole,503 on s3; leader-kill,quorum-loss on etcd)")
	fs.DurationVar(&o.leaseDuration, "lease-duration", 3*time.Second, "the brokers' --lease-duration")
	fs.DurationVar(&o.renewInterval, "renew-interval", time.Second, "the brokers' --renew-interval")
	fs.IntVar(&o.idsN, "ids-n", 100, "IDs per /ids request of each broker's client")
	fs.DurationVar(&o.baseline, "baseline", 2*time.Second, "steady load measured before each outage")
	if code, ok := parseFlags(fs, args, stdout, stderr); !ok {
		return code
	}
	for _, s := range strings.Split(downs, ",") {
		d, err := time.ParseDuration(strings.TrimSpace(s))
		if err != nil || d <= 0 {
			fmt.Fprintf(stderr, "nodeid-bench outage: --down %q: want positive durations\n", s)
			return 2
		}
		o.downs = append(o.downs, d)
	}
	valid := []string{outageBlackhole, outage503}
	if o.store == "etcd" {
		valid = []string{outageLeaderKill, outageQuorum}
	}
	if kinds == "" {
		o.kinds = valid
	}
	for _, k := range strings.Split(kinds, ",") {
		if k = strings.TrimSpace(k); k == "" {
			continue
		}
		if !slices.Contains(valid, k) {
			fmt.Fprintf(stderr, "nodeid-bench outage: --faults %q: want %s on --store %s\n", k, strings.Join(valid, " or "), o.store)
			return 2
		}
		o.kinds = append(o.kinds, k)
	}
	rep, err := outageRun(ctx, o, args, stderr)
	if err != nil {
		fmt.Fprintf(stderr, "nodeid-bench outage: %v\n", err)
		return 1
	}
	if err := emit(stdout, o.common, rep, func() { printOutage(stdout, rep) }); err != nil {
		fmt.Fprintf(stderr, "nodeid-bench: %v\n", err)
		return 1
	}
	return 0
}

// outageSetup is the store of a run: S3 (MinIO) behind a fault proxy per
// broker, or a three-member etcd cluster.
type outageSetup struct {
	o       outageOpts
	bin     string
	backend *backend          // S3
	cluster *etcdtest.Cluster // etcd
	dir     string
}

func outageRun(ctx context.Context, o outageOpts, args []string, stderr io.Writer) (*outageReport, error) {
	dir, err := os.MkdirTemp("", "nodeid-bench-outage-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	s := &outageSetup{o: o, bin: o.brokerBin, dir: dir}
	if s.bin == "" {
		s.bin = filepath.Join(dir, "nodeid-broker")
		fmt.Fprintln(stderr, "nodeid-bench outage: building nodeid-broker")
		if out, err := exec.CommandContext(ctx, "go", "build", "-o", s.bin, "github.com/nodeid/nodeid/cmd/nodeid-broker").CombinedOutput(); err != nil {
			return nil, fmt.Errorf("go build nodeid-broker (run from the module, or give --broker-bin): %v\n%s", err, out)
		}
	}
	rep := &outageReport{Scenario: "outage", Command: strings.Join(append([]string{"nodeid-bench", "outage"}, args...), " "),
		Started: time.Now().UTC().Format(time.RFC3339), Brokers: o.brokers,
		LeaseDuration: toMS(o.leaseDuration), RenewInterval: toMS(o.renewInterval)}
	switch o.store {
	case "etcd":
		bin := etcdtest.Binary()
		if bin == "" {
			return nil, errors.New("--store etcd needs the pinned etcd server: bash test/etcd/install.sh")
		}
		if s.cluster, err = etcdtest.LaunchCluster(bin, filepath.Join(dir, "etcd"), 3); err != nil {
			return nil, err
		}
		defer s.cluster.Stop()
		rep.Server = "etcd, three members on 127.0.0.1 (the pinned server of test/etcd/install.sh)"
	default:
		if o.endpoint == "" {
			return nil, errors.New("--store s3 needs --s3-endpoint (MinIO: the brokers are processes of their own)")
		}
		if s.backend, err = startBackend(ctx, o.common, false); err != nil {
			return nil, err
		}
		defer s.backend.close()
		rep.Server = s.backend.name()
	}
	for _, kind := range o.kinds {
		for _, d := range o.downs {
			for _, grace := range []string{"0", "default"} {
				c, err := s.runCase(ctx, kind, d, grace)
				if err != nil {
					return rep, fmt.Errorf("%s for %v, grace %s: %w", kind, d, grace, err)
				}
				fmt.Fprintf(stderr, "nodeid-bench outage: %s for %v, grace %s: %d exited, serving %v after the return\n",
					kind, d, grace, c.Exited, c.Serving)
				rep.Cases = append(rep.Cases, c)
			}
		}
	}
	return rep, nil
}

// outageBroker is one broker of a case, its proxy (S3) and its client's
// counts.
type outageBroker struct {
	p       *brokerProc
	proxy   *faults.Proxy // S3 only
	healthy atomic.Bool
}

// runCase runs one outage on a fresh fleet.
func (s *outageSetup) runCase(ctx context.Context, kind string, down time.Duration, grace string) (c outageCase, rerr error) {
	o := s.o
	c = outageCase{Fault: kind, Down: toMS(down), Grace: grace}
	prefix := fmt.Sprintf("outage-%s/%s-%v-%s/", randomHex(3), kind, down, grace)
	var brokers []*outageBroker
	defer func() {
		for _, b := range brokers {
			b.p.stop(5 * time.Second)
			if b.proxy != nil {
				_ = b.proxy.Close()
			}
		}
	}()
	for i := range o.brokers {
		b, err := s.startBroker(i, prefix, grace)
		if err != nil {
			return c, err
		}
		brokers = append(brokers, b)
	}
	for _, b := range brokers {
		if err := b.p.waitHealthy(ctx, 30*time.Second); err != nil {
			return c, err
		}
	}
	lctx, stopLoad := context.WithCancel(ctx)
	defer stopLoad()
	meter := newIDMeter()
	var wg sync.WaitGroup
	for _, b := range brokers {
		wg.Go(func() { meter.load(lctx, b.p.url, o.idsN) })
		wg.Go(func() { watchHealth(lctx, b) })
	}
	defer wg.Wait()
	defer stopLoad()
	time.Sleep(o.baseline)
	c.BaselineIDs = meter.rate(time.Now().Add(-o.baseline), time.Now())

	start := time.Now()
	back, restarted, err := s.fault(kind, down, brokers)
	if err != nil {
		return c, err
	}
	defer func() {
		if err := <-restarted; err != nil && rerr == nil {
			rerr = err
		}
	}()
	c.StoreBack = toMS(back.Sub(start))
	before := s.requests(brokers)
	servedAt, ok := waitServing(brokers, o.leaseDuration*2+10*time.Second)
	c.Serving = -1
	if ok {
		c.Serving = toMS(max(0, servedAt.Sub(back)))
	}
	c.Requests = s.requests(brokers) - before
	end := servedAt
	if end.Before(back) {
		end = back
	}
	c.DipIDs = meter.rate(start, end)
	c.NoIDs = toMS(meter.idle(start, end, 100*time.Millisecond))
	// A broker serving at the return whose renewal round was already
	// failing may still lose its claim: count the exits a lease later.
	time.Sleep(o.leaseDuration)
	for _, b := range brokers {
		select {
		case <-b.p.Exited():
			c.Exited++
			c.ExitCodes = append(c.ExitCodes, b.p.ExitCode())
		default:
		}
	}
	return c, nil
}

// startBroker starts broker i of a case on prefix.
func (s *outageSetup) startBroker(i int, prefix, grace string) (*outageBroker, error) {
	o := s.o
	b := &outageBroker{}
	args := []string{"serve", "--http-addr", "127.0.0.1:0", "--prefix", prefix,
		"--cluster-size", strconv.Itoa(o.brokers),
		"--lease-duration", o.leaseDuration.String(), "--renew-interval", o.renewInterval.String(),
		"--task-id", fmt.Sprintf("outage-%d", i), "--drain-delay", "0s", "--log-level", "info"}
	if grace == "0" {
		args = append(args, "--loss-grace", "0s")
	}
	env := []string{"HOME=" + s.dir, "AWS_EC2_METADATA_DISABLED=true"}
	if s.cluster != nil {
		args = append(args, "--store", "etcd", "--etcd-endpoints", strings.Join(s.cluster.Endpoints(), ","))
	} else {
		px, err := faults.NewProxy(s.backend.upstream, o.seed+uint64(i))
		if err != nil {
			return nil, err
		}
		b.proxy = px
		args = append(args, "--bucket", s.backend.bucket, "--region", o.region, "--s3-endpoint", px.URL(), "--s3-path-style")
		env = append(env, "AWS_ACCESS_KEY_ID="+o.accessKey, "AWS_SECRET_ACCESS_KEY="+o.secretKey)
	}
	p, err := startBrokerProc(s.bin, args, env)
	if err != nil {
		if b.proxy != nil {
			_ = b.proxy.Close()
		}
		return nil, err
	}
	b.p = p
	return b, nil
}

// fault makes the store unavailable as kind says for down and returns when
// it answered again, and a channel that yields the outcome of starting the
// killed etcd members again (a leader kill's member restarts after down,
// while the fleet recovers on the new leader).
func (s *outageSetup) fault(kind string, down time.Duration, brokers []*outageBroker) (time.Time, <-chan error, error) {
	done := make(chan error, 1)
	switch kind {
	case outageBlackhole, outage503:
		f := faults.Fault{Action: faults.BlackHole}
		if kind == outage503 {
			f.Action = faults.Error503
		}
		for _, b := range brokers {
			if err := b.proxy.Inject(f); err != nil {
				return time.Time{}, nil, err
			}
		}
		time.Sleep(down)
		for _, b := range brokers {
			if err := b.proxy.Heal(); err != nil {
				return time.Time{}, nil, err
			}
		}
		done <- nil
		return time.Now(), done, nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), down+time.Minute)
	defer cancel()
	c := s.cluster
	lead, err := c.WaitLeader(ctx)
	if err != nil {
		return time.Time{}, nil, err
	}
	killed := time.Now()
	if kind == outageLeaderKill {
		c.Kill(syscall.SIGKILL, lead)
		_, err := c.WaitLeader(ctx)
		back := time.Now()
		go func() {
			time.Sleep(time.Until(killed.Add(down)))
			done <- c.Start(lead)
		}()
		return back, done, err
	}
	other := (lead + 1) % len(c.Members)
	c.Kill(syscall.SIGKILL, lead, other)
	time.Sleep(down)
	done <- nil
	return time.Now(), done, c.Start(lead, other)
}

// requests returns the S3 requests the brokers' proxies have seen (0 on
// etcd).
func (s *outageSetup) requests(brokers []*outageBroker) int {
	n := 0
	for _, b := range brokers {
		if b.proxy == nil {
			continue
		}
		for _, v := range b.proxy.Counts() {
			n += v
		}
	}
	return n
}

// watchHealth polls b's /health every 20 ms until ctx ends.
func watchHealth(ctx context.Context, b *outageBroker) {
	client := &http.Client{Timeout: time.Second}
	for ctx.Err() == nil {
		resp, err := client.Get(b.p.url + "/health")
		ok := err == nil && resp.StatusCode == http.StatusOK
		if err == nil {
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
		}
		b.healthy.Store(ok)
		select {
		case <-ctx.Done():
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// waitServing waits until every broker that has not exited is healthy, for
// at most timeout; it returns when, and false on timeout. A broker's health
// is read every 20 ms, so the time is 20 ms late at most.
func waitServing(brokers []*outageBroker, timeout time.Duration) (time.Time, bool) {
	deadline := time.Now().Add(timeout)
	for time.Now().Before(deadline) {
		all := true
		for _, b := range brokers {
			select {
			case <-b.p.Exited():
				continue
			default:
			}
			if !b.healthy.Load() {
				all = false
			}
		}
		if all {
			return time.Now(), true
		}
		time.Sleep(5 * time.Millisecond)
	}
	return time.Now(), false
}

// idMeter counts the IDs the brokers' clients received, in 10 ms bins.
type idMeter struct {
	t0   time.Time
	mu   sync.Mutex
	bins map[int64]int
}

func newIDMeter() *idMeter { return &idMeter{t0: time.Now(), bins: map[int64]int{}} }

const idBin = 10 * time.Millisecond

// load calls url's /ids?n=n in a loop until ctx ends, counting the IDs of
// each 200 answer.
func (m *idMeter) load(ctx context.Context, url string, n int) {
	client := &http.Client{Timeout: 2 * time.Second}
	target := fmt.Sprintf("%s/ids?n=%d", url, n)
	for ctx.Err() == nil {
		resp, err := client.Get(target)
		if err != nil {
			time.Sleep(10 * time.Millisecond)
			continue
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			time.Sleep(10 * time.Millisecond)
			continue
		}
		m.mu.Lock()
		m.bins[int64(time.Since(m.t0)/idBin)] += n
		m.mu.Unlock()
	}
}

// rate returns the IDs per second received in [from, to).
func (m *idMeter) rate(from, to time.Time) float64 {
	if !to.After(from) {
		return 0
	}
	lo, hi := int64(from.Sub(m.t0)/idBin), int64(to.Sub(m.t0)/idBin)
	m.mu.Lock()
	defer m.mu.Unlock()
	total := 0
	for k, v := range m.bins {
		if k >= lo && k < hi {
			total += v
		}
	}
	return float64(total) / (time.Duration(hi-lo) * idBin).Seconds()
}

// idle returns the total length of the windows of [from, to), window long
// each, in which no ID was received.
func (m *idMeter) idle(from, to time.Time, window time.Duration) time.Duration {
	m.mu.Lock()
	defer m.mu.Unlock()
	per := int64(window / idBin)
	lo, hi := int64(from.Sub(m.t0)/idBin), int64(to.Sub(m.t0)/idBin)
	var idle time.Duration
	for w := lo; w+per <= hi; w += per {
		n := 0
		for k := w; k < w+per; k++ {
			n += m.bins[k]
		}
		if n == 0 {
			idle += window
		}
	}
	return idle
}

func printOutage(w io.Writer, rep *outageReport) {
	fmt.Fprintf(w, "outage on %s: %d brokers, lease %v, renew every %v\n", rep.Server, rep.Brokers,
		time.Duration(float64(rep.LeaseDuration)*float64(time.Millisecond)), time.Duration(float64(rep.RenewInterval)*float64(time.Millisecond)))
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "fault\tD\tgrace\tstore back\texited\tserving after return\tIDs/s before\tIDs/s until serving\tno IDs for\trequests recovering\t")
	for _, c := range rep.Cases {
		serving := "never"
		if c.Serving >= 0 {
			serving = fmt.Sprintf("%.0f ms", float64(c.Serving))
		}
		if c.Exited == rep.Brokers {
			serving = "all exited"
		}
		req := "-"
		if c.Fault == outageBlackhole || c.Fault == outage503 {
			req = strconv.Itoa(c.Requests)
		}
		fmt.Fprintf(tw, "%s\t%v\t%s\t%.0f ms\t%d\t%s\t%.0f\t%.0f\t%.1f s\t%s\t\n", c.Fault,
			time.Duration(float64(c.Down)*float64(time.Millisecond)), c.Grace, float64(c.StoreBack), c.Exited, serving,
			c.BaselineIDs, c.DipIDs, float64(c.NoIDs)/1000, req)
	}
	_ = tw.Flush()
}
