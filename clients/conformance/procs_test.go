package conformance

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/nodeid/nodeid/internal/testkit/brokerproc"
	"github.com/nodeid/nodeid/node"
	"github.com/nodeid/nodeid/s3store/s3fake"
)

// outSink collects a driver's standard output, parsed line by line; it is
// the io.Writer given to brokerproc as the process's Stdout (with
// nodeid-broker run, the broker's, which its child shares).
type outSink struct {
	mu      sync.Mutex
	partial []byte
	lines   []Line
	at      []time.Time   // when each line arrived
	changed chan struct{} // closed and replaced at every line
}

func newOutSink() *outSink { return &outSink{changed: make(chan struct{})} }

func (s *outSink) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.partial = append(s.partial, p...)
	added := false
	for {
		i := strings.IndexByte(string(s.partial), '\n')
		if i < 0 {
			break
		}
		s.lines = append(s.lines, ParseLine(strings.TrimSuffix(string(s.partial[:i]), "\r")))
		s.at = append(s.at, time.Now())
		s.partial = s.partial[i+1:]
		added = true
	}
	if added {
		close(s.changed)
		s.changed = make(chan struct{})
	}
	return len(p), nil
}

// snapshot returns the lines so far (a copy of the slice; lines are never
// changed once parsed), and a channel closed at the next line.
func (s *outSink) snapshot() ([]Line, <-chan struct{}) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.lines[:len(s.lines):len(s.lines)], s.changed
}

// lines returns the lines so far, with a last line left without its newline
// (a process killed mid-write) as a Bad line.
func (s *outSink) all() []Line {
	s.mu.Lock()
	defer s.mu.Unlock()
	ls := append([]Line(nil), s.lines...)
	if len(s.partial) > 0 {
		ls = append(ls, Line{Kind: Bad, Raw: string(s.partial), Problem: "a last line without its newline"})
	}
	return ls
}

// arrived returns when line i arrived.
func (s *outSink) arrived(i int) time.Time {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.at[i]
}

// errWait is the error of a wait that timed out or saw the process exit.
type errWait struct{ msg string }

func (e *errWait) Error() string { return e.msg }

// waitLines waits until cond holds for the lines so far, the process exits
// (exited closes) or timeout passes; it returns nil when cond held.
func (s *outSink) waitLines(timeout time.Duration, exited <-chan struct{}, cond func([]Line) bool) error {
	deadline := time.NewTimer(timeout)
	defer deadline.Stop()
	for {
		ls, changed := s.snapshot()
		if cond(ls) {
			return nil
		}
		select {
		case <-changed:
		case <-exited:
			ls, _ := s.snapshot() // the output is all read once the process exited
			if cond(ls) {
				return nil
			}
			return &errWait{fmt.Sprintf("the process exited after %d lines", len(ls))}
		case <-deadline.C:
			return &errWait{fmt.Sprintf("timed out after %v, %d lines", timeout, len(s.all()))}
		}
	}
}

// count returns a condition: at least n lines of kind after line from.
func count(from int, kind LineKind, errKind string, n int) func([]Line) bool {
	return func(ls []Line) bool {
		seen := 0
		for _, l := range ls[min(from, len(ls)):] {
			if l.Kind == kind && (errKind == "" || l.ErrKind == errKind) {
				seen++
			}
		}
		return seen >= n
	}
}

// spanMs returns a condition: the IDs of ok lines after line from span at
// least ms milliseconds of timestamps.
func spanMs(from int, ms int64) func([]Line) bool {
	return func(ls []Line) bool {
		lo, hi := int64(-1), int64(-1)
		for _, l := range ls[min(from, len(ls)):] {
			if l.Kind != OK {
				continue
			}
			for _, id := range l.IDs {
				ts := TimeMs(id)
				if lo < 0 || ts < lo {
					lo = ts
				}
				hi = max(hi, ts)
			}
		}
		return lo >= 0 && hi-lo >= ms
	}
}

// baseEnv returns the environment of brokers and drivers: the test's (for
// the interpreters: PATH, HOME, pyenv's variables) less any nodeid or AWS
// configuration, plus the static credentials gofakes3 accepts.
func baseEnv(extra ...string) []string {
	var env []string
	for _, kv := range os.Environ() {
		if strings.HasPrefix(kv, "NODEID_") || strings.HasPrefix(kv, "AWS_") {
			continue
		}
		env = append(env, kv)
	}
	env = append(env, "AWS_EC2_METADATA_DISABLED=true", "AWS_CONFIG_FILE=/nonexistent", "AWS_SHARED_CREDENTIALS_FILE=/nonexistent",
		"AWS_ACCESS_KEY_ID="+s3fake.AccessKeyID, "AWS_SECRET_ACCESS_KEY="+s3fake.SecretAccessKey)
	return append(env, extra...)
}

// proc is a started process (a driver, or a broker with its child's output)
// of a scenario.
type proc struct {
	*brokerproc.Proc
	t    *testing.T
	name string
	out  *outSink // standard output, parsed as driver lines
}

// startProc starts argv with the environment env and kills it at the end of
// the test, logging its standard error if the test failed.
func startProc(t *testing.T, name string, env []string, argv ...string) *proc {
	t.Helper()
	out := newOutSink()
	bp, err := brokerproc.Start(brokerproc.Config{Bin: argv[0], Args: argv[1:], Env: env, Stdout: out, KeepLines: 0})
	if err != nil {
		t.Fatal(err)
	}
	p := &proc{Proc: bp, t: t, name: name, out: out}
	t.Cleanup(func() {
		p.Kill()
		if t.Failed() {
			t.Logf("%s (pid %d) standard error:\n%s", name, p.Pid(), tail(p.Log(), 60))
		}
	})
	return p
}

// tail returns the last n lines of s.
func tail(s string, n int) string {
	ls := strings.Split(s, "\n")
	if len(ls) > n {
		ls = append([]string{fmt.Sprintf("[%d lines before]", len(ls)-n)}, ls[len(ls)-n:]...)
	}
	return strings.Join(ls, "\n")
}

// waitLines is outSink.waitLines on the process's output, failing the test
// (fatally) with what for a description.
func (p *proc) waitLines(timeout time.Duration, what string, cond func([]Line) bool) {
	p.t.Helper()
	if err := p.out.waitLines(timeout, p.Exited(), cond); err != nil {
		p.t.Fatalf("%s: waiting for %s: %v; its output ends with:\n%s", p.name, what, err, lastLines(p.out.all(), 8))
	}
}

// tryLines is waitLines that reports instead of failing.
func (p *proc) tryLines(timeout time.Duration, cond func([]Line) bool) bool {
	return p.out.waitLines(timeout, p.Exited(), cond) == nil
}

// nLines returns the number of lines so far.
func (p *proc) nLines() int {
	ls, _ := p.out.snapshot()
	return len(ls)
}

// lastLines shows the last n lines (IDs shortened).
func lastLines(ls []Line, n int) string {
	var b strings.Builder
	for _, l := range ls[max(0, len(ls)-n):] {
		raw := l.Raw
		if len(raw) > 160 {
			raw = raw[:160] + "..."
		}
		b.WriteString("  " + raw + "\n")
	}
	return b.String()
}

// stop sends SIGTERM and waits for the exit, failing the test if the
// process does not exit within timeout or exits with another code than 0.
func (p *proc) stop(timeout time.Duration) {
	p.t.Helper()
	code, ok := p.Stop(timeout)
	if !ok {
		p.t.Errorf("%s did not exit within %v of SIGTERM: killed", p.name, timeout)
	} else if code != 0 {
		p.t.Errorf("%s exited %d after SIGTERM, want 0", p.name, code)
	}
}

// sigterm is the signal that stops a broker or a driver.
const sigterm = syscall.SIGTERM

// waitExit waits up to timeout for p's exit and returns its code; it kills p
// and fails the test if it does not exit in time.
func waitExit(p *broker, timeout time.Duration) int {
	p.t.Helper()
	select {
	case <-p.Exited():
	case <-time.After(timeout):
		p.Kill()
		p.t.Fatalf("%s did not exit within %v", p.name, timeout)
	}
	return p.ExitCode()
}

// kill9 sends SIGKILL and waits for the exit.
func (p *proc) kill9() {
	p.t.Helper()
	if err := p.Signal(syscall.SIGKILL); err != nil {
		p.t.Fatalf("kill -9 %s: %v", p.name, err)
	}
	<-p.Exited()
}

// stream returns the process's output as a driver's stream.
func (p *proc) stream(o driverOpts, ended bool) *Stream {
	return &Stream{Name: p.name, Lines: p.out.all(), Driver: true, IDFile: o.idFile != "", Batch: o.batch, Ended: ended}
}

// driverOpts are a driver's arguments.
type driverOpts struct {
	idFile     string // --id-file
	url        string // --url
	urlEnv     bool   // --url-env: HTTP mode on the URL in NODEID_URL
	prefetch   int    // --prefetch (HTTP mode; 0: none)
	maxAge     string // --prefetch-max-age-ms ("": the client's default, 1000; "0": no limit)
	batch      int    // --batch (1 when 0)
	durationMs int    // --duration-ms (0: none)
	pauseMs    int    // --pause-ms
	clockSteps string // --clock-steps
	rereadMs   int    // --reread-ms (0: the default)
	mutation   string // --mutation
}

// args returns the driver's command-line arguments.
func (o *driverOpts) args() []string {
	if o.batch == 0 {
		o.batch = 1
	}
	var a []string
	if o.idFile != "" {
		a = append(a, "--id-file", o.idFile)
	}
	if o.url != "" {
		a = append(a, "--url", o.url)
	}
	if o.urlEnv {
		a = append(a, "--url-env")
	}
	if o.prefetch > 0 {
		a = append(a, "--prefetch", strconv.Itoa(o.prefetch))
	}
	if o.maxAge != "" {
		a = append(a, "--prefetch-max-age-ms", o.maxAge)
	}
	a = append(a, "--batch", strconv.Itoa(o.batch), "--pause-ms", strconv.Itoa(o.pauseMs))
	if o.durationMs > 0 {
		a = append(a, "--duration-ms", strconv.Itoa(o.durationMs))
	}
	if o.clockSteps != "" {
		a = append(a, "--clock-steps", o.clockSteps)
	}
	if o.rereadMs > 0 {
		a = append(a, "--reread-ms", strconv.Itoa(o.rereadMs))
	}
	if o.mutation != "" {
		a = append(a, "--mutation", o.mutation)
	}
	return a
}

// backstopMs is the --duration-ms of drivers the scenarios stop with
// SIGTERM: it only ends a driver that a failed test left running.
const backstopMs = 120000

// startDriver starts c's driver as a process of the test's own (an
// application beside a sidecar broker, or over a scripted id file).
func startDriver(t *testing.T, c *client, name string, o driverOpts) *proc {
	t.Helper()
	if o.durationMs == 0 {
		o.durationMs = backstopMs
	}
	return startProc(t, name, baseEnv(c.env...), c.command(o.args()...)...)
}

// broker is a nodeid-broker process; with run, its out is its child's.
type broker struct {
	*proc
	addr string // the HTTP server's address
}

// bucket returns a new bucket of the shared S3 for one scenario, and the
// broker flags that use it.
func bucket(t *testing.T) []string {
	t.Helper()
	needBrokers(t)
	name := fmt.Sprintf("conf-%d", bucketSeq.Add(1))
	if err := s3.CreateBucket(name); err != nil {
		t.Fatal(err)
	}
	return []string{"--bucket", name, "--s3-endpoint", s3.URL(), "--s3-path-style"}
}

var bucketSeq atomic.Int64

// startBroker starts nodeid-broker with args (serve or run ...; --http-addr
// is added), with the environment of c's driver when it runs one, and waits
// until it listens.
func startBroker(t *testing.T, name string, c *client, args ...string) *broker {
	t.Helper()
	needBrokers(t)
	var extra []string
	if c != nil {
		extra = c.env
	}
	args = append([]string{args[0], "--http-addr", "127.0.0.1:0", "--log-level", "info"}, args[1:]...)
	p := startProc(t, name, baseEnv(extra...), append([]string{brokerBin}, args...)...)
	addr, err := p.WaitAddr("http listening", 20*time.Second)
	if err != nil {
		t.Fatalf("%s: %v\n%s", name, err, tail(p.Log(), 40))
	}
	return &broker{proc: p, addr: addr}
}

// waitLog waits for the broker's log line msg and returns it.
func (b *broker) waitLog(msg string, timeout time.Duration) map[string]any {
	b.t.Helper()
	m, err := b.WaitLog(msg, timeout)
	if err != nil {
		b.t.Fatalf("%s: %v\n%s", b.name, err, tail(b.Log(), 40))
	}
	return m
}

// claims returns the claims the broker served under ("serving IDs" lines),
// each with when the broker removed its id file for good ("id file
// removed", on the host's clock), if it did.
func (b *broker) claims() []Claim {
	var cs []Claim
	for _, l := range b.Lines() {
		var m struct {
			Time    time.Time `json:"time"`
			Msg     string    `json:"msg"`
			NodeID  int       `json:"nodeId"`
			Version int64     `json:"version"`
			FloorMs int64     `json:"floorMs"`
		}
		if json.Unmarshal([]byte(l), &m) != nil {
			continue
		}
		switch {
		case m.Msg == "serving IDs":
			cs = append(cs, Claim{Node: m.NodeID, Version: m.Version, FloorMs: m.FloorMs})
		case m.Msg == "id file removed" && len(cs) > 0:
			cs[len(cs)-1].RemovedMs = m.Time.UnixMilli()
		}
	}
	return cs
}

// num reads a number of a decoded log line.
func num(m map[string]any, key string) int64 {
	f, _ := m[key].(float64)
	return int64(f)
}

// collector calls a broker's /ids in a loop, as one more process whose IDs
// count in the run, until stopped.
type collector struct {
	name     string
	out      *outSink
	stop     chan struct{}
	stopOnce sync.Once
	done     chan struct{}
	n503     atomic.Int64
}

var httpClient = &http.Client{Timeout: 5 * time.Second}

// collect starts calling b's /ids?n=n every pause.
func collect(t *testing.T, b *broker, n int, pause time.Duration) *collector {
	c := &collector{name: b.name + " /ids", out: newOutSink(), stop: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(c.done)
		url := fmt.Sprintf("http://%s/ids?n=%d", b.addr, n)
		for {
			select {
			case <-c.stop:
				return
			default:
			}
			c.once(url)
			select {
			case <-c.stop:
				return
			case <-time.After(pause):
			}
		}
	}()
	t.Cleanup(c.end)
	return c
}

func (c *collector) once(url string) {
	resp, err := httpClient.Get(url)
	if err != nil {
		return
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != http.StatusOK {
		if resp.StatusCode == http.StatusServiceUnavailable {
			c.n503.Add(1)
		}
		return
	}
	var r node.IDsResponse
	if err := json.Unmarshal(body, &r); err != nil {
		return
	}
	line := fmt.Sprintf("ok %d %d - %s", r.NodeID, r.Version, strings.Join(r.IDs, " "))
	_, _ = c.out.Write([]byte(line + "\n"))
}

// end stops the loop and waits for it.
func (c *collector) end() {
	c.stopOnce.Do(func() { close(c.stop) })
	<-c.done
}

// stream returns the IDs collected, as a stream.
func (c *collector) stream() *Stream {
	return &Stream{Name: c.name, Lines: c.out.all()}
}
