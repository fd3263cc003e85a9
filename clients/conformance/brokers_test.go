package conformance

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nodeid/nodeid/internal/testkit/tcpgate"
)

// The brokers' settings: short leases (the broker accepts down to 1 s; 3 s
// keeps a renewal's margin on a loaded machine), one node ID so that a
// successor takes the same one, and a short drain.
var lease3s = []string{"--lease-duration", "3s", "--drain-delay", "200ms", "--cluster-size", "1"}

func brokerArgs(cmd string, bucketFlags []string, more ...string) []string {
	return append(append(append([]string{cmd}, bucketFlags...), lease3s...), more...)
}

// childArgs returns the arguments of nodeid-broker run that make the driver
// its child.
func childArgs(c *client, o driverOpts) []string {
	if o.durationMs == 0 {
		o.durationMs = backstopMs // run gives the child /dev/null as stdin: it must not end the driver
	}
	return append([]string{"--"}, c.command(o.args()...)...)
}

// stopBroker sends SIGTERM to a broker and expects it to exit 0 (with run:
// its child exited 0).
func stopBroker(b *broker) {
	b.t.Helper()
	b.stop(20 * time.Second)
}

// TestHandoverFloor hands a node ID over between two brokers, each running
// the driver as its child (nodeid-broker run, id-file mode): the successor's
// host clock is 3 s behind the predecessor's (--debug-clock-offset -3s),
// so it waits for the host's clock to pass the floor before it writes the
// id file and starts its child; the child's clock then steps back 4 s below
// the floor (the floor rule covers a host clock that steps back after the
// file was written). The child as it is waits for its clock to pass the floor;
// one that ignores the floor (mutation ignore-floor) repeats IDs of the
// predecessor's child.
func TestHandoverFloor(t *testing.T) {
	t.Parallel()
	eachClient(t, func(t *testing.T, c *client) { handoverFloor(newScene(t, c)) })
}

func handoverFloor(s *scene) {
	t, c := s.t, s.c
	flags := bucket(t)
	fa, fb := filepath.Join(t.TempDir(), "id.json"), filepath.Join(t.TempDir(), "id.json")
	oa := driverOpts{idFile: fa, pauseMs: 1}
	a := startBroker(t, "broker-a+driver", c, append(brokerArgs("run", flags, "--id-file", fa), childArgs(c, oa)...)...)
	s.brokers = append(s.brokers, a)
	// 2.5 s of the predecessor's IDs: the span a floor-ignoring successor
	// overlaps.
	a.waitLines(60*time.Second, "IDs spanning 2.5 s", spanMs(0, 2500))
	stopBroker(a)
	floor := num(a.waitLog("released node ID", time.Second), "reservedUntilMs")
	last := int64(0)
	for _, l := range a.out.all() {
		for _, id := range l.IDs {
			last = max(last, TimeMs(id))
		}
	}
	// The successor's child starts once the successor's clock (3 s behind)
	// passed the floor; its own clock steps back 4 s more as it starts. A
	// child that makes its first call d after it started is then 4 s - d
	// below the floor: the client as it is waits that out (under its 5 s),
	// a mutant issues the timestamps from floor - 4 s + d, which overlap
	// the predecessor's child's last 2.5 s unless d is above 4 s - (floor -
	// last).
	const stepBack = 4000
	s.logf("broker-a released with its reservation (the floor) %d ms above its child's last ID", floor-last)
	ob := driverOpts{idFile: fb, batch: 4, pauseMs: 1, clockSteps: fmt.Sprintf("0:-%d", 3000+stepBack), mutation: s.mutation}
	b := startBroker(t, "broker-b+driver", c, append(brokerArgs("run", flags, "--id-file", fb, "--debug-clock-offset", "-3s"), childArgs(c, ob)...)...)
	s.brokers = append(s.brokers, b)
	b.waitLog("child started", 30*time.Second)
	s.logf("broker-b started its child")
	s.expect(strings.Contains(b.Log(), "waiting for the host's clock to pass the node ID's floor"),
		"broker-b did not wait for the floor: the scenario did not put its clock behind")
	// Until the child's IDs pass the predecessor's floor: a mutant has
	// issued the overlap by then.
	s.wait(b.proc, 30*time.Second, "an ID above the floor", func(ls []Line) bool {
		for _, l := range ls {
			if l.Kind == OK && TimeMs(l.IDs[len(l.IDs)-1]) > floor+100 {
				return true
			}
		}
		return false
	})
	s.logf("the child issued an ID above the floor")
	stopBroker(b)
	if s.mutation == "" {
		if ls := b.out.all(); len(ls) == 0 || ls[0].Kind != OK {
			s.expect(false, "the successor's child's first line is not ok (it waits up to 5 s for the floor, here under 4 s): %s", lastLines(ls[:min(len(ls), 3)], 3))
		}
	}
	s.add(a.stream(oa, true), b.stream(ob, true))
	s.verdict()
}

// TestKill9 kills a sidecar broker (serve --id-file) with SIGKILL while a
// driver uses its id file: nobody removes the file, and the driver must stop
// at its validUntilMs by itself (mutation ignore-valid-until: IDs stamped
// past it). Then the sidecar restarts (a new broker on the same file and
// bucket): it removes the stale file, takes the node ID over once the lease
// expired, with a new version, and writes the file again; the driver must
// stop for good (VersionChanged). The successor's /ids are collected.
func TestKill9(t *testing.T) {
	t.Parallel()
	eachClient(t, func(t *testing.T, c *client) { kill9(newScene(t, c)) })
}

func kill9(s *scene) {
	t := s.t
	flags := bucket(t)
	f := &idFile{t: t, path: filepath.Join(t.TempDir(), "id.json")}
	a := startBroker(t, "broker-a", nil, brokerArgs("serve", flags, "--id-file", f.path)...)
	s.brokers = append(s.brokers, a)
	a.waitLog("id file written", 30*time.Second)
	s.logf("broker-a wrote the id file")
	o := driverOpts{idFile: f.path, batch: 16, pauseMs: 1}
	d := s.driver("driver", o)
	d.waitLines(30*time.Second, "50 ok lines", count(0, OK, "", 50))
	s.logf("the driver issued IDs")
	a.kill9()
	s.logf("broker-a killed")
	mark := d.nLines()
	valid := f.read().ValidUntilMs // left behind: the last one written
	// The driver stops by validUntilMs: its first err after the kill, or
	// (a mutant) an ID stamped at or past it.
	d.waitLines(30*time.Second, "an err line after the kill", func(ls []Line) bool {
		for _, l := range ls[min(mark, len(ls)):] {
			if l.Kind == Err || (l.Kind == OK && TimeMs(l.IDs[len(l.IDs)-1]) >= valid) {
				return true
			}
		}
		return false
	})
	if ls := d.out.all(); count(mark, Err, "", 1)(ls) {
		for _, l := range ls[mark:] {
			if l.Kind == Err {
				s.expect(l.ErrKind == "NotHeld", "the first err line after validUntilMs passed is %q, want err NotHeld", l.Raw)
				break
			}
		}
	}

	s.logf("the driver stopped issuing (or a mutant issued past validUntilMs %d)", valid)
	// The sidecar restarts.
	b := startBroker(t, "broker-b", nil, brokerArgs("serve", flags, "--id-file", f.path)...)
	s.brokers = append(s.brokers, b)
	b.waitLog("id file written", 30*time.Second)
	s.logf("broker-b wrote the id file")
	s.expect(b.Find("removed an id file left by an earlier process") != nil, "broker-b did not remove the stale id file")
	mark = d.nLines()
	s.wait(d, step, "err VersionChanged after the new version's file", count(mark, Err, "VersionChanged", 1))
	s.logf("the driver stopped for good")
	// The driver stopped for good: the successor's /ids are the node's only
	// IDs now.
	ids := collect(t, b, 8, time.Millisecond)
	if err := ids.out.waitLines(30*time.Second, nil, spanMs(0, 300)); err != nil {
		t.Fatalf("broker-b /ids: %v (%d answered 503)", err, ids.n503.Load())
	}
	ids.end()
	s.logf("collected broker-b's IDs")
	d.stop(10 * time.Second)
	b.Kill() // a graceful stop would wait --id-file-grace for a reader that stopped
	s.add(d.stream(o, true), ids.stream())
	s.verdict()
}

// TestSigtermRelease stops a sidecar broker (serve --id-file) with SIGTERM
// while a driver uses its id file: the broker removes the file, waits
// --id-file-grace, releases; a successor takes the node ID at once and
// serves /ids, which the suite collects until the driver's last
// validUntilMs has passed: no ID repeats, as the release keeps the
// reservation at the highest validUntilMs the broker wrote. With a 6 s
// horizon (the broker rewrites the file every 1.5 s) the driver's last
// reading lets it issue 4.5 s past the removal at least: one that goes on
// while the file is missing (mutation ignore-missing) stamps IDs more than
// RemovalSlackMs (2.5 s) after it, which one that re-reads the file every
// second never does.
func TestSigtermRelease(t *testing.T) {
	t.Parallel()
	eachClient(t, func(t *testing.T, c *client) { sigtermRelease(newScene(t, c)) })
}

func sigtermRelease(s *scene) {
	t := s.t
	flags := bucket(t)
	path := filepath.Join(t.TempDir(), "id.json")
	a := startBroker(t, "broker-a", nil, append(brokerArgs("serve", flags, "--id-file", path),
		"--lease-duration", "8s", "--renew-interval", "500ms", "--id-file-horizon", "6s", "--id-file-grace", "6s")...)
	s.brokers = append(s.brokers, a)
	a.waitLog("id file written", 30*time.Second)
	o := driverOpts{idFile: path, pauseMs: 1} // the default re-read period, which the grace is sized for
	d := s.driver("driver", o)
	d.waitLines(30*time.Second, "50 ok lines", count(0, OK, "", 50))
	mark := d.nLines()
	if err := a.Signal(sigterm); err != nil {
		t.Fatal(err)
	}
	a.waitLog("id file removed", 10*time.Second)
	s.logf("broker-a removed the id file")
	if code := waitExit(a, 30*time.Second); code != 0 {
		t.Errorf("broker-a exited %d after SIGTERM, want 0", code)
	}
	a.waitLog("released node ID", time.Second)
	s.logf("broker-a released the node ID")

	b := startBroker(t, "broker-b", nil, brokerArgs("serve", flags)...)
	s.brokers = append(s.brokers, b)
	b.waitLog("serving IDs", 30*time.Second)
	s.logf("broker-b serves the node ID")
	ids := collect(t, b, 4, time.Millisecond)
	// Until the last validUntilMs the driver reported has passed (and
	// 500 ms of the successor's IDs): a mutant issued until then.
	lastValid := int64(0)
	for _, l := range d.out.all() {
		if l.Kind == OK {
			lastValid = max(lastValid, l.ValidMs)
		}
	}
	if err := ids.out.waitLines(30*time.Second, nil, func(ls []Line) bool {
		return spanMs(0, 500)(ls) && nowMs() > lastValid+100
	}); err != nil {
		t.Fatalf("broker-b /ids: %v (%d answered 503)", err, ids.n503.Load())
	}
	ids.end()
	s.logf("collected broker-b's IDs past the driver's last validUntilMs")
	s.expect(count(mark, Err, "NotHeld", 1)(d.out.all()), "the driver went on issuing without err NotHeld after the id file was removed")
	d.stop(10 * time.Second)
	stopBroker(b)
	s.add(d.stream(o, true), ids.stream())
	s.verdict()
}

// TestClockStep runs the driver as a broker's child while the host's clock
// steps back 1.5 s, twice (the broker's --debug-clock-steps, mirrored by
// the driver's --clock-steps at about the same moments): the client as it
// is never issues below its last timestamp (it waits each 1.5 s out); one
// that does (mutation allow-backwards) issues IDs not above its last, and
// repeats some.
func TestClockStep(t *testing.T) {
	t.Parallel()
	eachClient(t, func(t *testing.T, c *client) { clockStep(newScene(t, c)) })
}

func clockStep(s *scene) {
	t, c := s.t, s.c
	flags := bucket(t)
	path := filepath.Join(t.TempDir(), "id.json")
	// Two steps, so that a driver slow to start (its first call after the
	// first step) still issues before the second.
	o := driverOpts{idFile: path, pauseMs: 1, clockSteps: "1000:-1500,3000:-1500", mutation: s.mutation}
	a := startBroker(t, "broker+driver", c, append(brokerArgs("run", flags, "--id-file", path, "--debug-clock-steps", "1200ms:-1500ms,3200ms:-1500ms"),
		childArgs(c, o)...)...)
	s.brokers = append(s.brokers, a)
	// An ok line 5 s after the first line: the driver started before its
	// first line, so both steps are past by then, and the 1.5 s a client
	// as it is waits after each.
	a.waitLines(60*time.Second, "an ok line 5 s after the first line", func(ls []Line) bool {
		if len(ls) == 0 || ls[len(ls)-1].Kind != OK {
			return false
		}
		return a.out.arrived(len(ls)-1).Sub(a.out.arrived(0)) > 5*time.Second
	})
	stopBroker(a)
	st := a.stream(o, true)
	if s.mutation == "" {
		for _, l := range st.Lines {
			if l.Kind == Err && l.ErrKind == "ClockBehind" {
				s.expect(false, "err ClockBehind after a 1.5 s step back (a client waits up to 5 s): %s", l.Raw)
				break
			}
		}
	}
	s.add(st)
	s.verdict()
}

// TestHTTP runs the driver in HTTP mode (--url), without and with a
// prefetch, against a broker that waits for a node ID held by another (its
// /ids answers 503: err Unavailable), until the holder stops with SIGTERM
// and the waiting broker takes the node ID over (ok lines). Through a TCP
// proxy that counts connections: the driver keeps one alive. The IDs the
// holder and the successor serve to the suite's own calls are collected.
func TestHTTP(t *testing.T) {
	t.Parallel()
	concurrently(t, map[string]func(*testing.T){
		"plain": func(t *testing.T) { eachClient(t, func(t *testing.T, c *client) { httpHandover(newScene(t, c), 0) }) },
		"prefetch": func(t *testing.T) {
			eachClient(t, func(t *testing.T, c *client) { httpHandover(newScene(t, c), 1000) })
		},
	})
}

func httpHandover(s *scene, prefetch int) {
	t := s.t
	flags := bucket(t)
	a := startBroker(t, "broker-a", nil, brokerArgs("serve", flags)...)
	s.brokers = append(s.brokers, a)
	a.waitLog("serving IDs", 30*time.Second)
	b := startBroker(t, "broker-b", nil, brokerArgs("serve", flags)...)
	s.brokers = append(s.brokers, b)
	gate, err := tcpgate.New(b.addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = gate.Close() })
	o := driverOpts{url: "http://" + gate.Addr(), batch: 3, pauseMs: 2, prefetch: prefetch}
	d := s.driver("driver", o)
	d.waitLines(30*time.Second, "err Unavailable from the broker without a node ID", count(0, Err, "Unavailable", 3))
	aIDs := collect(t, a, 5, time.Millisecond)
	if err := aIDs.out.waitLines(30*time.Second, nil, count(0, OK, "", 20)); err != nil {
		t.Fatalf("broker-a /ids: %v", err)
	}
	stopBroker(a)
	aIDs.end()
	mark := d.nLines()
	d.waitLines(30*time.Second, "ok lines once broker-b took the node ID over", count(mark, OK, "", 100))
	bIDs := collect(t, b, 5, time.Millisecond)
	if err := bIDs.out.waitLines(30*time.Second, nil, count(0, OK, "", 20)); err != nil {
		t.Fatalf("broker-b /ids: %v", err)
	}
	bIDs.end()
	d.stop(10 * time.Second)
	stopBroker(b)
	st := d.stream(o, true)
	calls := 0
	for _, l := range st.Lines {
		switch l.Kind {
		case OK:
			calls++
		case Err:
			calls++
			s.expect(l.ErrKind == "Unavailable", "err line %q: the only errors here are the waiting broker's 503s", l.Raw)
		}
	}
	if n := gate.Stats().Accepted; n > 3 {
		t.Errorf("the driver opened %d connections for %d calls: want one kept alive (a few at most)", n, calls)
	}
	s.add(st, aIDs.stream(), bIDs.stream())
	s.verdict()
}
