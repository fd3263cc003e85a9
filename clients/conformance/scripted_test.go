package conformance

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/nodeid/nodeid/node"
)

// step is how long a scripted scenario waits for the driver to react to a
// change of the file: far above its re-read period, so only a client that
// does not react fails.
const step = 10 * time.Second

// TestScriptedIDFile takes one driver through every state of its id file:
// valid, removed, truncated, not JSON, a field missing, negative, not an
// integer or a string, expired (validUntilMs passed), valid again after
// each, then another version, and the first version again. It expects
// NotHeld for each bad state and ok lines once the file is valid again;
// after the version changed, err VersionChanged for every later call
// (stopped for good).
func TestScriptedIDFile(t *testing.T) {
	t.Parallel()
	eachClient(t, func(t *testing.T, c *client) { scriptedStates(newScene(t, c)) })
}

func scriptedStates(s *scene) {
	t := s.t
	f := newIDFile(t, "id.json")
	now := nowMs()
	good := node.IDFileContent{NodeID: 3, Version: 5, FloorMs: now - 2000, ValidUntilMs: now + 120000}
	next := good
	next.Version = 6
	s.claims = []Claim{{Node: 3, Version: 5, FloorMs: good.FloorMs}, {Node: 3, Version: 6, FloorMs: good.FloorMs}}
	f.write(good)
	o := driverOpts{idFile: f.path, batch: 2, pauseMs: 1, rereadMs: 250}
	d := s.driver("driver", o)
	s.wait(d, 30*time.Second, "20 ok lines", count(0, OK, "", 20))

	// Each bad state, then the good file again.
	full := fmt.Sprintf(`{"nodeId":3,"version":5,"floorMs":%d,"validUntilMs":%d}`, good.FloorMs, good.ValidUntilMs)
	bad := []struct {
		name  string
		apply func()
	}{
		{"removed", f.remove},
		{"truncated", func() { f.writeRaw(full[:len(full)/2]) }},
		{"empty", func() { f.writeRaw("") }},
		{"not JSON", func() { f.writeRaw("garbage, not JSON\n") }},
		{"a JSON array", func() { f.writeRaw("[3,5]\n") }},
		{"floorMs missing", func() { f.writeRaw(fmt.Sprintf(`{"nodeId":3,"version":5,"validUntilMs":%d}`, good.ValidUntilMs)) }},
		{"validUntilMs negative", func() {
			f.writeRaw(fmt.Sprintf(`{"nodeId":3,"version":5,"floorMs":%d,"validUntilMs":-1}`, good.FloorMs))
		}},
		{"version not an integer", func() { f.writeRaw(strings.Replace(full, `"version":5`, `"version":5.5`, 1)) }},
		{"nodeId a string", func() { f.writeRaw(strings.Replace(full, `"nodeId":3`, `"nodeId":"3"`, 1)) }},
		{"expired", func() {
			e := good
			e.ValidUntilMs = nowMs() - 1000
			f.write(e)
		}},
	}
	for _, b := range bad {
		mark := d.nLines()
		b.apply()
		s.wait(d, step, "err NotHeld after the file became "+b.name, count(mark, Err, "NotHeld", 1))
		mark = d.nLines()
		f.write(good)
		s.wait(d, step, "ok lines after the file "+b.name+" was valid again", count(mark, OK, "", 5))
	}

	// validUntilMs a moment ahead: IDs until then, then NotHeld (the check
	// finds any ID stamped at or past it).
	soon := good
	soon.ValidUntilMs = nowMs() + 300
	mark := d.nLines()
	f.write(soon)
	s.wait(d, step, "err NotHeld once validUntilMs passed", func(ls []Line) bool {
		return count(mark, Err, "NotHeld", 1)(ls) && nowMs() > soon.ValidUntilMs
	})
	mark = d.nLines()
	f.write(good)
	s.wait(d, step, "ok lines after validUntilMs moved on", count(mark, OK, "", 5))

	// Another version: stopped for good, even once the first is back.
	mark = d.nLines()
	f.write(next)
	if s.wait(d, step, "err VersionChanged", count(mark, Err, "VersionChanged", 1)) {
		f.write(good)
		back := d.nLines()
		s.wait(d, step, "20 lines after the first version was back", func(ls []Line) bool { return len(ls) >= back+20 })
		ls := d.out.all()
		first := -1
		for i := mark; i < len(ls); i++ {
			if ls[i].Kind == Err && ls[i].ErrKind == "VersionChanged" {
				first = i
				break
			}
		}
		for i := first; first >= 0 && i < len(ls); i++ {
			if l := ls[i]; l.Kind != Err || l.ErrKind != "VersionChanged" {
				s.expect(false, "line %d %q after err VersionChanged on line %d: want err VersionChanged for every later call", i+1, l.Raw, first+1)
				break
			}
		}
	}
	d.stop(10 * time.Second)
	s.add(d.stream(o, true))
	s.verdict()
}

// TestScriptedFloorAndClock runs drivers over id files whose floor is
// ahead of the clock: 1.5 s ahead (the client waits, then issues IDs above
// the floor: no ClockBehind), 30 s ahead (ClockBehind after waiting about
// 5 s); and one issuing batches of 5000, more than a millisecond's 4096
// sequence numbers, for --duration-ms (it ends by itself with done).
func TestScriptedFloorAndClock(t *testing.T) {
	t.Parallel()
	eachClient(t, func(t *testing.T, c *client) {
		concurrently(t, map[string]func(*testing.T){
			"floor-ahead": func(t *testing.T) {
				s := newScene(t, c)
				now := nowMs()
				ahead := node.IDFileContent{NodeID: 4, Version: 1, FloorMs: now + 1500, ValidUntilMs: now + 120000}
				s.claims = []Claim{{Node: 4, Version: 1, FloorMs: ahead.FloorMs}}
				f := newIDFile(t, "id.json")
				f.write(ahead)
				o := driverOpts{idFile: f.path, pauseMs: 1}
				d := s.driver("driver", o)
				s.wait(d, 30*time.Second, "10 ok lines", count(0, OK, "", 10))
				if ls := d.out.all(); ls[0].Kind != OK {
					s.expect(false, "floor 1.5 s ahead: the first line is %q, want ok (a client waits up to 5 s for its clock to pass the floor)", ls[0].Raw)
				}
				d.stop(10 * time.Second)
				s.add(d.stream(o, true))
				s.verdict()
			},
			"floor-30s-ahead": func(t *testing.T) {
				s := newScene(t, c)
				now := nowMs()
				behind := node.IDFileContent{NodeID: 5, Version: 1, FloorMs: now + 30000, ValidUntilMs: now + 120000}
				s.claims = []Claim{{Node: 5, Version: 1, FloorMs: behind.FloorMs}}
				f := newIDFile(t, "id.json")
				f.write(behind)
				o := driverOpts{idFile: f.path, pauseMs: 1}
				d := s.driver("driver", o)
				began := time.Now()
				s.wait(d, 30*time.Second, "a first line", func(ls []Line) bool { return len(ls) > 0 })
				if l := d.out.all()[0]; l.Kind != Err || l.ErrKind != "ClockBehind" {
					s.expect(false, "floor 30 s ahead: the first line is %q, want err ClockBehind", l.Raw)
				} else if waited := d.out.arrived(0).Sub(began); waited < 4*time.Second {
					s.expect(false, "floor 30 s ahead: err ClockBehind after %v, want it after waiting about 5 s", waited)
				}
				d.kill9() // not SIGTERM: the call under way waits 5 s more
				s.add(d.stream(o, false))
				s.verdict()
			},
			"batch-5000": func(t *testing.T) {
				s := newScene(t, c)
				now := nowMs()
				big := node.IDFileContent{NodeID: 6, Version: 1, FloorMs: now - 1000, ValidUntilMs: now + 120000}
				s.claims = []Claim{{Node: 6, Version: 1, FloorMs: big.FloorMs}}
				f := newIDFile(t, "id.json")
				f.write(big)
				o := driverOpts{idFile: f.path, batch: 5000, durationMs: 500}
				d := s.driver("driver", o)
				select {
				case <-d.Exited():
				case <-time.After(30 * time.Second):
					t.Fatalf("--duration-ms 500 and still running after 30 s")
				}
				if code := d.ExitCode(); code != 0 {
					t.Errorf("exit code %d after --duration-ms, want 0", code)
				}
				st := d.stream(o, true)
				s.expect(count(0, OK, "", 1)(st.Lines), "no ok line")
				s.add(st)
				s.verdict()
			},
		})
	})
}

// TestScriptedSwap swaps one driver's id file for another node's, which a
// second driver is using: the first must stop for good (VersionChanged).
// A client that goes on after the version changes (mutation
// ignore-version) issues the other node's IDs: duplicates.
func TestScriptedSwap(t *testing.T) {
	t.Parallel()
	eachClient(t, func(t *testing.T, c *client) { scriptedSwap(newScene(t, c)) })
}

func scriptedSwap(s *scene) {
	t := s.t
	now := nowMs()
	a := node.IDFileContent{NodeID: 7, Version: 1, FloorMs: now - 1000, ValidUntilMs: now + 120000}
	b := node.IDFileContent{NodeID: 8, Version: 1, FloorMs: now - 1000, ValidUntilMs: now + 120000}
	s.claims = []Claim{{Node: 7, Version: 1, FloorMs: a.FloorMs}, {Node: 8, Version: 1, FloorMs: b.FloorMs}}
	fa, fb := newIDFile(t, "a.json"), newIDFile(t, "b.json")
	fa.write(a)
	fb.write(b)
	oa := driverOpts{idFile: fa.path, pauseMs: 1, rereadMs: 250}
	ob := driverOpts{idFile: fb.path, pauseMs: 1, rereadMs: 250}
	da := s.driver("driver-a", oa)
	db := startDriver(t, s.c, "driver-b", ob) // the other node's holder: the client as it is
	s.wait(da, 30*time.Second, "20 ok lines", count(0, OK, "", 20))
	s.wait(db, 30*time.Second, "20 ok lines", count(0, OK, "", 20))
	mark := da.nLines()
	fa.write(b) // a's file now names b's claim
	// 1000 calls after the swap, a second at least (--pause-ms 1): a
	// correct client re-read the file (every 250 ms) and stopped; a mutant
	// issued b's IDs meanwhile.
	s.wait(da, 30*time.Second, "1000 lines after the swap", func(ls []Line) bool { return len(ls) >= mark+1000 })
	s.expect(count(mark, Err, "VersionChanged", 1)(da.out.all()), "driver-a: no err VersionChanged in the 1000 calls after its file named another node")
	da.stop(10 * time.Second)
	db.stop(10 * time.Second)
	s.add(da.stream(oa, true), db.stream(ob, true))
	s.verdict()
}
