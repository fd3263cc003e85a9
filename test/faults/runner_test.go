//go:build faults

package faults

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	mrand "math/rand/v2"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/nodeid/nodeid/election"
	"github.com/nodeid/nodeid/etcdstore"
	"github.com/nodeid/nodeid/internal/testkit/brokerproc"
	"github.com/nodeid/nodeid/internal/testkit/etcdtest"
	"github.com/nodeid/nodeid/lease"
	"github.com/nodeid/nodeid/lease/storetest"
	"github.com/nodeid/nodeid/node"
	"github.com/nodeid/nodeid/s3store"
)

// scenario is one run: brokers, their settings and a schedule of faults.
type scenario struct {
	name        string
	seed        uint64
	duration    time.Duration // fault phase
	brokers     int           // alive at once
	clusterSize int
	lease       time.Duration
	renew       time.Duration // renew interval
	mutation    string        // NODEID_MUTATION, with the mutant binary
	gossip      bool
	// offsets are the clock offsets brokers draw from (BrokerParams), unless
	// offsetFor is set: then it gives the offset of the n-th broker started.
	offsets   []time.Duration
	offsetFor func(n int) time.Duration
	// clockRates, when set, gives every broker a faulty clock: a rate drawn
	// from it and real-time steps (DrawClockFault), unless clockFor is
	// set: then it gives the clock of the n-th broker started.
	clockRates []float64
	clockFor   func(n int) ClockFault
	// serialStart starts each slot's first broker once the one before it
	// serves (or after 10 s), so that the first started holds the first
	// node ID.
	serialStart bool
	startFaults bool // some replacement brokers start behind a faulty proxy
	etcd        bool // the brokers lease from the suite's etcd (needEtcd), each behind a TCPProxy
	schedule    []Event
	idsEvery    [2]time.Duration // pause between a client's /ids calls
	idsN        int              // IDs per call
	// leaderEvery: /leader is polled on every leaderEvery-th /health tick
	// (50 ms); 0 means leaderPollEveryN.
	leaderEvery int
	// fencedStop ends the fault phase with a KindTermFenced: a holder
	// stopped once its fence fell (the case of seed 629954, issue 25),
	// whatever the schedule drew.
	fencedStop bool
	// lossGrace is the brokers' --loss-grace (jeopardy, issue 24) and
	// History.LossGrace: 0 means a broker whose fence fell never serves
	// again; above 0 it may recover within the grace, and the checks allow
	// it (the broker's default is the lease).
	lossGrace time.Duration
	// script, when set, drives the fault phase instead of the schedule and
	// duration: it runs once the brokers are started, and the fault phase
	// ends when it returns (the outage and storm scenarios).
	script func(r *run)
	// cluster, with etcd: the brokers lease from this etcd cluster instead
	// of the suite's server (scenarios_etcd3_test.go), each behind a
	// TCPProxy per member.
	cluster *etcdtest.Cluster
	// backend, when set, is the store the brokers lease from instead of
	// the suite's MinIO or etcd (Azure Blob on Azurite,
	// scenarios_azblob_test.go): each broker reaches it through a
	// TCPProxy and records its own store calls (--debug-store-history).
	backend storeBackend
	// read, when set, runs the brokers in read mode (keep-alive by reads,
	// scenarios_read_test.go): lease is then the backstop, renew the
	// backstop interval (inReadMode).
	read *readMode
}

// storeBackend is a store of a scenario other than the suite's MinIO and
// etcd, which it neither starts nor restarts: the runner puts a TCPProxy
// (partitions, refused and reset connections) in front of it for each
// broker, and checks the history the brokers record, as on etcd.
type storeBackend interface {
	// Name names the store in messages ("Azure Blob on Azurite").
	Name() string
	// Open makes the run's namespace (a container, a bucket: a fresh one
	// named name, removed when t ends) and returns a store straight to it
	// under prefix, for the poller and the checks.
	Open(t *testing.T, name, prefix string) lease.Store
	// Target is the host:port the brokers' TCP proxies forward to.
	Target() string
	// BrokerArgs are the flags that point a broker at the run's namespace
	// through its proxy at addr (host:port); the runner adds --prefix.
	BrokerArgs(name, addr string) []string
	// BrokerEnv is what a broker's environment adds (its credentials).
	BrokerEnv() []string
}

// brokersRecord reports whether the brokers record their own store calls
// (--debug-store-history) because their proxies cannot read them: a
// TCPProxy, on etcd or a storeBackend.
func (sc *scenario) brokersRecord() bool { return sc.etcd || sc.backend != nil }

func (sc *scenario) renewDeadline() time.Duration { return renewDeadlineFor(sc.lease) }

// faultProxy is what stands between a broker and its store: the S3 Proxy,
// or a TCPProxy in front of etcd.
type faultProxy interface {
	URL() string
	Inject(f Fault) error
	Heal() error
	Held(op Op) int
	SetLatency(latency, jitter time.Duration)
	Counts() map[string]int
	Close() error
}

// run is a scenario being run.
type run struct {
	t     *testing.T
	sc    scenario
	suite *suite
	id    string // random, in bucket names and task IDs
	dir   string // logs and files of the run
	start time.Time
	h     *History

	bucket string
	prefix string              // of the lease objects in the bucket, or in etcd
	store  lease.Store         // straight to MinIO or etcd, for the poller and the checks
	lin    *storetest.Recorder // the store's history, for CheckHistory

	faultCtx    context.Context // ends with the fault phase
	endFaults   context.CancelFunc
	pollCtx     context.Context
	stopPolling context.CancelFunc
	events      sync.WaitGroup
	bg          sync.WaitGroup // pollers, clients, watchers

	mu       sync.Mutex
	landed   []LandedWrite // every write the server applied, from the S3 proxies
	slots    []*proc       // the current broker of each slot
	gens     []int         // generations started per slot
	all      []*proc
	started  int
	stopping bool // no more replacements
	faults   map[string]int
	notes    []string
}

// proc is one broker process.
type proc struct {
	r          *run
	idx        int // in History.Brokers
	name, task string
	slot, gen  int
	params     StartParams
	proxy      faultProxy
	bp         *brokerproc.Proc
	logPath    string
	client     *http.Client

	addr       string // HTTP, once known
	gossipAddr string
	ready      chan struct{} // closed once addr is known (or the process ended)
	exited     chan struct{}
	exitCode   int
	stopClient chan struct{}
	stopOnce   sync.Once

	node    atomic.Int64 // -1 until known
	version atomic.Int64
	healthy atomic.Bool // last /health answer read was 200
	// idsSent is when the last /ids request answered with IDs was sent
	// (ns since the run's start); -1 until one was.
	idsSent atomic.Int64
	// okSent is the same for the last /health request answered 200.
	okSent atomic.Int64
	busy   atomic.Bool // a fault event owns it
	paused atomic.Bool
	fate   atomic.Int32
}

func (r *run) since() time.Duration { return time.Since(r.start) }

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// newRun prepares a run: a folder, a fresh bucket and a store on it.
func newRun(t *testing.T, s *suite, sc scenario) *run {
	t.Helper()
	r := &run{t: t, sc: sc, suite: s, id: randomHex(3), h: &History{LossGrace: sc.lossGrace, RecoveriesReported: true}, faults: map[string]int{}}
	dir, err := os.MkdirTemp("", fmt.Sprintf("nodeid-faults-%s-%d-", sc.name, sc.seed))
	if err != nil {
		t.Fatal(err)
	}
	r.dir = dir
	t.Cleanup(func() {
		if t.Failed() || *flagKeep {
			t.Logf("run folder kept: %s (broker logs, schedule, report)", dir)
			return
		}
		_ = os.RemoveAll(dir)
	})
	r.bucket = fmt.Sprintf("faults-%s-%s", strings.ToLower(sc.name), r.id)
	r.prefix = "nodeid/"
	r.slots = make([]*proc, sc.brokers)
	r.gens = make([]int, sc.brokers)
	if sc.backend != nil {
		r.store = r.recordHistory(sc.backend.Open(t, r.bucket, r.prefix))
		return r
	}
	if sc.etcd {
		r.prefix = r.bucket + "/" // a namespace of the run's own in the suite's etcd
		st, err := etcdstore.New(etcdstore.Config{Endpoints: r.etcdEndpoints(), Prefix: r.prefix, RequestTimeout: 2 * time.Second})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = st.Close() })
		r.store = r.recordHistory(st)
		return r
	}
	cfg := s3store.DefaultConfig()
	cfg.Bucket, cfg.Endpoint, cfg.UsePathStyle, cfg.Region = r.bucket, s.minio.endpoint, true, "us-east-1"
	cfg.AccessKeyID, cfg.SecretAccessKey = s.minio.accessKey, s.minio.secretKey
	cfg.RequestTimeout = 2 * time.Second
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	st, err := s3store.New(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := st.Client().CreateBucket(ctx, &s3.CreateBucketInput{Bucket: aws.String(r.bucket)}); err != nil {
		t.Fatalf("create bucket %s: %v", r.bucket, err)
	}
	r.store = r.recordHistory(st)
	return r
}

// newProxy returns the proxy of a new broker: a TCPProxy to etcd, or the S3
// Proxy to MinIO.
func (r *run) newProxy(slot, gen int) (faultProxy, error) {
	if r.sc.cluster != nil {
		return newClusterProxy(r.sc.cluster)
	}
	if r.sc.backend != nil {
		return NewTCPProxy(r.sc.backend.Target())
	}
	if r.sc.etcd {
		return NewTCPProxy(r.suite.etcd.Endpoint)
	}
	px, err := NewProxy(r.suite.minio.endpoint, r.sc.seed^uint64(slot)<<40^uint64(gen)<<20^0xfa17)
	if err == nil {
		r.recordProxy(px, slot, gen)
		px.ObserveWrites(func(w LandedWrite) {
			r.mu.Lock()
			r.landed = append(r.landed, w)
			r.mu.Unlock()
		})
	}
	return px, err
}

// storeArgs returns the flags of a broker behind px that name its store.
func (r *run) storeArgs(px faultProxy) []string {
	if r.sc.backend != nil {
		return append(r.sc.backend.BrokerArgs(r.bucket, px.URL()), "--prefix", r.prefix)
	}
	if r.sc.etcd {
		return []string{"--store", "etcd", "--etcd-endpoints", px.URL(), "--prefix", r.prefix}
	}
	return []string{"--bucket", r.bucket, "--prefix", r.prefix, "--region", "us-east-1", "--s3-endpoint", px.URL(), "--s3-path-style"}
}

// execute runs the scenario to the end and returns the checker's report.
func (r *run) execute() *Report {
	t, sc := r.t, r.sc
	t.Logf("scenario %s: seed %d, %d brokers on %d node IDs, %s, fault phase %v, mutation %q, gossip %v; reproduce with -seed %d",
		sc.name, sc.seed, sc.brokers, sc.clusterSize, sc.keepAlive(), sc.duration, sc.mutation, sc.gossip, sc.seed)
	t.Logf("schedule (seed %d):\n%s", sc.seed, FormatSchedule(sc.schedule))
	_ = os.WriteFile(filepath.Join(r.dir, "schedule.txt"), []byte(FormatSchedule(sc.schedule)), 0o644)

	r.start = time.Now()
	r.faultCtx, r.endFaults = context.WithCancel(context.Background())
	r.pollCtx, r.stopPolling = context.WithCancel(context.Background())
	t.Cleanup(r.killAll)
	r.bg.Add(1)
	go r.poll()
	for slot := range sc.brokers {
		r.startSlot(slot)
		if sc.serialStart && slot < sc.brokers-1 {
			r.mu.Lock()
			p := r.slots[slot]
			r.mu.Unlock()
			waitFor(10*time.Second, func() bool { return p == nil || p.healthy.Load() || p.hasExited() })
		}
	}
	if sc.script != nil {
		sc.script(r)
	}
	for _, e := range sc.schedule {
		if !sleepCtx(r.faultCtx, time.Until(r.start.Add(e.At))) {
			break
		}
		r.events.Add(1)
		go func() {
			defer r.events.Done()
			r.apply(e)
		}()
	}
	sleepCtx(r.faultCtx, time.Until(r.start.Add(sc.duration)))
	if sc.fencedStop {
		// A holder, once one is healthy and free of other faults.
		waitFor(10*time.Second, func() bool {
			for _, p := range r.eligible(true) {
				if p.healthy.Load() {
					return true
				}
			}
			return false
		})
		r.apply(Event{At: r.since(), Kind: KindTermFenced, Pick: int(sc.seed % 1024)})
	}
	r.endFaults()
	r.events.Wait()
	// Let the last faults play out (a woken or healed broker loses its
	// lease within the renew deadline) before the final SIGTERMs, so that
	// each broker's exit code says what happened to it.
	time.Sleep(sc.renewDeadline() + time.Second)
	r.finish()
	r.bg.Wait()
	r.finalScan()

	rep := Check(r.h)
	r.checkHistory(rep)
	r.report(rep)
	return rep
}

// sleepCtx sleeps d or until ctx ends; false if ctx ended.
func sleepCtx(ctx context.Context, d time.Duration) bool {
	if d <= 0 {
		return ctx.Err() == nil
	}
	tm := time.NewTimer(d)
	defer tm.Stop()
	select {
	case <-tm.C:
		return true
	case <-ctx.Done():
		return false
	}
}

func (r *run) count(kind string) {
	r.mu.Lock()
	r.faults[kind]++
	r.mu.Unlock()
}

func (r *run) note(format string, args ...any) {
	msg := fmt.Sprintf("%s %s", fmtDur(r.since()), fmt.Sprintf(format, args...))
	r.mu.Lock()
	r.notes = append(r.notes, msg)
	r.mu.Unlock()
	r.t.Log(msg)
}

// startSlot starts the next generation of broker in slot.
func (r *run) startSlot(slot int) {
	r.mu.Lock()
	if r.stopping {
		r.mu.Unlock()
		return
	}
	gen := r.gens[slot]
	r.gens[slot]++
	n := r.started
	r.started++
	var join string
	if r.sc.gossip {
		for _, p := range r.all {
			if p.gossipAddr != "" && !p.hasExited() && !p.paused.Load() {
				join = p.gossipAddr // the most recent live one
			}
		}
	}
	r.mu.Unlock()

	params := BrokerParams(r.sc.seed, slot, gen, r.sc.offsets, r.sc.startFaults)
	if r.sc.offsetFor != nil {
		params.ClockOffset = r.sc.offsetFor(n)
	}
	if len(r.sc.clockRates) > 0 {
		params.Clock = DrawClockFault(r.sc.seed, slot, gen, r.sc.clockRates, r.sc.duration)
	}
	if r.sc.clockFor != nil {
		params.Clock = r.sc.clockFor(n)
	}
	if _, err := r.launch(slot, gen, params, join); err != nil {
		r.t.Errorf("start broker s%d.g%d: %v", slot, gen, err)
	}
}

// launch starts a broker process behind a new proxy and its clients.
func (r *run) launch(slot, gen int, params StartParams, join string) (*proc, error) {
	sc := r.sc
	name := fmt.Sprintf("s%d.g%d", slot, gen)
	px, err := r.newProxy(slot, gen)
	if err != nil {
		return nil, err
	}
	p := &proc{
		r: r, name: name, task: fmt.Sprintf("faults-%s-%s", r.id, name), slot: slot, gen: gen, params: params, proxy: px,
		logPath: filepath.Join(r.dir, name+".log"), ready: make(chan struct{}), exited: make(chan struct{}), stopClient: make(chan struct{}),
		client: &http.Client{
			Timeout:   20 * time.Second, // longer than any pause: requests sent to a paused broker are answered when it wakes
			Transport: &http.Transport{MaxIdleConnsPerHost: 8, DisableCompression: true, Proxy: nil},
		},
	}
	p.node.Store(-1)
	p.idsSent.Store(-1)
	p.okSent.Store(-1)
	if params.Fault.Action != Forward {
		// The broker starts behind a faulty proxy (to hit its acquisition);
		// no other fault picks it meanwhile.
		p.busy.Store(true)
		r.count("start-" + params.Fault.Action.String())
		_ = px.Inject(params.Fault)
		r.bg.Add(1)
		go func() {
			defer r.bg.Done()
			select {
			case <-time.After(params.FaultFor):
			case <-p.exited:
			case <-r.faultCtx.Done():
			}
			_ = px.Heal()
			p.busy.Store(false)
		}()
	}
	args := append([]string{"serve", "--http-addr", "127.0.0.1:0"}, r.storeArgs(px)...)
	args = append(args,
		"--cluster-size", strconv.Itoa(sc.clusterSize),
		"--drain-delay", "200ms", "--shutdown-timeout", "5s",
		"--acquire-timeout", (sc.duration + 5*time.Minute).String(),
		"--task-id", p.task,
		"--elect", electionName,
		"--debug-clock-offset", params.ClockOffset.String(),
		"--log-level", "info",
	)
	if sc.read != nil {
		args = append(args, sc.read.args()...)
	} else {
		args = append(args, "--lease-duration", sc.lease.String(), "--renew-interval", sc.renew.String())
	}
	args = append(args, "--loss-grace", sc.lossGrace.String())
	args = append(args, r.historyArgs(name)...)
	args = append(args, params.Clock.Args()...)
	if sc.gossip {
		args = append(args, "--gossip-addr", "127.0.0.1:0", "--ready-timeout", "3s")
		if join != "" {
			args = append(args, "--join", join)
		}
	}
	bin := r.suite.broker
	home := filepath.Join(r.dir, "home")
	_ = os.MkdirAll(home, 0o755)
	env := []string{
		"HOME=" + home,
		"AWS_CONFIG_FILE=" + filepath.Join(home, "none"),
		"AWS_SHARED_CREDENTIALS_FILE=" + filepath.Join(home, "none"),
		"AWS_EC2_METADATA_DISABLED=true",
	}
	if r.suite.minio != nil {
		env = append(env, "AWS_ACCESS_KEY_ID="+r.suite.minio.accessKey, "AWS_SECRET_ACCESS_KEY="+r.suite.minio.secretKey)
	}
	if sc.backend != nil {
		env = append(env, sc.backend.BrokerEnv()...)
	}
	if sc.mutation != "" {
		bin = r.suite.mutant
		env = append(env, "NODEID_MUTATION="+sc.mutation)
	}
	logf, err := os.Create(p.logPath)
	if err != nil {
		_ = px.Close()
		return nil, err
	}
	fmt.Fprintf(logf, "# %s %s\n", bin, strings.Join(args, " "))
	readyOnce := sync.OnceFunc(func() { close(p.ready) })
	bp, err := brokerproc.Start(brokerproc.Config{
		Bin: bin, Args: args, Env: env, SysProcAttr: procAttr(), Stdout: logf, KeepLines: 1,
		OnLine: func(line string) { p.scanLine(line, logf, readyOnce) },
	})
	if err != nil {
		_ = px.Close()
		_ = logf.Close()
		return nil, err
	}
	p.bp = bp
	p.idx = r.h.AddBroker(BrokerRecord{Name: name, Task: p.task, ClockOffset: params.ClockOffset, Started: r.since()})
	r.mu.Lock()
	r.slots[slot] = p // before its watcher can see it exit
	r.all = append(r.all, p)
	r.mu.Unlock()
	clock := ""
	if params.Clock.Args() != nil {
		clock = ", " + params.Clock.String()
	}
	r.note("started %s (pid %d, clock offset %v%s, proxy %s%s)", name, bp.Pid(), params.ClockOffset, clock, px.URL(),
		map[bool]string{true: ", starts with " + params.Fault.String(), false: ""}[params.Fault.Action != Forward])
	r.bg.Add(1)
	go func() {
		defer r.bg.Done()
		p.exitCode = bp.ExitCode() // -1 when killed by a signal; its log was read to the end
		readyOnce()
		_ = logf.Close()
		at := r.since()
		why := ""
		if p.exitCode > 0 {
			why = lastError(p.logPath)
		}
		r.h.UpdateBroker(p.idx, func(b *BrokerRecord) { b.Exited, b.ExitedAt, b.ExitCode, b.ExitErr = true, at, p.exitCode, why })
		close(p.exited)
		r.onExit(p)
	}()
	select {
	case <-p.ready:
	case <-time.After(30 * time.Second):
		_ = p.bp.Signal(syscall.SIGKILL)
		return p, fmt.Errorf("broker %s did not log its HTTP address within 30s (log %s)", name, p.logPath)
	}
	if p.addr != "" {
		r.bg.Add(2)
		go p.idsLoop()
		go p.healthLoop()
	}
	return p, nil
}

// scanLine copies one line of the broker's log to its file and picks up its
// addresses; ready is called once they are known.
func (p *proc) scanLine(line string, logf *os.File, ready func()) {
	_, _ = logf.WriteString(line + "\n")
	if !strings.Contains(line, "listening") && !strings.Contains(line, `"msg":"serving IDs"`) &&
		!strings.Contains(line, `"msg":"lease lost`) && !strings.Contains(line, `"msg":"stopping`) {
		return
	}
	var m struct {
		Msg             string `json:"msg"`
		Addr            string `json:"addr"`
		NodeID          int    `json:"nodeId"`
		Version         int64  `json:"version"`
		TookOverExpired bool   `json:"tookOverExpired"`
	}
	if json.Unmarshal([]byte(line), &m) != nil {
		return
	}
	// The evidence lines of the checks (evidence.go), stamped when read:
	// what they say happened before then.
	switch at := p.r.since(); {
	case m.Msg == "serving IDs":
		p.r.h.AddTakeover(TakeoverObs{Broker: p.idx, At: at, Node: m.NodeID, Version: m.Version, Expired: m.TookOverExpired})
		return
	case strings.HasPrefix(m.Msg, "lease lost"):
		p.r.h.UpdateBroker(p.idx, func(b *BrokerRecord) { b.LossLoggedAt = at })
		return
	case strings.HasPrefix(m.Msg, "stopping"):
		p.r.h.UpdateBroker(p.idx, func(b *BrokerRecord) { b.StopLoggedAt = at })
		return
	}
	switch m.Msg {
	case "gossip listening":
		p.r.mu.Lock()
		p.gossipAddr = m.Addr
		p.r.mu.Unlock()
	case "http listening":
		p.r.mu.Lock() // eligible reads it
		p.addr = m.Addr
		p.r.mu.Unlock()
	}
	if p.addr != "" && (!p.r.sc.gossip || p.gossipAddr != "") {
		ready()
	}
}

func (p *proc) hasExited() bool {
	select {
	case <-p.exited:
		return true
	default:
		return false
	}
}

func (p *proc) url(path string) string { return "http://" + p.addr + path }

// idsLoop asks the broker for IDs until its clients stop, and records every
// answer.
func (p *proc) idsLoop() {
	defer p.r.bg.Done()
	rng := mrand.New(mrand.NewPCG(uint64(time.Now().UnixNano()), uint64(p.idx)))
	every, n := p.r.sc.idsEvery, p.r.sc.idsN
	for {
		wait := every[0] + time.Duration(rng.Int64N(int64(every[1]-every[0])+1))
		start := p.r.since()
		resp, err := p.client.Get(p.url("/ids?n=" + strconv.Itoa(n)))
		if err == nil {
			body, rerr := io.ReadAll(resp.Body)
			_ = resp.Body.Close()
			end := p.r.since()
			if rerr == nil && resp.StatusCode == http.StatusOK {
				p.record(start, end, body)
			} else {
				wait = 50 * time.Millisecond
			}
		} else {
			wait = 50 * time.Millisecond
		}
		select {
		case <-p.stopClient:
			return
		case <-time.After(wait):
		}
	}
}

func (p *proc) record(start, end time.Duration, body []byte) {
	var a node.IDsResponse
	if err := json.Unmarshal(body, &a); err != nil {
		p.r.h.AddCorrupt(fmt.Sprintf("%s: /ids answered 200 with %q: %v", p.name, body, err))
		return
	}
	ids := make([]int64, 0, len(a.IDs))
	for _, s := range a.IDs {
		id, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			p.r.h.AddCorrupt(fmt.Sprintf("%s: /ids answered a bad ID %q", p.name, s))
			return
		}
		ids = append(ids, id)
	}
	if len(ids) == 0 {
		return
	}
	p.node.Store(int64(a.NodeID))
	p.version.Store(a.Version)
	p.idsSent.Store(max(p.idsSent.Load(), int64(start)))
	p.r.h.AddIDs(IDBatch{Broker: p.idx, Start: start, End: end, Node: a.NodeID, Version: a.Version, Runs: RunsOf(ids), Recoveries: a.Recoveries})
}

// healthLoop polls /health every 50 ms without waiting for the previous
// answer (up to 128 in flight), so that requests sent while the broker is
// paused are all answered when it wakes up.
func (p *proc) healthLoop() {
	defer p.r.bg.Done()
	var inflight sync.WaitGroup
	defer inflight.Wait()
	sem := make(chan struct{}, 128)
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	var lastEnd atomic.Int64
	every := p.r.sc.leaderEvery
	if every == 0 {
		every = leaderPollEveryN
	}
	for n := 0; ; n++ {
		select {
		case <-p.stopClient:
			return
		case <-tick.C:
		}
		if n%every == 0 {
			inflight.Add(1)
			go func() { defer inflight.Done(); p.askLeader() }()
		}
		select {
		case sem <- struct{}{}:
		default:
			continue
		}
		inflight.Add(1)
		go func() {
			defer inflight.Done()
			defer func() { <-sem }()
			start := p.r.since()
			resp, err := p.client.Get(p.url("/health"))
			if err != nil {
				return
			}
			var body node.HealthResponse // a body that does not decode gives no reason: a fence's 503 (and count 0, at most the true count)
			_ = json.NewDecoder(resp.Body).Decode(&body)
			_, _ = io.Copy(io.Discard, resp.Body)
			_ = resp.Body.Close()
			end := p.r.since()
			ok := resp.StatusCode == http.StatusOK
			if resp.StatusCode != http.StatusOK && resp.StatusCode != http.StatusServiceUnavailable {
				return
			}
			p.r.h.AddHealth(HealthObs{Broker: p.idx, Start: start, End: end, OK: ok, Reason: body.Reason, Recoveries: body.Recoveries})
			for {
				last := lastEnd.Load()
				if int64(end) < last {
					break
				}
				if lastEnd.CompareAndSwap(last, int64(end)) {
					p.healthy.Store(ok)
					if ok {
						p.okSent.Store(int64(start))
					}
					break
				}
			}
			if ok && p.node.Load() < 0 {
				p.learnClaim()
			}
		}()
	}
}

// askLeader reads /leader once, records a 200 answer and returns it.
func (p *proc) askLeader() (node.LeaderResponse, bool) {
	start := p.r.since()
	var l node.LeaderResponse
	resp, err := p.client.Get(p.url("/leader"))
	if err != nil {
		return l, false
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK || json.NewDecoder(resp.Body).Decode(&l) != nil {
		return l, false
	}
	p.r.h.AddLeader(LeaderObs{Broker: p.idx, Start: start, End: p.r.since(), Term: l.Term, Self: l.Self})
	return l, true
}

// learnClaim reads the broker's node ID and version from /status.
func (p *proc) learnClaim() {
	resp, err := p.client.Get(p.url("/status"))
	if err != nil {
		return
	}
	defer resp.Body.Close()
	var s node.StatusResponse
	if json.NewDecoder(resp.Body).Decode(&s) == nil && s.State == node.StateHeld && s.NodeID >= 0 {
		p.version.Store(s.Version)
		p.node.CompareAndSwap(-1, int64(s.NodeID))
	}
}

// stopClients stops the broker's /ids and /health clients.
func (p *proc) stopClients() { p.stopOnce.Do(func() { close(p.stopClient) }) }

// onExit stops the broker's clients, reads its lease after a SIGTERM and
// starts its replacement.
func (r *run) onExit(p *proc) {
	p.stopClients()
	p.client.CloseIdleConnections()
	fate := Fate(p.fate.Load())
	why := ""
	if p.exitCode != 0 && p.exitCode != -1 {
		why = ": " + lastError(p.logPath)
	}
	r.note("%s exited with %d (fate %v, node %d v%d)%s", p.name, p.exitCode, fateName(fate), p.node.Load(), p.version.Load(), why)
	if fate == FateTerminated && p.node.Load() >= 0 {
		r.readRelease(p)
	}
	go func() { // the proxy may still hold requests of a dead client
		_ = p.proxy.Close()
	}()
	r.mu.Lock()
	replace := !r.stopping && r.slots[p.slot] == p
	r.mu.Unlock()
	if replace {
		// At once, but not in a tight loop when brokers cannot even start
		// (MinIO restarting).
		wait := 100 * time.Millisecond
		if p.node.Load() < 0 && r.since()-r.h.Broker(p.idx).Started < 2*time.Second {
			wait = time.Second
		}
		r.bg.Add(1)
		go func() {
			defer r.bg.Done()
			if sleepCtx(r.faultCtx, wait) {
				r.startSlot(p.slot)
			}
		}()
	}
}

// lastError returns the last error line of a broker's log.
func lastError(path string) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return err.Error()
	}
	last := "(no error logged)"
	for _, l := range strings.Split(string(b), "\n") {
		if strings.Contains(l, `"level":"ERROR"`) {
			last = l
		}
	}
	return last
}

func fateName(f Fate) string {
	return [...]string{"none", "killed", "terminated"}[f]
}

// readRelease reads the lease object of a broker that exited after SIGTERM.
func (r *run) readRelease(p *proc) {
	node := int(p.node.Load())
	o := ReleaseObs{Broker: p.idx, At: r.since(), Node: node}
	for attempt := 0; attempt < 10; attempt++ {
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
		body, _, err := r.store.Get(ctx, lease.RecordKey(node))
		cancel()
		if err != nil {
			time.Sleep(200 * time.Millisecond) // MinIO may be restarting
			continue
		}
		rec, err := lease.DecodeRecord(body, node)
		if err != nil {
			r.h.AddCorrupt(fmt.Sprintf("node %d read after %s exited: %v", node, p.name, err))
			break
		}
		o.Found, o.Version, o.Holder = true, rec.Version, rec.Holder
		break
	}
	r.h.AddRelease(o)
}

// poll reads every lease object, one after the other, every 100 ms, from
// MinIO directly, until the run ends.
func (r *run) poll() {
	defer r.bg.Done()
	for {
		for node := range r.sc.clusterSize {
			if r.pollCtx.Err() != nil {
				return
			}
			start := r.since()
			ctx, cancel := context.WithTimeout(r.pollCtx, 2*time.Second)
			body, _, err := r.store.Get(ctx, lease.RecordKey(node))
			cancel()
			end := r.since()
			if err != nil {
				continue // not created yet, MinIO restarting, or the run ending
			}
			rec, err := lease.DecodeRecord(body, node)
			if err != nil {
				r.h.AddCorrupt(fmt.Sprintf("node %d read at %s: %v: %q", node, fmtDur(start), err, body))
				continue
			}
			r.h.AddLease(LeaseObs{Node: node, Start: start, End: end, Version: rec.Version, Holder: rec.Holder, Reserved: rec.ReservedUntilMs})
		}
		if !sleepCtx(r.pollCtx, 100*time.Millisecond) {
			return
		}
	}
}

// eligible returns the brokers a fault may pick: alive, not owned by another
// fault, serving HTTP; holders only when holders is set and there is one.
func (r *run) eligible(holders bool) []*proc {
	r.mu.Lock()
	defer r.mu.Unlock()
	var all, held []*proc
	for _, p := range r.slots {
		if p == nil || p.addr == "" || p.hasExited() || p.busy.Load() || Fate(p.fate.Load()) != FateNone {
			continue
		}
		all = append(all, p)
		if p.healthy.Load() {
			held = append(held, p)
		}
	}
	if holders && len(held) > 0 {
		return held
	}
	return all
}

// apply runs one event of the schedule.
func (r *run) apply(e Event) {
	if r.applyCluster(e) {
		return
	}
	if e.Kind == KindEtcd {
		r.count(string(e.Kind))
		sig := syscall.SIGTERM
		if e.Pick%2 == 0 {
			sig = syscall.SIGKILL
		}
		r.note("etcd restart (%v, down %v)", sig, e.For)
		if err := r.suite.etcd.Restart(sig, e.For); err != nil {
			r.t.Errorf("restart etcd: %v", err)
		}
		r.note("etcd is back")
		return
	}
	if e.Kind == KindMinIO {
		r.count(string(e.Kind))
		crash := e.Pick%2 == 0
		r.note("MinIO restart (crash %v, down %v)", crash, e.For)
		if err := r.suite.minio.restart(e.For, crash); err != nil {
			r.t.Errorf("restart MinIO: %v", err)
		}
		r.note("MinIO is back")
		return
	}
	if e.Kind == KindStallLeader {
		r.stallLeader(e)
		return
	}
	holdersOnly := e.Kind == KindKill || e.Kind == KindTerm || e.Kind == KindPause || e.Kind == KindPartition || e.Kind == KindStall ||
		e.Kind == KindSlowWrites || e.Kind == KindTermRenewing || e.Kind == KindTermFenced
	cands := r.eligible(holdersOnly)
	if len(cands) == 0 {
		r.count("skipped")
		return
	}
	p := cands[e.Pick%len(cands)]
	if !p.busy.CompareAndSwap(false, true) {
		r.count("skipped")
		return
	}
	defer p.busy.Store(false)
	r.count(string(e.Kind))
	wasHeld := p.healthy.Load()
	switch e.Kind {
	case KindKill:
		r.note("kill -9 %s (held %v)", p.name, wasHeld)
		r.setFate(p, FateKilled)
		_ = p.bp.Signal(syscall.SIGKILL)
	case KindTerm:
		r.note("SIGTERM %s (held %v)", p.name, wasHeld)
		r.setFate(p, FateTerminated)
		_ = p.bp.Signal(syscall.SIGTERM)
	case KindTermRenewing:
		_ = p.proxy.Inject(Fault{Action: SlowAnswer, Ops: []Op{OpUpdate}, Delay: 500 * time.Millisecond})
		caught := r.waitHeld(p, func() bool { return p.proxy.Held(OpUpdate) > 0 })
		r.note("SIGTERM %s while a renewal it sent has landed and waits for its answer (caught: %v, held %v)", p.name, caught, wasHeld)
		r.setFate(p, FateTerminated)
		_ = p.bp.Signal(syscall.SIGTERM)
		r.waitFault(p, 10*time.Second)
		_ = p.proxy.Heal()
	case KindTermFenced:
		_ = p.proxy.Inject(Fault{Action: BlackHole})
		fenced := r.waitUntil(p, 2*r.sc.lease, func() bool { return !p.healthy.Load() })
		declared := r.h.Broker(p.idx).LossLoggedAt > 0
		r.note("SIGTERM %s, its store black-holed until its /health answered 503 (503 seen: %v, loss declared first: %v, held %v)",
			p.name, fenced, declared, wasHeld)
		r.setFate(p, FateTerminated)
		_ = p.bp.Signal(syscall.SIGTERM)
		r.waitFault(p, 500*time.Millisecond) // its release waits in the black hole, then lands
		_ = p.proxy.Heal()
	case KindPause:
		r.note("SIGSTOP %s for %v (held %v)", p.name, e.For, wasHeld)
		began := time.Now()
		p.paused.Store(true)
		_ = p.bp.Signal(syscall.SIGSTOP)
		sleepCtx(r.faultCtx, e.For) // cut short at the end of the fault phase
		_ = p.bp.Signal(syscall.SIGCONT)
		p.paused.Store(false)
		r.mustLose(p, wasHeld, "a SIGSTOP", time.Since(began))
		r.note("SIGCONT %s", p.name)
	case KindStall:
		_ = p.proxy.Inject(Fault{Action: BlackHole})
		caught := r.waitHeld(p, func() bool { return p.proxy.Held(OpUpdate) > 0 })
		r.note("stall %s for %v: S3 black-holed, SIGSTOP (a renewal in flight: %v, held %v)", p.name, e.For, caught, wasHeld)
		r.stall(p, e.For, wasHeld)
	case KindSlowWrites:
		r.note("slow S3 on %s for %v: latency %v+%v and %v", p.name, e.For, e.Latency, e.Jitter, e.Fault)
		p.proxy.SetLatency(e.Latency, e.Jitter)
		_ = p.proxy.Inject(e.Fault)
		r.waitFault(p, e.For)
		_ = p.proxy.Heal()
	case KindLatency:
		r.note("latency %v+%v on %s for %v", e.Latency, e.Jitter, p.name, e.For)
		p.proxy.SetLatency(e.Latency, e.Jitter)
		r.waitFault(p, e.For)
		p.proxy.SetLatency(0, 0)
	default: // proxy faults
		r.note("%s on %s for %v: %v", e.Kind, p.name, e.For, e.Fault)
		began := time.Now()
		if err := p.proxy.Inject(e.Fault); err != nil {
			r.t.Errorf("inject %v: %v", e.Fault, err)
		}
		r.waitFault(p, e.For)
		if e.Kind == KindPartition {
			r.mustLose(p, wasHeld, "an S3 partition", time.Since(began))
		}
		if err := p.proxy.Heal(); err != nil {
			r.note("heal %s's proxy: %v", p.name, err)
		}
	}
}

// waitHeld waits up to two renew intervals for held, which polls p's proxy;
// false if it never held or p exited.
func (r *run) waitHeld(p *proc, held func() bool) bool {
	return r.waitUntil(p, 2*r.sc.renew, held)
}

// waitUntil polls cond every 2 ms for up to d; false if it never held or p
// exited.
func (r *run) waitUntil(p *proc, d time.Duration, cond func() bool) bool {
	return waitFor(d, func() bool { return p.hasExited() || cond() }) && !p.hasExited()
}

// waitFor polls cond every 2 ms for up to d; false if it never held.
func waitFor(d time.Duration, cond func() bool) bool {
	for deadline := time.Now().Add(d); time.Now().Before(deadline); time.Sleep(2 * time.Millisecond) {
		if cond() {
			return true
		}
	}
	return false
}

// stall pauses p for d while its S3 stays black-holed, then wakes it and
// heals its S3 a renew deadline later. The classic: a process paused (GC, CPU
// starvation) while a write hangs on a partitioned network. When it wakes
// up, its renewal is still in flight and its read-back hangs too: only the
// fence stops it from serving IDs, or answering /leader self, meanwhile.
func (r *run) stall(p *proc, d time.Duration, wasHeld bool) (stopped, woken time.Duration) {
	began := time.Now()
	p.paused.Store(true)
	stopped = r.since()
	_ = p.bp.Signal(syscall.SIGSTOP)
	sleepCtx(r.faultCtx, d)
	woken = r.since()
	_ = p.bp.Signal(syscall.SIGCONT)
	p.paused.Store(false)
	r.mustLose(p, wasHeld, "a stall", time.Since(began))
	r.waitFault(p, r.sc.renewDeadline()) // the partition outlasts the pause
	_ = p.proxy.Heal()
	r.note("SIGCONT %s, then its S3 healed", p.name)
	return stopped, woken
}

// stallLeader stalls the broker that answers /leader self: true (see
// KindStallLeader) once its election renewal, and its node ID's renewal if
// it holds one, hang on the black hole: when it wakes, both claims stay
// valid, if their fence is broken, until their read-backs time out.
func (r *run) stallLeader(e Event) {
	var p *proc
	var term int64
	for _, c := range r.eligible(false) {
		if l, ok := c.askLeader(); ok && l.Self && c.busy.CompareAndSwap(false, true) {
			p, term = c, l.Term
			break
		}
	}
	if p == nil {
		r.count("skipped")
		return
	}
	defer p.busy.Store(false)
	px, ok := p.proxy.(*Proxy)
	if !ok {
		r.t.Errorf("%s cannot stall behind etcd's TCP proxy", e.Kind)
		return
	}
	r.count(string(e.Kind))
	wasHeld := p.healthy.Load()
	_ = px.Inject(Fault{Action: BlackHole})
	op := OpUpdate
	if r.sc.read != nil {
		op = OpGet // read mode keeps both claims alive by reads (every poll interval)
	}
	caught := r.waitHeld(p, func() bool {
		elect := px.HeldOn(op, "/"+election.Dir+electionName+"/")
		return elect > 0 && (!wasHeld || px.Held(op) > elect)
	})
	r.note("stall leader %s (term %d) for %v: S3 black-holed, SIGSTOP (its %s in flight: %v, held node %v)", p.name, term, e.For,
		map[bool]string{false: "renewals", true: "keep-alive reads"}[r.sc.read != nil], caught, wasHeld)
	if !caught {
		_ = px.Heal()
		return
	}
	stopped, woken := r.stall(p, e.For, wasHeld)
	r.h.AddStall(StallObs{Broker: p.idx, Term: term, Stopped: stopped, Woken: woken})
}

// mustLose records that a broker holding a lease when a pause or partition
// began, which lasted longer than the lease, must lose it (exit 3): its
// last renewal was sent before the fault began, and its renew deadline is
// shorter than the lease. In read mode the span is the window: a read or a
// write arms the fence for at most the window from its send, so a fault
// longer than that lets it fall (final without a loss grace, the only case
// where the checks use it). Faults cut short at the end of the fault phase
// may be too short for that.
func (r *run) mustLose(p *proc, held bool, what string, lasted time.Duration) {
	span, name := r.sc.lease, "lease"
	if r.sc.read != nil {
		span, name = r.sc.read.window, "window"
	}
	if !held || lasted <= span {
		return
	}
	at := r.since()
	why := fmt.Sprintf("%s of %v (%s %v) ending at %s while holding", what, lasted.Round(time.Millisecond), name, span, fmtDur(at))
	r.h.UpdateBroker(p.idx, func(b *BrokerRecord) { b.MustLose, b.MustLoseWhy, b.MustLoseAt = true, why, at })
}

// waitFault waits d, or less if the broker exits or the fault phase ends.
func (r *run) waitFault(p *proc, d time.Duration) {
	select {
	case <-time.After(d):
	case <-p.exited:
	case <-r.faultCtx.Done():
	}
}

func (r *run) setFate(p *proc, f Fate) {
	p.fate.Store(int32(f))
	at := r.since()
	r.h.UpdateBroker(p.idx, func(b *BrokerRecord) { b.Fate, b.FateAt = f, at })
}

// finish stops every broker that is still alive with SIGTERM (each must
// release its lease and exit 0) and waits for them.
func (r *run) finish() {
	r.mu.Lock()
	r.stopping = true
	live := slices.Clone(r.all)
	r.mu.Unlock()
	for _, p := range live {
		if p.hasExited() {
			continue
		}
		_ = p.bp.Signal(syscall.SIGCONT)
		if Fate(p.fate.Load()) == FateNone {
			r.setFate(p, FateTerminated)
			_ = p.bp.Signal(syscall.SIGTERM)
		}
	}
	r.note("SIGTERM to every live broker")
	deadline := time.After(30 * time.Second)
	for _, p := range live {
		select {
		case <-p.exited:
		case <-deadline:
			r.note("%s did not exit within 30s of the end", p.name)
		}
	}
	r.stopPolling()
	for _, p := range live {
		p.stopClients()
		if !p.hasExited() {
			_ = p.bp.Signal(syscall.SIGKILL)
		}
	}
}

// challenges counts the challenges, confirms, answers and takes of a
// confirm among the writes the server applied (CountChallenges).
func (r *run) challenges() ChallengeCounts {
	r.mu.Lock()
	defer r.mu.Unlock()
	return CountChallenges(r.landed)
}

// keepAlive describes the scenario's keep-alive for the log.
func (sc *scenario) keepAlive() string {
	if sc.read != nil {
		return fmt.Sprintf("keep-alive by reads (window %v, backstop %v)", sc.read.window, sc.read.backstop)
	}
	return fmt.Sprintf("lease %v", sc.lease)
}

// s3Total sums one "OP outcome" count over the brokers' proxies.
func s3Total(all []*proc, key string) int {
	n := 0
	for _, p := range all {
		n += p.proxy.Counts()[key]
	}
	return n
}

// killAll kills whatever still runs (a failed or interrupted test).
func (r *run) killAll() {
	r.mu.Lock()
	r.stopping = true
	all := slices.Clone(r.all)
	r.mu.Unlock()
	if r.endFaults != nil {
		r.endFaults()
		r.stopPolling()
	}
	for _, p := range all {
		if !p.hasExited() {
			_ = p.bp.Signal(syscall.SIGCONT)
			_ = p.bp.Signal(syscall.SIGKILL)
		}
		p.stopClients()
		_ = p.proxy.Close()
	}
}

// finalScan decodes every object in the bucket.
func (r *run) finalScan() {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var l lease.Listing
	var err error
	for attempt := 0; attempt < 20; attempt++ {
		if l, err = r.store.List(ctx); err == nil {
			break
		}
		time.Sleep(250 * time.Millisecond)
	}
	if err != nil {
		r.h.AddCorrupt(fmt.Sprintf("final listing: %v", err))
		return
	}
	n := 0
	for _, o := range l.Objects {
		body, _, err := r.store.Get(ctx, o.Key)
		if err != nil {
			r.h.AddCorrupt(fmt.Sprintf("final read of %s: %v", o.Key, err))
			continue
		}
		if o.Key == lease.ProbeKey {
			continue // the brokers' store probe (lease.Probe): no lease state
		}
		// The election's objects (--elect) are a one-slot cluster of
		// their own: the same codec, not counted as node IDs.
		key, elect := strings.CutPrefix(o.Key, election.Dir+electionName+"/")
		if key == lease.ManifestKey {
			if _, err := lease.DecodeManifest(body); err != nil {
				r.h.AddCorrupt(fmt.Sprintf("%s: %v", o.Key, err))
			}
			continue
		}
		id, ok := lease.ParseRecordKey(key)
		if elect {
			if !ok || id != 0 {
				r.h.AddCorrupt(fmt.Sprintf("unexpected object %s", o.Key))
			} else if _, err := lease.DecodeRecord(body, id); err != nil {
				r.h.AddCorrupt(fmt.Sprintf("%s: %v", o.Key, err))
			}
			continue
		}
		if !ok {
			r.h.AddCorrupt(fmt.Sprintf("unexpected object %s", o.Key))
			continue
		}
		if _, err := lease.DecodeRecord(body, id); err != nil {
			r.h.AddCorrupt(fmt.Sprintf("%s: %v", o.Key, err))
			continue
		}
		n++
	}
	r.h.FinalObjects = n
	if n != r.sc.clusterSize {
		r.h.AddCorrupt(fmt.Sprintf("the bucket holds %d lease objects, want %d", n, r.sc.clusterSize))
	}
}

// report logs the summary and the violations and writes them to the run folder.
func (r *run) report(rep *Report) {
	r.mu.Lock()
	faults := formatCounts(r.faults)
	coverage.Lock()
	coverage.Add(r.faults, rep, r.sc.mutation != "")
	coverage.Unlock()
	all := slices.Clone(r.all)
	r.mu.Unlock()
	exits := map[string]int{}
	for _, b := range r.h.Brokers {
		switch {
		case b.Fate == FateKilled:
			exits["killed"]++
		case !b.Exited:
			exits["running"]++
		default:
			exits[strconv.Itoa(b.ExitCode)]++
		}
	}
	s3 := map[string]int{}
	for _, p := range all {
		for k, v := range p.proxy.Counts() {
			s3[k] += v
		}
	}
	summary := fmt.Sprintf("SUMMARY %s seed=%d: %.0fs; faults: %s; brokers: %d started, exits %s; IDs checked: %d in %d answers; duplicates: %d; violations: %s",
		r.sc.name, r.sc.seed, r.since().Seconds(), faults, len(r.h.Brokers), formatCounts(exits), rep.IDs, rep.Batches, rep.Duplicates, rep.Summary())
	if r.sc.read != nil {
		summary += fmt.Sprintf("; read mode: GET 304=%d GET 200=%d, %v", s3Total(all, "GET 304"), s3Total(all, "GET 200"), r.challenges())
	}
	details := rep.Details(5)
	text := summary + "\nthrough the proxies (S3 requests, or etcd connections): " + formatCounts(s3) +
		"\nCHECKED (occasions each check was put to the test): " + formatCounts(rep.Exercised) + "\n" + details
	for _, n := range rep.Notes {
		text += "note: " + n + "\n"
	}
	_ = os.WriteFile(filepath.Join(r.dir, "report.txt"), []byte(text+"\nevents:\n"+strings.Join(r.notes, "\n")+"\n"), 0o644)
	r.t.Log(text)
}
