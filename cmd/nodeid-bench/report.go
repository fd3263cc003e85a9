package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"os"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/nodeid/nodeid/cmd/nodeid-bench/internal/latproxy"
)

// ms is a duration in milliseconds for JSON output.
type ms float64

func toMS(d time.Duration) ms { return ms(math.Round(float64(d)/float64(time.Millisecond)*10) / 10) }

// durations summarises a sample of durations.
type durations struct {
	P50 ms `json:"p50Ms"`
	P99 ms `json:"p99Ms"`
	Max ms `json:"maxMs"`
}

// summarize returns the nearest-rank p50, p99 and the maximum of ds.
func summarize(ds []time.Duration) durations {
	if len(ds) == 0 {
		return durations{}
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	rank := func(p float64) time.Duration {
		i := int(math.Ceil(p*float64(len(s)))) - 1
		return s[max(0, min(i, len(s)-1))]
	}
	return durations{P50: toMS(rank(0.50)), P99: toMS(rank(0.99)), Max: toMS(s[len(s)-1])}
}

// opCounts is the number of requests per operation, in report order.
type opCounts struct {
	List   int `json:"LIST"`
	Get    int `json:"GET"`
	Create int `json:"PUT-create"`
	Update int `json:"PUT-update"`
	Other  int `json:"other"`
	Total  int `json:"total"`
}

func countOps(c latproxy.Counts) opCounts {
	by := c.ByOp()
	o := opCounts{List: by[latproxy.OpList], Get: by[latproxy.OpGet], Create: by[latproxy.OpCreate],
		Update: by[latproxy.OpUpdate], Other: by[latproxy.OpOther]}
	o.Total = o.List + o.Get + o.Create + o.Update + o.Other
	return o
}

func (o opCounts) String() string {
	s := fmt.Sprintf("LIST %d, GET %d, PUT-create %d, PUT-update %d", o.List, o.Get, o.Create, o.Update)
	if o.Other > 0 {
		s += fmt.Sprintf(", other %d", o.Other)
	}
	return s
}

// statusString formats counts by operation and status, e.g. "PUT-create 200: 3".
func statusString(c latproxy.Counts) string {
	by := c.ByStatus()
	keys := make([]string, 0, len(by))
	for k := range by {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = fmt.Sprintf("%s: %d", k, by[k])
	}
	return strings.Join(parts, ", ")
}

// target is one issue-7 target and whether a run met it.
type target struct {
	What     string `json:"what"`
	Target   string `json:"target"`
	Measured string `json:"measured"`
	Met      bool   `json:"met"`
	// Note says when the run's conditions differ from the target's.
	Note string `json:"note,omitempty"`
}

func printTargets(w io.Writer, ts []target) {
	if len(ts) == 0 {
		return
	}
	fmt.Fprintln(w)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "target\tissue 7\tmeasured\tmet")
	for _, t := range ts {
		met := "yes"
		if !t.Met {
			met = "NO"
		}
		if t.Note != "" {
			met += " (" + t.Note + ")"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", t.What, t.Target, t.Measured, met)
	}
	_ = tw.Flush()
}

// emit prints a report as a table (or JSON with --json) and writes its JSON to
// --json-out when given.
func emit(stdout io.Writer, c common, rep any, table func()) error {
	if c.json {
		if err := writeJSON(stdout, rep); err != nil {
			return err
		}
	} else {
		table()
	}
	if c.jsonOut == "" {
		return nil
	}
	f, err := os.Create(c.jsonOut)
	if err != nil {
		return err
	}
	if err := writeJSON(f, rep); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

func writeJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

// header describes the conditions of a run.
type header struct {
	Scenario string `json:"scenario"`
	Server   string `json:"server"`
	Latency  ms     `json:"latencyMs"`
	Seed     uint64 `json:"seed"`
	Command  string `json:"command"`
	Started  string `json:"started"`
}

func newHeader(scenario string, b *backend, args []string) header {
	return header{
		Scenario: scenario, Server: b.name(), Latency: toMS(b.c.latency), Seed: b.c.seed,
		Command: strings.Join(append([]string{"nodeid-bench", scenario}, args...), " "),
		Started: time.Now().UTC().Format(time.RFC3339),
	}
}

func printHeader(w io.Writer, h header) {
	fmt.Fprintf(w, "%s on %s, %v round trip added per request, seed %d\n", h.Scenario, h.Server,
		time.Duration(float64(h.Latency)*float64(time.Millisecond)), h.Seed)
}

// runOnBackend starts the S3 back end (record: count requests by task and
// phase), runs the scenario on it and prints its report as a table or JSON. It
// returns the report, or nil with the exit code to use.
func runOnBackend[R any](ctx context.Context, name string, c common, record bool, stdout, stderr io.Writer,
	scenario func(*backend) (R, error), table func(io.Writer, R)) (rep R, code int) {
	var none R
	b, err := startBackend(ctx, c, record)
	if err != nil {
		fmt.Fprintf(stderr, "nodeid-bench %s: %v\n", name, err)
		return none, 1
	}
	defer b.close()
	if rep, err = scenario(b); err != nil {
		fmt.Fprintf(stderr, "nodeid-bench %s: %v\n", name, err)
		return none, 1
	}
	if err := emit(stdout, c, rep, func() { table(stdout, rep) }); err != nil {
		fmt.Fprintf(stderr, "nodeid-bench: %v\n", err)
		return none, 1
	}
	return rep, 0
}
