package main

// The ids scenario's report: what was measured per broker and load, the
// issue-7 targets, and the text form.

import (
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"
)

// idsLoad is one load run: conns connections asking for batch IDs per request.
type idsLoad struct {
	Batch    int `json:"batch"`
	Conns    int `json:"conns"`
	Duration ms  `json:"durationMs"`
	Requests int `json:"requests"`
	// IDs counts the IDs in the 200 responses of the window.
	IDs            int64   `json:"ids"`
	IDsPerSec      float64 `json:"idsPerSec"`
	RequestsPerSec float64 `json:"requestsPerSec"`
	// Latency of one request, from sending it to the last byte of the body
	// read and checked, in ms.
	LatencyP50 float64 `json:"latencyP50Ms"`
	LatencyP99 float64 `json:"latencyP99Ms"`
	LatencyMax float64 `json:"latencyMaxMs"`
	// BodyBytes is the mean size of a response body.
	BodyBytes int `json:"meanBodyBytes"`
	// RSS of the broker during the window: the highest sample (every 100 ms)
	// and the last one, MB (2^20 bytes).
	RSSMaxMB float64 `json:"rssMaxMB"`
	RSSEndMB float64 `json:"rssEndMB"`
	// CPU used during the window, in cores (CPU seconds per second): the
	// broker process, and this process (the clients, and the S3 server and
	// proxy when external).
	BrokerCores float64 `json:"brokerCores"`
	BenchCores  float64 `json:"benchCores"`
	// Errors counts failed requests (not 200, or a body that did not check).
	Errors    int    `json:"errors"`
	FirstFail string `json:"firstError,omitempty"`
}

// idsBroker is one broker process and what was measured on it.
type idsBroker struct {
	S3       string `json:"s3"`
	S3Detail string `json:"s3Detail"`
	Args     string `json:"brokerArgs"`
	NodeID   int    `json:"nodeId"`
	Version  int64  `json:"version"`
	// StartToHealthy is the time from starting the process to /health 200.
	StartToHealthy ms `json:"startToHealthyMs"`
	// Idle figures, --settle after /health turned 200: VmRSS, and the Go
	// runtime's view from /metrics (heap in use, memory obtained from the OS).
	IdleRSSMB float64 `json:"idleRssMB"`
	// The idle RSS split: anonymous memory (heap, stacks) and file-backed
	// pages (the binary's code and data, clean).
	IdleRSSAnonMB   float64   `json:"idleRssAnonMB"`
	IdleRSSFileMB   float64   `json:"idleRssFileMB"`
	IdleHeapInuseMB float64   `json:"idleHeapInuseMB"`
	IdleGoSysMB     float64   `json:"idleGoSysMB"`
	IdleGoroutines  int       `json:"idleGoroutines"`
	Loads           []idsLoad `json:"loads"`
	// AfterRSSMB is VmRSS --settle after the last load; PeakRSSMB is VmHWM.
	AfterRSSMB float64 `json:"afterLoadRssMB"`
	PeakRSSMB  float64 `json:"peakRssMB"`
	// IDs checked for uniqueness: every ID of every 200 response from this
	// broker, warm-ups included.
	CheckedIDs int64 `json:"checkedIds"`
	Unique     bool  `json:"unique"`
	ExitCode   int   `json:"exitCode"`
}

type idsReport struct {
	Scenario string      `json:"scenario"`
	Command  string      `json:"command"`
	Started  string      `json:"started"`
	Cores    int         `json:"cores"`
	LoadAvg  string      `json:"loadAvgAtStart"`
	Latency  ms          `json:"latencyMs"`
	Brokers  []idsBroker `json:"brokers"`
	Targets  []target    `json:"targets,omitempty"`
}

func idsTargets(rep *idsReport, o idsOpts) []target {
	var ts []target
	for _, br := range rep.Brokers {
		for _, l := range br.Loads {
			if l.Batch != 10000 {
				continue
			}
			t := target{
				What:   fmt.Sprintf("IDs/s, /ids?n=10000, %d conns (%s S3)", l.Conns, br.S3),
				Target: ">= 2,000,000/s", Measured: thousands(int64(l.IDsPerSec)) + "/s", Met: l.IDsPerSec >= idsTargetPerSec,
			}
			if o.duration < 5*time.Second {
				t.Note = "short window"
			}
			ts = append(ts, t)
		}
		t := target{
			What:   fmt.Sprintf("idle broker RSS (%s S3)", br.S3),
			Target: "<= 40 MB", Measured: fmt.Sprintf("%.1f MB", br.IdleRSSMB), Met: br.IdleRSSMB <= idsTargetRSSMB,
		}
		if br.S3 == s3Embedded {
			t.Note = "includes the embedded gofakes3"
		}
		ts = append(ts, t)
	}
	return ts
}

// roundMB is bytes in MB (2^20), to 0.1 MB.
func roundMB(bytes float64) float64 { return math.Round(bytes/(1<<20)*10) / 10 }

// roundMs is d in ms to the microsecond.
func roundMs(d time.Duration) float64 { return math.Round(float64(d)/1e3) / 1e3 }

func printIDs(w io.Writer, rep *idsReport) {
	fmt.Fprintf(w, "ids: GET /ids?n=K through nodeid-broker serve, %d cores, load average at start %s\n", rep.Cores, rep.LoadAvg)
	for _, br := range rep.Brokers {
		fmt.Fprintf(w, "\nbroker with %s S3: %s\n", br.S3, br.S3Detail)
		fmt.Fprintf(w, "  node %d version %d, /health 200 after %.0f ms; idle RSS %.1f MB: %.1f MB anonymous, %.1f MB file-backed (Go heap in use %.1f MB, from the OS %.1f MB, %d goroutines)\n",
			br.NodeID, br.Version, float64(br.StartToHealthy), br.IdleRSSMB, br.IdleRSSAnonMB, br.IdleRSSFileMB,
			br.IdleHeapInuseMB, br.IdleGoSysMB, br.IdleGoroutines)
		tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
		fmt.Fprintln(tw, "K\tconns\twindow s\tIDs/s\treq/s\tp50 ms\tp99 ms\tmax ms\tbody KB\tRSS max MB\tRSS end MB\tbroker cores\tbench cores\terrors\t")
		for _, l := range br.Loads {
			fmt.Fprintf(tw, "%d\t%d\t%.1f\t%s\t%.0f\t%.3f\t%.3f\t%.3f\t%.1f\t%.1f\t%.1f\t%.2f\t%.2f\t%d\t\n",
				l.Batch, l.Conns, float64(l.Duration)/1000, thousands(int64(l.IDsPerSec)), l.RequestsPerSec,
				l.LatencyP50, l.LatencyP99, l.LatencyMax, float64(l.BodyBytes)/1024, l.RSSMaxMB, l.RSSEndMB,
				l.BrokerCores, l.BenchCores, l.Errors)
		}
		_ = tw.Flush()
		uniq := "all distinct"
		if !br.Unique {
			uniq = "DUPLICATES"
		}
		fmt.Fprintf(w, "  after the loads: RSS %.1f MB idle, %.1f MB peak (VmHWM); %s IDs checked: %s; exit %d after SIGTERM\n",
			br.AfterRSSMB, br.PeakRSSMB, thousands(br.CheckedIDs), uniq, br.ExitCode)
	}
	printTargets(w, rep.Targets)
}

// thousands formats n with commas.
func thousands(n int64) string {
	s := strconv.FormatInt(n, 10)
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(s, "-")
	var b strings.Builder
	for i, c := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(c)
	}
	if neg {
		return "-" + b.String()
	}
	return b.String()
}
