package main

// The ids scenario's load generator: GET /ids over keep-alive connections,
// the decoding of each response, and the ledger that proves every ID distinct.

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net/http"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"
)

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
	if rest, ok = bytes.CutPrefix(rest, []byte("]")); !ok {
		return d, false
	}
	if r, found := bytes.CutPrefix(rest, []byte(`,"recoveries":`)); found { // after a recovery (issue 24)
		if _, rest, ok = scanInt(r); !ok {
			return d, false
		}
	}
	rest, ok = bytes.CutPrefix(rest, []byte("}"))
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
