package conformance

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

// langs are the clients the suite runs, each in clients/<lang>.
var langs = []string{"python", "node", "java"}

// client is how to start one client's conformance driver.
type client struct {
	lang string
	dir  string   // the client's folder
	bin  string   // the interpreter
	pre  []string // its arguments before the driver's
	env  []string // variables the driver needs (added to the environment)
}

// command returns the program and arguments that run the driver with args.
func (c *client) command(args ...string) []string {
	return append(append([]string{c.bin}, c.pre...), args...)
}

// clientsDir is the folder of the clients: NODEID_CLIENTS_DIR, or clients/
// (this package's parent).
func clientsDir() (string, error) {
	dir := os.Getenv("NODEID_CLIENTS_DIR")
	if dir == "" {
		dir = ".."
	}
	return filepath.Abs(dir)
}

// unavailable skips the test with the reason, or fails it with CI=true:
// test/all.sh installs every interpreter and CI runs every client.
func unavailable(t *testing.T, format string, args ...any) {
	t.Helper()
	msg := fmt.Sprintf(format, args...)
	if os.Getenv("CI") == "true" {
		t.Fatalf("%s (CI=true: every client must run; test/all.sh installs python3, nodejs and default-jdk-headless)", msg)
	}
	t.Skipf("%s: skipping (with CI=true this fails)", msg)
}

var (
	prepareMu sync.Mutex
	prepared  = map[string]*preparation{} // by client folder
)

type preparation struct {
	once sync.Once
	c    *client
	err  error
}

// needClient returns the client of lang, checking once per test binary
// that its driver and interpreter are there (and compiling the Java one).
// It skips the test when they are not, or fails it with CI=true.
func needClient(t *testing.T, lang string) *client {
	t.Helper()
	parent, err := clientsDir()
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(parent, lang)
	prepareMu.Lock()
	p := prepared[dir]
	if p == nil {
		p = &preparation{}
		prepared[dir] = p
	}
	prepareMu.Unlock()
	p.once.Do(func() { p.c, p.err = prepare(lang, dir) })
	if p.err != nil {
		unavailable(t, "%s client: %v", lang, p.err)
	}
	return p.c
}

func prepare(lang, dir string) (*client, error) {
	need := func(names ...string) ([]string, error) {
		var paths []string
		for _, n := range names {
			p, err := exec.LookPath(n)
			if err != nil {
				return nil, fmt.Errorf("%s is not installed: %v", n, err)
			}
			paths = append(paths, p)
		}
		return paths, nil
	}
	exists := func(path string) error {
		if _, err := os.Stat(path); err != nil {
			return fmt.Errorf("no driver (NODEID_CLIENTS_DIR names the clients' folder): %v", err)
		}
		return nil
	}
	c := &client{lang: lang, dir: dir}
	switch lang {
	case "python":
		driver := filepath.Join(dir, "conformance", "driver.py")
		if err := exists(driver); err != nil {
			return nil, err
		}
		bins, err := need("python3")
		if err != nil {
			return nil, err
		}
		c.bin, c.pre, c.env = bins[0], []string{"-B", driver}, []string{"PYTHONPATH=" + dir}
	case "node":
		driver := filepath.Join(dir, "conformance", "driver.mjs")
		if err := exists(driver); err != nil {
			return nil, err
		}
		bins, err := need("node")
		if err != nil {
			return nil, err
		}
		c.bin, c.pre = bins[0], []string{driver}
	case "java":
		if err := exists(filepath.Join(dir, "conformance")); err != nil {
			return nil, err
		}
		bins, err := need("javac", "java")
		if err != nil {
			return nil, err
		}
		out := filepath.Join(workDir, "java-"+strings.ReplaceAll(strings.Trim(dir, "/"), "/", "_"))
		if err := compileJava(bins[0], dir, out); err != nil {
			return nil, err
		}
		c.bin, c.pre = bins[1], []string{"-cp", out, "io.github.nodeid.client.conformance.Driver"}
	default:
		return nil, fmt.Errorf("unknown client %q", lang)
	}
	return c, nil
}

// compileJava compiles the Java client and its driver into out, as
// CONFORMANCE.md says: javac -d out of src/main/java and conformance.
func compileJava(javac, dir, out string) error {
	var sources []string
	for _, sub := range []string{"src/main/java", "conformance"} {
		err := filepath.WalkDir(filepath.Join(dir, sub), func(path string, d os.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if !d.IsDir() && strings.HasSuffix(path, ".java") {
				sources = append(sources, path)
			}
			return nil
		})
		if err != nil {
			return fmt.Errorf("java sources: %w", err)
		}
	}
	if err := os.MkdirAll(out, 0o755); err != nil {
		return err
	}
	cmd := exec.Command(javac, append([]string{"-d", out}, sources...)...)
	cmd.Dir = dir
	if b, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("javac: %v\n%s", err, b)
	}
	return nil
}

// eachClient runs f for every client, in subtests named after the
// language that run at the same time: the scenarios wait on leases and
// clocks far more than they compute, and the drivers pause between calls.
// The subtests are not parallel tests (t.Parallel), so -parallel does not
// queue them behind one another; the top-level tests are.
func eachClient(t *testing.T, f func(t *testing.T, c *client)) {
	t.Helper()
	var wg sync.WaitGroup
	for _, lang := range langs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			t.Run(lang, func(t *testing.T) { f(t, needClient(t, lang)) })
		}()
	}
	wg.Wait()
}

// concurrently runs each function as a subtest of its name, all at once
// (as eachClient does).
func concurrently(t *testing.T, subtests map[string]func(*testing.T)) {
	t.Helper()
	var wg sync.WaitGroup
	for name, f := range subtests {
		wg.Add(1)
		go func() {
			defer wg.Done()
			t.Run(name, f)
		}()
	}
	wg.Wait()
}
