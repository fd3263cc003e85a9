package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// The ids scenario end to end, short: a real nodeid-broker serve per S3 set-up,
// two batch sizes, every ID checked distinct, the broker stopped cleanly.
func TestIDsSmoke(t *testing.T) {
	if testing.Short() {
		t.Skip("builds nodeid-broker and runs two brokers")
	}
	bin := filepath.Join(t.TempDir(), "nodeid-broker")
	if out, err := exec.Command("go", "build", "-o", bin, "../nodeid-broker").CombinedOutput(); err != nil {
		t.Fatalf("go build nodeid-broker: %v\n%s", err, out)
	}
	jsonOut := filepath.Join(t.TempDir(), "ids.json")
	var out, errb bytes.Buffer
	args := []string{"ids", "--broker-bin", bin, "--batch", "1000,7", "--conns", "2", "--duration", "300ms",
		"--warmup", "50ms", "--settle", "100ms", "--latency", "1ms", "--json-out", jsonOut}
	if code := run(context.Background(), args, &out, &errb); code != 0 {
		t.Fatalf("exit %d\n%s\n%s", code, out.String(), errb.String())
	}
	for _, want := range []string{"broker with embedded S3", "broker with external S3", "all distinct", "idle broker RSS"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("table lacks %q:\n%s", want, out.String())
		}
	}
	b, err := os.ReadFile(jsonOut)
	if err != nil {
		t.Fatal(err)
	}
	var rep idsReport
	if err := json.Unmarshal(b, &rep); err != nil {
		t.Fatal(err)
	}
	if len(rep.Brokers) != 2 {
		t.Fatalf("%d brokers, want 2: %s", len(rep.Brokers), b)
	}
	for _, br := range rep.Brokers {
		if !br.Unique || br.ExitCode != 0 || br.IdleRSSMB <= 0 || br.PeakRSSMB < br.IdleRSSMB || len(br.Loads) != 2 {
			t.Errorf("%s: unique %v, exit %d, idle RSS %v MB, peak %v MB, %d loads", br.S3, br.Unique, br.ExitCode, br.IdleRSSMB, br.PeakRSSMB, len(br.Loads))
		}
		var sum int64
		for _, l := range br.Loads {
			if l.Errors != 0 || l.Requests == 0 || l.IDs != int64(l.Requests*l.Batch) || l.IDsPerSec <= 0 || l.LatencyP50 <= 0 {
				t.Errorf("%s n=%d: %+v", br.S3, l.Batch, l)
			}
			sum += l.IDs
		}
		if br.CheckedIDs <= sum { // the first request and the warm-ups are checked too
			t.Errorf("%s: %d IDs checked, %d in the windows", br.S3, br.CheckedIDs, sum)
		}
	}
	if len(rep.Targets) != 2 { // the RSS ones: the rate's is for n=10000
		t.Errorf("%d targets, want 2", len(rep.Targets))
	}
}

func TestDecodeIDs(t *testing.T) {
	body := []byte(`{"nodeId":3,"version":7,"ids":["100","101","102","200","9223372036854775807"]}` + "\n")
	d, err := decodeIDs(body, nil)
	if err != nil || d.node != 3 || d.version != 7 || d.n != 5 ||
		len(d.runs) != 3 || d.runs[0] != (idRun{100, 102}) || d.runs[2] != (idRun{1<<63 - 1, 1<<63 - 1}) {
		t.Fatalf("decode = %+v, %v", d, err)
	}
	// Another spelling of the same JSON takes the slow path, with the same result.
	d2, err := decodeIDs([]byte(`{ "ids": ["100","101","102","200","9223372036854775807"], "version": 7, "nodeId": 3 }`), nil)
	if err != nil || d2.n != d.n || len(d2.runs) != len(d.runs) || d2.node != 3 {
		t.Fatalf("slow decode = %+v, %v", d2, err)
	}
	// After a recovery the broker adds its count; the fast path takes it.
	withCount := []byte(`{"nodeId":3,"version":7,"ids":["100","101"],"recoveries":2}`)
	if d3, ok := scanIDs(withCount, nil); !ok || d3.n != 2 || d3.node != 3 {
		t.Fatalf("fast decode with recoveries = %+v, %v", d3, ok)
	}
	for _, bad := range []string{
		`{"nodeId":3,"version":7,"ids":["1"],"recoveries":}`,
		`{"nodeId":3,"version":7,"ids":["100","100"]}`, // not increasing
		`{"nodeId":3,"version":7,"ids":["101","100"]}`,
		`{"nodeId":3,"version":7,"ids":["0100"]}`, // not canonical
		`{"nodeId":3,"version":7,"ids":[100]}`,    // a number
		`{"nodeId":3,"version":7,"ids":["9223372036854775808"]}`,
		`{"nodeId":3,"ids":["1"]}`,
		`{"nodeId":3,"version":7,"ids":["1"]`,
	} {
		if d, err := decodeIDs([]byte(bad), nil); err == nil {
			t.Errorf("%s: decoded %+v, want an error", bad, d)
		}
	}
}

func TestLedgerFindsADuplicate(t *testing.T) {
	var l idLedger
	for _, runs := range [][]idRun{{{10, 19}, {30, 30}}, {{20, 29}}, {{31, 40}}} {
		if err := l.add(decoded{node: 1, version: 2, runs: runs}); err != nil {
			t.Fatal(err)
		}
	}
	if err := l.check(); err != nil || l.count != 31 {
		t.Fatalf("check = %v, count %d", err, l.count)
	}
	if err := l.add(decoded{node: 1, version: 3, runs: []idRun{{50, 50}}}); err == nil {
		t.Error("a new version was accepted")
	}
	_ = l.add(decoded{node: 1, version: 2, runs: []idRun{{40, 45}}})
	if err := l.check(); err == nil || !strings.Contains(err.Error(), "40 was issued twice") {
		t.Errorf("check = %v, want 40 issued twice", err)
	}
}
