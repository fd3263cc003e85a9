package conformance

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/nodeid/nodeid/node"
)

// scene is one scenario run for one client: with mutation "" the client as
// it is, which must pass every check and meet the scenario's expectations;
// with a mutation, the client breaking one rule on purpose, which the
// checks must catch (its expectations are then only logged: a broken client
// need not behave).
type scene struct {
	t        *testing.T
	c        *client
	mutation string // "" for the client as it is
	want     string // with a mutation: the kind of violation that must be found
	streams  []*Stream
	claims   []Claim
	brokers  []*broker // whose claims count (claims are read from their logs at the end)
	began    time.Time
}

func newScene(t *testing.T, c *client) *scene { return &scene{t: t, c: c, began: time.Now()} }

// newMutantScene is a scene for a mutant, whose run must show a violation
// of kind want.
func newMutantScene(t *testing.T, c *client, mutation, want string) *scene {
	return &scene{t: t, c: c, mutation: mutation, want: want, began: time.Now()}
}

// logf logs a step of the scenario, with the time since it began.
func (s *scene) logf(format string, args ...any) {
	s.t.Helper()
	s.t.Logf("[%6.2fs] "+format, append([]any{time.Since(s.began).Seconds()}, args...)...)
}

// expect reports a failed expectation: an error for the client as it is, a
// log line for a mutant.
func (s *scene) expect(ok bool, format string, args ...any) bool {
	s.t.Helper()
	if !ok {
		if s.mutation == "" {
			s.t.Errorf(format, args...)
		} else {
			s.t.Logf("mutant %s: "+format, append([]any{s.mutation}, args...)...)
		}
	}
	return ok
}

// wait waits for cond on p's output: it fails the test for the client as
// it is, and reports false for a mutant, which goes on.
func (s *scene) wait(p *proc, timeout time.Duration, what string, cond func([]Line) bool) bool {
	s.t.Helper()
	if s.mutation == "" {
		p.waitLines(timeout, what, cond)
		return true
	}
	if !p.tryLines(timeout, cond) {
		s.t.Logf("mutant %s: %s: no %s within %v", s.mutation, p.name, what, timeout)
		return false
	}
	return true
}

// driver starts the scene's client as a driver of the test's own.
func (s *scene) driver(name string, o driverOpts) *proc {
	s.t.Helper()
	if o.mutation == "" {
		o.mutation = s.mutation
	}
	return startDriver(s.t, s.c, name, o)
}

// add records a stream of the run.
func (s *scene) add(st ...*Stream) { s.streams = append(s.streams, st...) }

// run returns what the scene collected. Claims are known when the scene
// scripted them or ran brokers.
func (s *scene) run() Run {
	r := Run{Streams: s.streams, Claims: s.claims}
	for _, b := range s.brokers {
		r.Claims = append(r.Claims, b.claims()...)
	}
	return r
}

// verdict checks the run: for the client as it is, any violation fails the
// test; for a mutant, the test fails unless a violation of the kind it
// wants is found.
func (s *scene) verdict() *Report {
	s.t.Helper()
	rep := Check(s.run())
	switch {
	case s.mutation == "":
		if !rep.OK() {
			s.t.Errorf("violations:\n%s", rep)
		} else {
			s.t.Logf("%s", rep)
		}
	case rep.Has(s.want):
		s.t.Logf("mutant %s caught (%s found, as expected):\n%s", s.mutation, s.want, rep)
	default:
		s.t.Errorf("mutant %s NOT caught: no %s violation found:\n%s", s.mutation, s.want, rep)
	}
	return rep
}

// idFile is a scripted id file: the suite writes it as node/idfile.go does,
// atomically (a temporary file in the same folder, then a rename).
type idFile struct {
	t    *testing.T
	path string
}

func newIDFile(t *testing.T, name string) *idFile {
	return &idFile{t: t, path: filepath.Join(t.TempDir(), name)}
}

// nowMs is the host's clock in Unix milliseconds.
func nowMs() int64 { return time.Now().UnixMilli() }

// write writes c.
func (f *idFile) write(c node.IDFileContent) {
	f.t.Helper()
	b, err := json.Marshal(c)
	if err != nil {
		f.t.Fatal(err)
	}
	f.writeRaw(string(b) + "\n")
}

// writeRaw writes body as the file's content.
func (f *idFile) writeRaw(body string) {
	f.t.Helper()
	tmp, err := os.CreateTemp(filepath.Dir(f.path), "."+filepath.Base(f.path)+".tmp-*")
	if err != nil {
		f.t.Fatal(err)
	}
	_, err = tmp.WriteString(body)
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp.Name(), f.path)
	}
	if err != nil {
		_ = os.Remove(tmp.Name())
		f.t.Fatal(err)
	}
}

// remove removes the file.
func (f *idFile) remove() {
	f.t.Helper()
	if err := os.Remove(f.path); err != nil {
		f.t.Fatal(err)
	}
}

// read returns the file's content (as a broker wrote it).
func (f *idFile) read() node.IDFileContent {
	f.t.Helper()
	b, err := os.ReadFile(f.path)
	if err != nil {
		f.t.Fatal(err)
	}
	var c node.IDFileContent
	if err := json.Unmarshal(b, &c); err != nil {
		f.t.Fatalf("%s: %v: %q", f.path, err, b)
	}
	return c
}
