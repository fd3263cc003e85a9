package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/nodeid/nodeid/lease"
	"github.com/nodeid/nodeid/node"
	"github.com/nodeid/nodeid/nodeid"
)

// maxLeaseRows bounds the lease objects the table reads and shows.
const maxLeaseRows = 16

// screen writes the demo's output. It is safe for concurrent use. Escape
// codes are written only in live mode (redraw) and when color is set, both
// only on a terminal.
type screen struct {
	mu    sync.Mutex
	w     io.Writer
	color bool
}

// println writes one line.
func (s *screen) println(line string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	fmt.Fprintln(s.w, line)
}

// block writes lines at once, so that no other output comes in between.
func (s *screen) block(lines []string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	fmt.Fprint(s.w, strings.Join(lines, "\n")+"\n")
}

// clear clears the terminal.
func (s *screen) clear() {
	s.mu.Lock()
	defer s.mu.Unlock()
	fmt.Fprint(s.w, "\x1b[H\x1b[2J")
}

// redraw writes lines over the previous frame: cursor home, each line
// followed by clear-to-end-of-line, then clear below. Overwriting in place
// instead of clearing the screen first does not flicker.
func (s *screen) redraw(lines []string) {
	var b strings.Builder
	b.WriteString("\x1b[H")
	for _, l := range lines {
		b.WriteString(l)
		b.WriteString("\x1b[K\n")
	}
	b.WriteString("\x1b[J")
	s.mu.Lock()
	defer s.mu.Unlock()
	fmt.Fprint(s.w, b.String())
}

// ANSI colors of the table.
const (
	colorRed    = "31"
	colorGreen  = "32"
	colorYellow = "33"
	colorCyan   = "36"
	colorBold   = "1"
)

// paint colors text when colors are on.
func (s *screen) paint(code, text string) string {
	if !s.color || code == "" {
		return text
	}
	return "\x1b[" + code + "m" + text + "\x1b[0m"
}

// stateColor is the color of a broker or lease state.
func stateColor(state string) string {
	switch state {
	case node.StateHeld:
		return colorGreen
	case node.StateAcquiring, stateStopping, "expired":
		return colorYellow
	case stateKilled, node.StateLost, stateFailed, "missing", "unreadable":
		return colorRed
	case node.StateReleased, "free":
		return colorCyan
	}
	return ""
}

// isTerminal reports whether w is a character device (a terminal), without
// golang.org/x/term.
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	fi, err := f.Stat()
	return err == nil && fi.Mode()&os.ModeCharDevice != 0
}

// drawLive starts redrawing the live table every redraw interval, and at
// once after each event, until the returned function is called. That
// function draws the tables one last time and then prints every event as
// plain lines below them: the live view shows only the latest events that fit.
func (d *demo) drawLive(ctx context.Context) (stop func()) {
	d.mu.Lock()
	d.drawing = true
	d.mu.Unlock()
	d.out.clear()
	quit, done := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(done)
		tick := time.NewTicker(d.tl.redraw)
		defer tick.Stop()
		for {
			d.out.redraw(d.frame(ctx, true))
			select {
			case <-quit:
				return
			case <-ctx.Done():
				return
			case <-tick.C:
			case <-d.redraw:
			}
		}
	}()
	return func() {
		close(quit)
		<-done
		d.out.redraw(d.frame(context.WithoutCancel(ctx), false))
		d.mu.Lock()
		d.drawing = false
		events := append([]string{""}, d.events...)
		d.mu.Unlock()
		d.out.block(events)
	}
}

// frame is one screen of the live table: a header, the tables and, if
// withEvents, the latest events that fit the terminal.
func (d *demo) frame(ctx context.Context, withEvents bool) []string {
	var total int64
	for _, b := range d.brokerList() {
		total += b.issued.Load()
	}
	lines := []string{
		d.out.paint(colorBold, "nodeid demo") + fmt.Sprintf(" · embedded S3 (gofakes3) at %s · Ctrl-C stops", d.srv.URL()),
		fmt.Sprintf("%d node IDs · %v leases renewed every %v · %.0fs · %s IDs issued",
			d.opts.clusterSize, d.tl.lease, d.tl.renew, time.Since(d.began).Seconds(), commas(total)),
		"",
	}
	lines = append(lines, d.tables(ctx)...)
	var events []string
	if withEvents {
		lines = append(lines, "")
		d.mu.Lock()
		events = append(events, d.events...)
		d.mu.Unlock()
	}
	cols, rows := terminalSize(d.out.w)
	return fitScreen(lines, events, cols, rows)
}

// fitScreen fits a frame to a terminal of cols x rows (24 x 80 when
// unknown): lines are cut at the right edge, and events, word-wrapped, are
// added newest last for as long as they fit.
func fitScreen(lines, events []string, cols, rows int) []string {
	if cols <= 0 || rows <= 0 {
		cols, rows = 80, 24
	}
	rows-- // the cursor's line after the last
	out := make([]string, 0, rows)
	for _, l := range lines {
		if len(out) == rows {
			return out
		}
		out = append(out, cutVisible(l, cols-1))
	}
	var tail []string
	for i := len(events) - 1; i >= 0; i-- {
		w := wrap(events[i], cols-1, "         ")
		if len(out)+len(tail)+len(w) > rows {
			break
		}
		tail = append(w, tail...)
	}
	return append(out, tail...)
}

// cutVisible cuts s after n visible runes, not counting ANSI escapes.
func cutVisible(s string, n int) string {
	var b strings.Builder
	visible, escaped, inEscape := 0, false, false
	for _, r := range s {
		switch {
		case inEscape:
			inEscape = r != 'm'
		case r == '\x1b':
			inEscape, escaped = true, true
		case visible == n:
			if escaped {
				b.WriteString("\x1b[0m")
			}
			return b.String()
		default:
			visible++
		}
		b.WriteRune(r)
	}
	return b.String()
}

// wrap word-wraps s to width runes, indenting continuation lines.
func wrap(s string, width int, indent string) []string {
	var out []string
	line, first := "", true
	for _, w := range strings.Split(s, " ") { // not Fields: keep the stamp's padding
		switch {
		case first:
			line, first = w, false
		case utf8.RuneCountInString(line)+1+utf8.RuneCountInString(w) <= width:
			line += " " + w
		default:
			out = append(out, line)
			line = indent + w
		}
	}
	return append(out, line)
}

// printSnapshot prints the tables, indented, in plain mode.
func (d *demo) printSnapshot(ctx context.Context) {
	if d.isDrawing() {
		return
	}
	t := d.tables(ctx)
	for i := range t {
		if t[i] != "" {
			t[i] = "    " + t[i]
		}
	}
	d.out.block(append(t, ""))
}

// tables renders the brokers and the lease objects in the bucket.
func (d *demo) tables(ctx context.Context) []string {
	rows := d.bucket(ctx)
	byNode := map[int]leaseRow{}
	for _, r := range rows {
		byNode[r.node] = r
	}
	p := d.out.paint
	lines := []string{p(colorBold, fmt.Sprintf("%-7s %-10s %4s %7s %9s %12s  %s", "BROKER", "STATE", "NODE", "VERSION", "LEASE AGE", "IDS ISSUED", "NOTE"))}
	for _, b := range d.brokerList() {
		v := b.view()
		node, version, age := "-", "-", "-"
		if v.node >= 0 {
			node, version = strconv.Itoa(v.node), strconv.FormatInt(v.version, 10)
		}
		row, ok := byNode[v.node]
		mine := ok && v.node >= 0 && row.rec.Holder == v.name && row.rec.Version == v.version
		if mine && row.ageOK {
			age = fmt.Sprintf("%ds", int(row.age.Seconds()))
		}
		lines = append(lines, strings.TrimRight(fmt.Sprintf("%-7s %s %4s %7s %9s %12s  %s",
			v.name, p(stateColor(v.state), fmt.Sprintf("%-10s", v.state)), node, version, age, commas(v.issued), d.note(v, row, mine)), " "))
	}
	lines = append(lines, "", p(colorBold, "LEASES")+fmt.Sprintf(" in the bucket · ages on the store's clock · expired when older than %v",
		d.tl.expiresAfter()))
	lines = append(lines, p(colorBold, fmt.Sprintf("%-7s %-10s %-7s %7s %9s", "NODE", "STATE", "HOLDER", "VERSION", "AGE")))
	for _, r := range rows {
		holder, version, age, state := "-", "-", "-", r.state.String()
		switch {
		case errors.Is(r.err, lease.ErrNotFound):
			state = "missing"
		case r.err != nil:
			state = "unreadable"
		default:
			version = strconv.FormatInt(r.rec.Version, 10)
			if !r.rec.Free() {
				holder = r.rec.Holder
				if r.ageOK {
					age = fmt.Sprintf("%ds", int(r.age.Seconds()))
				}
			}
		}
		lines = append(lines, fmt.Sprintf("%-7d %s %-7s %7s %9s", r.node, p(stateColor(state), fmt.Sprintf("%-10s", state)), holder, version, age))
	}
	if d.opts.clusterSize > len(rows) {
		lines = append(lines, fmt.Sprintf("(and %d more)", d.opts.clusterSize-len(rows)))
	}
	return lines
}

// note explains a broker's row.
func (d *demo) note(v brokerView, row leaseRow, mine bool) string {
	switch v.state {
	case node.StateAcquiring:
		return "waiting for a free ID"
	case node.StateHeld:
		if v.skew > 0 {
			if v.issued == 0 {
				return fmt.Sprintf("clock %v behind: waiting", v.skew)
			}
			return fmt.Sprintf("clock %v behind", v.skew)
		}
		return ""
	case stateKilled:
		if mine {
			return "dead: lease not renewed"
		}
		if row.err == nil && row.rec.Holder != "" {
			return fmt.Sprintf("dead; %s took node %d", row.rec.Holder, v.node)
		}
		return "dead"
	case stateStopping:
		return "releasing its lease"
	case node.StateReleased:
		return "lease released"
	}
	if v.err != nil {
		return cutVisible(v.err.Error(), 60)
	}
	return ""
}

// leaseRow is one lease object as the table's own S3 client read it.
type leaseRow struct {
	node  int
	rec   lease.Record
	state lease.State
	age   time.Duration // on the store's clock
	ageOK bool
	err   error
}

// bucket reads the first lease objects.
func (d *demo) bucket(ctx context.Context) []leaseRow {
	rows := make([]leaseRow, min(d.opts.clusterSize, maxLeaseRows))
	for id := range rows {
		rows[id], _ = d.leaseRow(ctx, id)
	}
	return rows
}

// leaseRow reads the lease object of node and judges it as a broker would.
func (d *demo) leaseRow(ctx context.Context, node int) (leaseRow, bool) {
	ctx, cancel := context.WithTimeout(ctx, 2*d.tl.storeTimeout)
	defer cancel()
	row := leaseRow{node: node}
	body, meta, err := d.viewer.Get(ctx, lease.RecordKey(node))
	if err == nil {
		row.rec, err = lease.DecodeRecord(body, node)
	}
	if err != nil {
		row.err = err
		return row, false
	}
	row.state = lease.StateOf(&row.rec, meta, nodeid.DefaultLocalConfig().ClockMargin)
	row.age, row.ageOK = lease.StoreAge(meta.LastModified, meta.Date)
	return row, true
}

// commas formats n with thousands separators: 1,234,567.
func commas(n int64) string {
	s := strconv.FormatInt(n, 10)
	sign := ""
	if n < 0 {
		sign, s = "-", s[1:]
	}
	var b strings.Builder
	for i, c := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(c)
	}
	return sign + b.String()
}
