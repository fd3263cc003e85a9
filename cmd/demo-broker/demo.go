package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strconv"
	"sync"
	"time"

	"github.com/nodeid/nodeid/lease"
	"github.com/nodeid/nodeid/node"
	"github.com/nodeid/nodeid/nodeid"
	"github.com/nodeid/nodeid/s3store/s3fake"
	"github.com/nodeid/nodeid/snowflake"
)

// demoOptions are the flags of "demo-broker demo".
type demoOptions struct {
	brokers     int
	clusterSize int
	fast        bool
	noColor     bool
	plain       bool
}

const demoUsage = `Usage: demo-broker demo [flags]

A self-contained local demo: several brokers lease node IDs from an embedded S3
(gofakes3, in process, on 127.0.0.1), issue Snowflake IDs continuously, and
survive a broker killed abruptly and two stopped gracefully. At the end every
ID issued is checked unique. "demo-broker" with no arguments runs it with the
defaults. Exit status: 0 when it ran as scripted and no ID repeats, 1
otherwise, 2 for bad flags, 130 when interrupted.

Flags:
`

// parseDemoFlags parses args. ok is false when the program should exit with code.
func parseDemoFlags(args []string, stderr io.Writer) (opts demoOptions, code int, ok bool) {
	fs := flag.NewFlagSet("demo", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprint(fs.Output(), demoUsage)
		fs.PrintDefaults()
	}
	fs.IntVar(&opts.brokers, "brokers", 4, "number of brokers started at first (1..32)")
	fs.IntVar(&opts.clusterSize, "cluster-size", 0, "number of node IDs (0: as many as brokers, so a replacement must wait for an ID to come free)")
	fs.BoolVar(&opts.fast, "fast", false, "short timeline (1s leases, about 7 s in all) instead of about 30 s")
	fs.BoolVar(&opts.noColor, "no-color", false, "no colors (also when NO_COLOR is set)")
	fs.BoolVar(&opts.plain, "plain", false, "print snapshots at each event instead of a live table, even on a terminal")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return opts, 0, false
		}
		return opts, 2, false
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "demo-broker demo: unexpected argument %q\n", fs.Arg(0))
		return opts, 2, false
	}
	if opts.clusterSize == 0 {
		opts.clusterSize = opts.brokers
	}
	switch {
	case opts.brokers < 1 || opts.brokers > 32:
		fmt.Fprintf(stderr, "demo-broker demo: --brokers %d outside 1..32\n", opts.brokers)
		return opts, 2, false
	case opts.clusterSize < opts.brokers || opts.clusterSize > 1024:
		fmt.Fprintf(stderr, "demo-broker demo: --cluster-size %d outside %d (--brokers)..1024\n", opts.clusterSize, opts.brokers)
		return opts, 2, false
	}
	return opts, 0, true
}

// timeline sets the pace of the show and the lease timings.
type timeline struct {
	lease, renew, renewDeadline    time.Duration // nodeid.Config
	safety, storeTimeout           time.Duration
	acquireBackoff, acquireTimeout time.Duration
	warmup                         time.Duration // brokers issue IDs this long before the first event
	settle                         time.Duration // pause after each event's outcome
	skew                           time.Duration // how far the last replacement's wall clock is behind
	redraw                         time.Duration // live table refresh
	pace                           time.Duration // between two NextN calls of one broker
	batch                          int           // IDs asked of each NextN
}

// normalTimeline is the default show, about 30 s: the leases of
// nodeid.DefaultLocalConfig (3 s, renewed every second).
func normalTimeline() timeline {
	c := nodeid.DefaultLocalConfig()
	if err := c.Validate(); err != nil {
		panic(err)
	}
	t := c.Timings() // StoreTimeout derived
	return timeline{
		lease: t.Lease, renew: t.RenewInterval, renewDeadline: t.RenewDeadline,
		safety: t.SafetyMargin, storeTimeout: t.StoreTimeout,
		acquireBackoff: c.AcquireBackoff, acquireTimeout: 20 * time.Second,
		warmup: 6 * time.Second, settle: 5 * time.Second, skew: 3 * time.Second,
		redraw: 500 * time.Millisecond, pace: 5 * time.Millisecond, batch: 1000,
	}
}

// shortTimeline is --fast: 1 s leases, about 7 s in all (the test's).
func shortTimeline() timeline {
	return timeline{
		lease: time.Second, renew: 250 * time.Millisecond, renewDeadline: 750 * time.Millisecond,
		safety: 250 * time.Millisecond, storeTimeout: 130 * time.Millisecond, // three attempts fit in the 500 ms renewal window
		acquireBackoff: 50 * time.Millisecond, acquireTimeout: 10 * time.Second,
		warmup: time.Second, settle: 500 * time.Millisecond, skew: time.Second,
		redraw: 500 * time.Millisecond, pace: 5 * time.Millisecond, batch: 1000,
	}
}

// expiresAfter is the age on the store's clock past which another broker
// judges a lease expired (lease.Expired): the lease, plus the whole-second
// resolution of the store's clock, plus nodeid's clock margin.
func (t timeline) expiresAfter() time.Duration {
	return t.lease + lease.StoreClockResolution + nodeid.DefaultLocalConfig().ClockMargin
}

// demoPrefix is the key prefix of the demo's lease objects.
const demoPrefix = "nodeid/"

// demo is one run of the show.
type demo struct {
	opts   demoOptions
	tl     timeline
	out    *screen
	srv    *s3fake.Server
	viewer lease.Store // the table's own S3 client
	began  time.Time

	mu       sync.Mutex
	brokers  []*demoBroker
	subjects map[*demoBroker]bool // brokers an event already stopped or killed
	events   []string
	drawing  bool          // a live table is on screen
	redraw   chan struct{} // asks the live table to redraw now
}

// runDemo runs the local demo (see demoUsage) and returns the exit code.
func runDemo(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	opts, code, ok := parseDemoFlags(args, stderr)
	if !ok {
		return code
	}
	tl := normalTimeline()
	if opts.fast {
		tl = shortTimeline()
	}
	term := isTerminal(stdout) && os.Getenv("TERM") != "dumb"
	out := &screen{w: stdout, color: term && !opts.noColor && os.Getenv("NO_COLOR") == ""}

	srv, err := s3fake.Start(s3fake.Config{})
	if err != nil {
		fmt.Fprintf(stderr, "demo-broker: embedded S3: %v\n", err)
		return 1
	}
	defer srv.Close()
	viewer, err := newDemoStore(srv, demoPrefix, tl.storeTimeout)
	if err != nil {
		fmt.Fprintf(stderr, "demo-broker: %v\n", err)
		return 1
	}
	d := &demo{
		opts: opts, tl: tl, out: out, srv: srv, viewer: viewer, began: time.Now(),
		subjects: map[*demoBroker]bool{}, redraw: make(chan struct{}, 1),
	}
	out.println(fmt.Sprintf("Embedded S3 (gofakes3) listening on %s, bucket %q, prefix %q: no cloud, nothing to set up.",
		srv.URL(), srv.Bucket(), demoPrefix))
	out.println(fmt.Sprintf("%s share a cluster of %s, with %v leases renewed every %v; each issues Snowflake IDs without pause.",
		plural(opts.brokers, "broker"), plural(opts.clusterSize, "node ID"), tl.lease, tl.renew))

	stopDrawing := func() {}
	if term && !opts.plain {
		stopDrawing = d.drawLive(ctx)
	}
	showErr := d.show(ctx)
	stopDrawing()
	interrupted := ctx.Err() != nil

	// Clean up with a context of our own: ctx may be canceled (Ctrl-C).
	if interrupted {
		d.event("Interrupted: every live broker stops gracefully and releases its lease.")
	} else {
		d.event("The end: every live broker stops gracefully and releases its lease.")
	}
	cleanCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 2*tl.lease)
	released, relErr := d.shutdown(cleanCtx)
	cancel()
	d.printSnapshot(context.WithoutCancel(ctx))
	if err := srv.Close(); err != nil {
		fmt.Fprintf(stderr, "demo-broker: stop the embedded S3: %v\n", err)
	}
	out.println(fmt.Sprintf("Released %s and stopped the embedded S3.", plural(released, "lease")))

	rep := d.check()
	d.printCheck(rep)
	switch {
	case !rep.OK():
		return 1
	case interrupted:
		fmt.Fprintln(stderr, "demo-broker: interrupted")
		return 130
	case showErr != nil:
		fmt.Fprintf(stderr, "demo-broker: the demo did not go as scripted: %v\n", showErr)
		return 1
	case relErr != nil:
		fmt.Fprintf(stderr, "demo-broker: %v\n", relErr)
		return 1
	}
	return 0
}

// shutdown ends every broker (releasing the live ones' leases, concurrently)
// and returns how many leases were released.
func (d *demo) shutdown(ctx context.Context) (int, error) {
	brokers := d.brokerList()
	errs := make([]error, len(brokers))
	releases := make([]bool, len(brokers))
	var wg sync.WaitGroup
	for i, b := range brokers {
		wg.Go(func() {
			releases[i] = b.getState() == node.StateHeld
			errs[i] = b.shutdown(ctx)
		})
	}
	wg.Wait()
	n := 0
	for i, ok := range releases {
		if ok && errs[i] == nil {
			n++
		}
	}
	return n, errors.Join(errs...)
}

// check runs the uniqueness check over every broker's IDs; call it after
// shutdown (the issuing goroutines have ended).
func (d *demo) check() checkReport {
	var streams []*idStream
	for _, b := range d.brokerList() {
		<-b.done
		if b.stream.node >= 0 {
			streams = append(streams, &b.stream)
		}
	}
	return checkIDs(snowflake.DefaultLayout(), streams)
}

// printCheck prints the outcome of the check and the final line.
func (d *demo) printCheck(rep checkReport) {
	brokers := len(d.brokerList())
	for _, p := range rep.Problems {
		d.out.println("  " + p)
	}
	switch {
	case rep.Repeated > 0:
		d.out.println(fmt.Sprintf("DUPLICATE IDS: %s of %s IDs issued on %s were issued more than once.",
			commas(rep.Repeated), commas(rep.IDs), plural(brokers, "broker")))
	case !rep.OK():
		d.out.println(fmt.Sprintf("CHECK FAILED: %s IDs issued on %s; no ID repeats, but the handover rules were broken (above).",
			commas(rep.IDs), plural(brokers, "broker")))
	default:
		d.out.println(fmt.Sprintf("Checked %s batches: each broker's IDs increase, each node ID's holders follow one another "+
			"(the last ID of version v is below the first of version v+1), and no two batches overlap.", commas(int64(rep.Batches))))
		d.out.println(fmt.Sprintf("issued %s IDs on %s; none repeat", commas(rep.IDs), plural(brokers, "broker")))
	}
}

// event records a caption: printed at once in plain mode, added to the event
// list of the live table otherwise.
func (d *demo) event(format string, args ...any) {
	line := d.stamp() + " " + fmt.Sprintf(format, args...)
	d.mu.Lock()
	d.events = append(d.events, line)
	drawing := d.drawing
	d.mu.Unlock()
	if !drawing {
		d.out.println(line)
		return
	}
	select {
	case d.redraw <- struct{}{}:
	default:
	}
}

// stamp is the time since the start, as "[ 12.3s]".
func (d *demo) stamp() string {
	return fmt.Sprintf("[%5.1fs]", time.Since(d.began).Seconds())
}

func (d *demo) isDrawing() bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.drawing
}

// plural returns "1 broker", "2 brokers".
func plural(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return strconv.Itoa(n) + " " + noun + "s"
}
