package conformance

import (
	"bytes"
	"context"
	"errors"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/nodeid/nodeid/node"
)

// TestDriverProtocol checks the driver's own protocol (CONFORMANCE.md,
// "The driver"): bad arguments exit 2 with the reason on standard error;
// without --duration-ms the driver runs until its standard input closes,
// then writes done and exits 0. (SIGTERM and --duration-ms end the drivers
// of the other scenarios, whose checks want the done line.)
func TestDriverProtocol(t *testing.T) {
	t.Parallel()
	eachClient(t, func(t *testing.T, c *client) {
		for _, args := range [][]string{
			{"--no-such-argument", "1"},
			{"--batch", "1"}, // neither --id-file nor --url
			{"--id-file", "/nonexistent/id.json", "--batch", "many"},
			{"--id-file", "/nonexistent/id.json", "--prefetch-max-age-ms", "5"}, // HTTP only
			{"--url", "http://127.0.0.1:1", "--prefetch", "10", "--prefetch-max-age-ms", "-1"},
		} {
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			cmd := exec.CommandContext(ctx, c.bin, append(append([]string(nil), c.pre...), args...)...)
			cmd.Env = baseEnv(c.env...)
			var stdout, stderr bytes.Buffer
			cmd.Stdout, cmd.Stderr = &stdout, &stderr
			err := cmd.Run()
			cancel()
			var ee *exec.ExitError
			if !errors.As(err, &ee) || ee.ExitCode() != 2 || strings.TrimSpace(stderr.String()) == "" {
				t.Errorf("driver %v: %v, want exit 2 with the reason on standard error; stdout %q, stderr %q", args, err, stdout.String(), stderr.String())
			}
		}

		f := newIDFile(t, "id.json")
		now := nowMs()
		f.write(node.IDFileContent{NodeID: 9, Version: 2, FloorMs: now - 1000, ValidUntilMs: now + 120000})
		o := driverOpts{idFile: f.path, pauseMs: 1}
		out := newOutSink()
		cmd := exec.Command(c.bin, append(append([]string(nil), c.pre...), o.args()...)...)
		cmd.Env = baseEnv(c.env...)
		cmd.Stdout = out
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		stdin, err := cmd.StdinPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		exited := make(chan struct{})
		var werr error
		go func() { werr = cmd.Wait(); close(exited) }()
		t.Cleanup(func() { _ = cmd.Process.Kill(); <-exited })
		if err := out.waitLines(30*time.Second, exited, count(0, OK, "", 5)); err != nil {
			t.Fatalf("driver with stdin open: waiting for 5 ok lines: %v\n%s\nstderr: %s", err, lastLines(out.all(), 5), stderr.String())
		}
		_ = stdin.Close()
		select {
		case <-exited:
		case <-time.After(20 * time.Second):
			t.Fatalf("the driver still runs 20 s after its standard input closed")
		}
		if werr != nil {
			t.Errorf("the driver exited with %v after its standard input closed, want 0; stderr: %s", werr, stderr.String())
		}
		rep := Check(Run{
			Streams: []*Stream{{Name: "driver", Lines: out.all(), Driver: true, IDFile: true, Batch: 1, Ended: true}},
			Claims:  []Claim{{Node: 9, Version: 2, FloorMs: now - 1000}},
		})
		if !rep.OK() {
			t.Errorf("violations:\n%s", rep)
		}
	})
}
