package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/nodeid/nodeid/cmd/nodeid-bench/internal/latproxy"
	"github.com/nodeid/nodeid/internal/ctxtime"
	"github.com/nodeid/nodeid/nodeid"
)

// Published S3 request prices used for the cost figures: S3 Standard, US East
// (N. Virginia), per 1,000 requests. LIST is billed with PUT, COPY and POST.
// Source: https://aws.amazon.com/s3/pricing/ ("Requests & data retrievals").
const (
	pricePutPer1000 = 0.005
	priceGetPer1000 = 0.0004
	hoursPerMonth   = 730
	priceSource     = "S3 Standard, US East (N. Virginia): PUT/COPY/POST/LIST $0.005 per 1,000, GET $0.0004 per 1,000 (https://aws.amazon.com/s3/pricing/); 730 h per month"
)

type steadyOpts struct {
	common
	keepAliveOpts
	nodes     int
	leases    string
	keepAlive string
	window    time.Duration
}

type steadyRow struct {
	// KeepAlive is the mode: write, or read with its timings.
	KeepAlive     keepAliveInfo `json:"keepAlive"`
	LeaseDuration ms            `json:"leaseDurationMs"`
	RenewInterval ms            `json:"renewIntervalMs"`
	Nodes         int           `json:"nodes"`
	Window        ms            `json:"windowMs"`
	// Window counts, all nodes together.
	Requests opCounts       `json:"requests"`
	ByStatus map[string]int `json:"byStatus"`
	// MeanPutInterval is the mean time between two successful writes of one
	// node (its take included), the later one sent inside the window.
	MeanPutInterval ms `json:"meanPutIntervalMs"`
	// PutIntervals is how many such intervals the mean is of.
	PutIntervals int `json:"putIntervals"`
	// PutsPerRenewInterval is RenewInterval / MeanPutInterval times the PUTs per
	// renewal (1 when every renewal is one PUT).
	PutsPerRenewInterval float64 `json:"putsPerRenewInterval"`
	// Per node per hour: PUTs from the mean interval (times the PUTs per
	// renewal), GETs and LISTs counted in the window.
	PutPerHour float64 `json:"putPerNodeHour"`
	// PutCountedPerHour is the PUTs counted in the window per node-hour: a
	// check on PutPerHour (it undercounts when the window is not a whole
	// number of renew intervals).
	PutCountedPerHour float64 `json:"putCountedPerNodeHour"`
	GetPerHour        float64 `json:"getPerNodeHour"`
	ListPerHour       float64 `json:"listPerNodeHour"`
	// CostPerMonth is the request cost of one node for a month, USD.
	CostPerMonth float64 `json:"usdPerNodeMonth"`
}

type steadyReport struct {
	header
	Prices  string      `json:"prices"`
	Rows    []steadyRow `json:"rows"`
	Targets []target    `json:"targets,omitempty"`
}

func runSteady(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	var o steadyOpts
	fs := flag.NewFlagSet("nodeid-bench steady", flag.ContinueOnError)
	addCommon(fs, &o.common)
	fs.IntVar(&o.nodes, "nodes", 4, "holding nodes per lease duration")
	fs.StringVar(&o.leases, "lease-durations", "5s,15s,60s", "write mode: lease durations, comma-separated, measured side by side (renew interval = lease/3)")
	fs.StringVar(&o.keepAlive, "keepalive", "write", "keep-alive modes measured side by side, comma-separated: write (one group per --lease-durations), read (one group: --read-window, --backstop, --backstop-interval, --poll-interval)")
	addKeepAliveFlags(fs, &o.keepAliveOpts)
	fs.DurationVar(&o.window, "window", 0, "measurement window after every node holds (0: 3 renew intervals of the longest lease + 1s; in read mode at least one backstop interval + 2 poll intervals + 1s)")
	if code, ok := parseFlags(fs, args, stdout, stderr); !ok {
		return code
	}
	leases, read, err := steadyGroups(o)
	if err != nil {
		fmt.Fprintf(stderr, "nodeid-bench steady: %v\n", err)
		return 2
	}
	if o.window == 0 {
		o.window = defaultSteadyWindow(leases, read)
	}
	_, code := runOnBackend(ctx, "steady", o.common, true, stdout, stderr,
		func(b *backend) (*steadyReport, error) { return steady(ctx, b, o, leases, read, args) }, printSteady)
	return code
}

// steadyGroups parses the modes and lease durations: the write-mode leases
// (none without write) and, with read, read mode's derived timings.
func steadyGroups(o steadyOpts) (leases []time.Duration, read *nodeid.Timings, err error) {
	for m := range strings.SplitSeq(o.keepAlive, ",") {
		switch strings.TrimSpace(m) {
		case "write":
			if leases != nil {
				return nil, nil, fmt.Errorf("--keepalive %q names write twice", o.keepAlive)
			}
			for s := range strings.SplitSeq(o.leases, ",") {
				d, err := time.ParseDuration(strings.TrimSpace(s))
				if err != nil || d < 3*time.Second || d > 60*time.Second {
					return nil, nil, fmt.Errorf("lease duration %q: want 3s..60s", s)
				}
				leases = append(leases, d)
			}
		case "read":
			if read != nil {
				return nil, nil, fmt.Errorf("--keepalive %q names read twice", o.keepAlive)
			}
			cfg, err := o.keepAliveOpts.derived()
			if err != nil {
				return nil, nil, fmt.Errorf("read mode: %w", err)
			}
			read = &cfg
		default:
			return nil, nil, fmt.Errorf("--keepalive %q: want write, read or write,read", o.keepAlive)
		}
	}
	return leases, read, nil
}

// defaultSteadyWindow is 3 renew intervals of the longest write-mode lease
// and, in read mode, one backstop interval plus two poll intervals (so that
// each node's take-to-backstop interval is measured) + 1 s.
func defaultSteadyWindow(leases []time.Duration, read *nodeid.Timings) time.Duration {
	var w time.Duration
	if len(leases) > 0 {
		w = slices.Max(leases) + time.Second // 3 renew intervals of lease/3
	}
	if read != nil {
		w = max(w, read.RenewInterval+2*read.PollInterval+time.Second)
	}
	return w
}

// steadyGroup is the nodes of one mode and lease, on a prefix of their own.
type steadyGroup struct {
	label string // the requests' label prefix, "steady-15s/"
	info  keepAliveInfo
	lease time.Duration // the lease records state (the backstop in read mode)
	renew time.Duration // between two writes
	cfg   func(task string) nodeid.Config
}

func steady(ctx context.Context, b *backend, o steadyOpts, leases []time.Duration, read *nodeid.Timings, args []string) (*steadyReport, error) {
	rep := &steadyReport{header: newHeader("steady", b, args), Prices: priceSource}
	var groups []steadyGroup
	for _, l := range leases {
		groups = append(groups, steadyGroup{label: "steady-" + l.String() + "/", info: keepAliveInfo{Mode: string(nodeid.KeepAliveWrite)},
			lease: l, renew: l / 3, cfg: func(task string) nodeid.Config {
				cfg := nodeid.DefaultConfig()
				cfg.TaskID, cfg.ClusterSize = task, 16
				cfg.LeaseDuration, cfg.RenewInterval, cfg.RenewDeadline = l, l/3, l*2/3
				return cfg
			}})
	}
	if read != nil {
		info, err := readInfo(ctx, b, o.keepAliveOpts)
		if err != nil {
			return nil, err
		}
		groups = append(groups, steadyGroup{label: "steady-read/", info: info, lease: read.Backstop, renew: read.RenewInterval,
			cfg: func(task string) nodeid.Config {
				cfg := nodeid.DefaultConfig()
				cfg.TaskID, cfg.ClusterSize = task, 16
				o.keepAliveOpts.apply(&cfg)
				return cfg
			}})
	}
	var claims []*nodeid.Claim
	defer func() {
		_ = parallel(len(claims), 16, func(i int) error {
			cctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			_ = claims[i].Close(cctx)
			return nil
		})
	}()
	for _, g := range groups {
		prefix := b.prefix(strings.TrimSuffix(g.label, "/"))
		for i := range o.nodes {
			name := fmt.Sprintf("%s%d", g.label, i)
			t, err := b.newTask(ctx, name, prefix)
			if err != nil {
				return nil, err
			}
			p, err := nodeid.New(t.store, g.cfg(fmt.Sprintf("bench-%d-%s-%d", o.seed, strings.TrimSuffix(g.label, "/"), i)))
			if err != nil {
				return nil, err
			}
			c, err := p.Acquire(ctx)
			if err != nil {
				return nil, err
			}
			t.setPhase("hold")
			claims = append(claims, c)
		}
	}
	before := b.meter.Counts()
	from := time.Now()
	if err := ctxtime.Sleep(ctx, o.window); err != nil {
		return nil, err
	}
	to := time.Now()
	window := b.meter.Counts().Sub(before)
	events := b.meter.Events()
	for _, g := range groups {
		row, tgts := steadyRowOf(g, o.nodes, window, events, from, to)
		rep.Rows = append(rep.Rows, row)
		rep.Targets = append(rep.Targets, tgts...)
	}
	return rep, nil
}

// readCostTarget is issue 36's target for read mode at W = 15 s and the
// default backstop, every request counted: USD per node-month.
const readCostTarget = 0.25

// steadyRowOf measures one group from the window's counts and the proxy's
// events: requests in the window, the mean interval between two successful
// writes of one node (its take included: in read mode a window of one
// backstop interval holds one backstop write per node), and the cost.
func steadyRowOf(g steadyGroup, nodes int, window latproxy.Counts, events []latproxy.Event, from, to time.Time) (steadyRow, []target) {
	counts := window.Where(func(k latproxy.Key) bool { return strings.HasPrefix(k.Label, g.label) })
	row := steadyRow{KeepAlive: g.info, LeaseDuration: toMS(g.lease), RenewInterval: toMS(g.renew), Nodes: nodes, Window: toMS(to.Sub(from)),
		Requests: countOps(counts), ByStatus: counts.ByStatus()}
	// Write intervals: consecutive successful writes of one node (the take,
	// by create or CAS, and every renewal), the later one sent in the window.
	writes := map[string][]time.Time{}
	for _, e := range events {
		if strings.HasPrefix(e.Label, g.label) && (e.Op == latproxy.OpUpdate || e.Op == latproxy.OpCreate) && e.Status == 200 && e.Sent.Before(to) {
			node := e.Label[:strings.LastIndexByte(e.Label, '/')]
			writes[node] = append(writes[node], e.Sent)
		}
	}
	var sum time.Duration
	for _, ts := range writes {
		slices.SortFunc(ts, func(a, b time.Time) int { return a.Compare(b) })
		for i := 1; i < len(ts); i++ {
			if !ts[i].Before(from) {
				sum += ts[i].Sub(ts[i-1])
				row.PutIntervals++
			}
		}
	}
	hours := to.Sub(from).Hours() * float64(nodes)
	if row.PutIntervals > 0 {
		mean := sum / time.Duration(row.PutIntervals)
		row.MeanPutInterval = toMS(mean)
		putsPerRenewal := float64(row.Requests.Update) / float64(max(1, row.Requests.Update-countRetries(counts)))
		row.PutsPerRenewInterval = float64(g.renew) / float64(mean) * putsPerRenewal
		row.PutPerHour = float64(time.Hour) / float64(mean) * putsPerRenewal
	}
	if hours > 0 {
		row.PutCountedPerHour = float64(row.Requests.Update) / hours
		row.GetPerHour = float64(row.Requests.Get) / hours
		row.ListPerHour = float64(row.Requests.List+row.Requests.Create+row.Requests.Other) / hours
	}
	row.CostPerMonth = hoursPerMonth * ((row.PutPerHour+row.ListPerHour)*pricePutPer1000 + row.GetPerHour*priceGetPer1000) / 1000
	onePut := row.PutsPerRenewInterval > 0.97 && row.PutsPerRenewInterval <= 1.0001 && countRetries(counts) == 0
	if g.info.Mode != string(nodeid.KeepAliveRead) {
		exact := row.Requests.Get == 0 && row.Requests.List == 0 && row.Requests.Create == 0 && row.Requests.Other == 0 && onePut
		return row, []target{{
			What:   fmt.Sprintf("steady (lease %v): requests per node per renew interval", g.lease),
			Target: "exactly 1 PUT, no GET or LIST",
			Measured: fmt.Sprintf("%.3f PUT (%d PUTs in %d node-windows of %v; mean interval %vms), %d GET, %d LIST",
				row.PutsPerRenewInterval, row.Requests.Update, nodes, to.Sub(from).Round(time.Millisecond), row.MeanPutInterval,
				row.Requests.Get, row.Requests.List),
			Met: exact,
		}}
	}
	poll := dur(g.info.PollInterval)
	wantGets := float64(time.Hour) / float64(poll)
	note := ""
	if g.info.Window != toMS(nodeid.DefaultWindow) || g.info.Backstop != toMS(nodeid.DefaultBackstop) {
		note = "target is for W = 15s and the default backstop"
	}
	return row, []target{
		{
			What:   fmt.Sprintf("steady read mode (W %v, backstop %v): requests per node", dur(g.info.Window), g.lease),
			Target: fmt.Sprintf("1 PUT per backstop interval (%v), 1 GET per poll interval (%v), no LIST", g.renew, poll),
			Measured: fmt.Sprintf("%.3f PUT per backstop interval (%d intervals, mean %vms), %.0f GET per node-hour (%.0f at one a poll), %d LIST",
				row.PutsPerRenewInterval, row.PutIntervals, row.MeanPutInterval, row.GetPerHour, wantGets, row.Requests.List),
			Met: onePut && row.Requests.List == 0 && row.Requests.Create == 0 && row.Requests.Other == 0 &&
				row.GetPerHour <= wantGets*1.02 && row.GetPerHour >= wantGets*0.9,
		},
		{
			What:     fmt.Sprintf("steady read mode (W %v, backstop %v): USD per node-month, every request counted", dur(g.info.Window), g.lease),
			Target:   fmt.Sprintf("<= $%.2f", readCostTarget),
			Measured: fmt.Sprintf("$%.3f (PUT $%.3f, GET $%.3f)", row.CostPerMonth, hoursPerMonth*row.PutPerHour*pricePutPer1000/1000, hoursPerMonth*row.GetPerHour*priceGetPer1000/1000),
			Met:      row.CostPerMonth <= readCostTarget,
			Note:     note,
		},
	}
}

// countRetries returns the PUT-updates that did not succeed (retried renewals).
func countRetries(c latproxy.Counts) int {
	n := 0
	for k, v := range c {
		if k.Op == latproxy.OpUpdate && k.Status != 200 {
			n += v
		}
	}
	return n
}

func printSteady(w io.Writer, r *steadyReport) {
	printHeader(w, r.header)
	fmt.Fprintf(w, "prices: %s\n\n", r.Prices)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "mode\tlease\trenew\tnodes\twindow\tPUT\tGET\tLIST\tmean PUT interval\tPUT per renew interval\tPUT/node/h\tGET/node/h\tLIST/node/h\tUSD/node/month\t")
	for _, x := range r.Rows {
		mode := x.KeepAlive.Mode
		if mode == string(nodeid.KeepAliveRead) {
			mode = fmt.Sprintf("read W %v P %v", dur(x.KeepAlive.Window), dur(x.KeepAlive.PollInterval))
		}
		fmt.Fprintf(tw, "%s\t%vms\t%vms\t%d\t%vms\t%d\t%d\t%d\t%vms\t%.3f\t%.0f\t%.0f\t%.0f\t%s\t\n", mode, x.LeaseDuration, x.RenewInterval, x.Nodes,
			x.Window, x.Requests.Update, x.Requests.Get, x.Requests.List, x.MeanPutInterval, x.PutsPerRenewInterval,
			x.PutPerHour, x.GetPerHour, x.ListPerHour, strconv.FormatFloat(x.CostPerMonth, 'f', 3, 64))
	}
	_ = tw.Flush()
	for _, x := range r.Rows {
		if x.KeepAlive.Mode == string(nodeid.KeepAliveRead) {
			fmt.Fprintf(w, "\n%s; PUT counted in the window: %.1f per node-hour; by status: %s\n", x.KeepAlive, x.PutCountedPerHour, statusMap(x.ByStatus))
		}
	}
	printTargets(w, r.Targets)
}
