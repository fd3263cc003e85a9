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
	nodes  int
	leases string
	window time.Duration
}

type steadyRow struct {
	LeaseDuration ms  `json:"leaseDurationMs"`
	RenewInterval ms  `json:"renewIntervalMs"`
	Nodes         int `json:"nodes"`
	Window        ms  `json:"windowMs"`
	// Window counts, all nodes together.
	Requests opCounts       `json:"requests"`
	ByStatus map[string]int `json:"byStatus"`
	// MeanPutInterval is the mean time between two renewals of one node.
	MeanPutInterval ms `json:"meanPutIntervalMs"`
	// PutsPerRenewInterval is RenewInterval / MeanPutInterval times the PUTs per
	// renewal (1 when every renewal is one PUT).
	PutsPerRenewInterval float64 `json:"putsPerRenewInterval"`
	// Per node per hour, extrapolated from the window.
	PutPerHour  float64 `json:"putPerNodeHour"`
	GetPerHour  float64 `json:"getPerNodeHour"`
	ListPerHour float64 `json:"listPerNodeHour"`
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
	fs.StringVar(&o.leases, "lease-durations", "5s,15s,60s", "lease durations, comma-separated, measured side by side (renew interval = lease/3)")
	fs.DurationVar(&o.window, "window", 0, "measurement window after every node holds (0: 3 renew intervals of the longest lease + 1s)")
	if code, ok := parseFlags(fs, args, stdout, stderr); !ok {
		return code
	}
	var leases []time.Duration
	for _, s := range strings.Split(o.leases, ",") {
		d, err := time.ParseDuration(strings.TrimSpace(s))
		if err != nil || d < 3*time.Second || d > 60*time.Second {
			fmt.Fprintf(stderr, "nodeid-bench steady: lease duration %q: want 3s..60s\n", s)
			return 2
		}
		leases = append(leases, d)
	}
	if o.window == 0 {
		o.window = slices.Max(leases) + time.Second // 3 renew intervals of lease/3
	}
	_, code := runOnBackend(ctx, "steady", o.common, true, stdout, stderr,
		func(b *backend) (*steadyReport, error) { return steady(ctx, b, o, leases, args) }, printSteady)
	return code
}

func steady(ctx context.Context, b *backend, o steadyOpts, leases []time.Duration, args []string) (*steadyReport, error) {
	rep := &steadyReport{header: newHeader("steady", b, args), Prices: priceSource}
	var claims []*nodeid.Claim
	defer func() {
		_ = parallel(len(claims), 16, func(i int) error {
			cctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			_ = claims[i].Close(cctx)
			return nil
		})
	}()
	for _, l := range leases {
		prefix := b.prefix("steady-" + l.String())
		for i := range o.nodes {
			name := fmt.Sprintf("steady-%s/%d", l, i)
			t, err := b.newTask(ctx, name, prefix)
			if err != nil {
				return nil, err
			}
			cfg := nodeid.DefaultConfig()
			cfg.TaskID, cfg.ClusterSize = fmt.Sprintf("bench-%d-steady-%s-%d", o.seed, l, i), 16
			cfg.LeaseDuration, cfg.RenewInterval, cfg.RenewDeadline = l, l/3, l*2/3
			p, err := nodeid.New(t.store, cfg)
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
	for _, l := range leases {
		ri := l / 3
		group := "steady-" + l.String() + "/"
		counts := window.Where(func(k latproxy.Key) bool { return strings.HasPrefix(k.Label, group) })
		row := steadyRow{LeaseDuration: toMS(l), RenewInterval: toMS(ri), Nodes: o.nodes, Window: toMS(to.Sub(from)),
			Requests: countOps(counts), ByStatus: counts.ByStatus()}
		// Renewal intervals: consecutive successful PUT-updates of one node,
		// answered inside the window.
		puts := map[string][]time.Time{}
		for _, e := range events {
			if strings.HasPrefix(e.Label, group) && e.Op == latproxy.OpUpdate && e.Status == 200 && !e.Sent.Before(from) && e.Sent.Before(to) {
				puts[e.Label] = append(puts[e.Label], e.Sent)
			}
		}
		var sum time.Duration
		var n int
		for _, ts := range puts {
			for i := 1; i < len(ts); i++ {
				sum += ts[i].Sub(ts[i-1])
				n++
			}
		}
		hours := to.Sub(from).Hours() * float64(o.nodes)
		if n > 0 {
			mean := sum / time.Duration(n)
			row.MeanPutInterval = toMS(mean)
			putsPerRenewal := float64(row.Requests.Update) / float64(max(1, row.Requests.Update-countRetries(counts)))
			row.PutsPerRenewInterval = float64(ri) / float64(mean) * putsPerRenewal
			row.PutPerHour = float64(time.Hour) / float64(mean) * putsPerRenewal
		}
		row.GetPerHour = float64(row.Requests.Get) / hours
		row.ListPerHour = float64(row.Requests.List+row.Requests.Create) / hours
		row.CostPerMonth = hoursPerMonth * ((row.PutPerHour+row.ListPerHour)*pricePutPer1000 + row.GetPerHour*priceGetPer1000) / 1000
		rep.Rows = append(rep.Rows, row)
		exact := row.Requests.Get == 0 && row.Requests.List == 0 && row.Requests.Create == 0 && row.Requests.Other == 0 &&
			row.PutsPerRenewInterval > 0.97 && row.PutsPerRenewInterval <= 1.0001 && countRetries(counts) == 0
		rep.Targets = append(rep.Targets, target{
			What:   fmt.Sprintf("steady (lease %v): requests per node per renew interval", l),
			Target: "exactly 1 PUT, no GET or LIST",
			Measured: fmt.Sprintf("%.3f PUT (%d PUTs in %d node-windows of %v; mean interval %vms), %d GET, %d LIST",
				row.PutsPerRenewInterval, row.Requests.Update, o.nodes, to.Sub(from).Round(time.Millisecond), row.MeanPutInterval,
				row.Requests.Get, row.Requests.List),
			Met: exact,
		})
	}
	return rep, nil
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
	fmt.Fprintln(tw, "lease\trenew\tnodes\twindow\tPUT\tGET\tLIST\tmean PUT interval\tPUT per renew interval\tPUT/node/h\tGET/node/h\tLIST/node/h\tUSD/node/month\t")
	for _, x := range r.Rows {
		fmt.Fprintf(tw, "%vms\t%vms\t%d\t%vms\t%d\t%d\t%d\t%vms\t%.3f\t%.0f\t%.0f\t%.0f\t%s\t\n", x.LeaseDuration, x.RenewInterval, x.Nodes,
			x.Window, x.Requests.Update, x.Requests.Get, x.Requests.List, x.MeanPutInterval, x.PutsPerRenewInterval,
			x.PutPerHour, x.GetPerHour, x.ListPerHour, strconv.FormatFloat(x.CostPerMonth, 'f', 3, 64))
	}
	_ = tw.Flush()
	printTargets(w, r.Targets)
}
