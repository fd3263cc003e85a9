package conformance

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/nodeid/nodeid/snowflake"
)

// The READMEs' quick starts, as a new user runs them: the package installed
// from its folder with the language's own installer and no package index,
// the README's lines run as they stand (only the broker's address replaced),
// and the IDs they got checked.
var quickStarts = []struct {
	name, lang, readme, fence, first string
	// install installs the client at dir into work and returns the
	// command that runs a script file there, and the script's name.
	install func(t *testing.T, dir, work string) (run func(script string) []string, script string)
	// show is appended to the README's lines: it prints ids as a JSON
	// array of decimal strings. Empty: the lines print "1000 IDs from ID".
	show string
}{
	{name: "python", lang: "python", readme: "../../README.md", fence: "python", first: "from nodeid_client import HttpGenerator",
		install: installPython, show: "\nimport json\nprint(json.dumps([str(i) for i in ids]))\n"},
	{name: "node-import", lang: "node", readme: "../../README.md", fence: "js", first: "import { HttpGenerator } from 'nodeid-client';",
		install: installNode(true), show: "\nconsole.log(JSON.stringify(ids.map(String)));\n"},
	{name: "node-require", lang: "node", readme: "../node/README.md", fence: "js", first: "const { HttpGenerator } = require('nodeid-client');",
		install: installNode(false)},
}

// TestREADMEQuickStart runs the READMEs' Python and Node.js quick starts
// against a broker: each gets 1000 strictly increasing IDs of the broker's
// node ID, with the package installed locally and the README's lines; in
// Node.js both in a project of ES modules (import) and in the CommonJS
// project `npm init -y` makes (require).
func TestREADMEQuickStart(t *testing.T) {
	t.Parallel()
	for _, q := range quickStarts {
		t.Run(q.name, func(t *testing.T) {
			t.Parallel()
			readme, err := os.ReadFile(q.readme)
			if err != nil {
				t.Fatal(err)
			}
			lines := readmeBlock(t, string(readme), q.fence, q.first)
			parent, err := clientsDir()
			if err != nil {
				t.Fatal(err)
			}
			work := t.TempDir()
			run, name := q.install(t, filepath.Join(parent, q.lang), work)
			b := startBroker(t, "broker", nil, brokerArgs("serve", bucket(t))...)
			b.waitLog("serving IDs", 30*time.Second)
			script := filepath.Join(work, name)
			body := strings.ReplaceAll(lines, "http://127.0.0.1:8080", "http://"+b.addr) + q.show
			if err := os.WriteFile(script, []byte(body), 0o644); err != nil {
				t.Fatal(err)
			}
			out := runIn(t, work, run(script)...)
			node := b.claims()[0].Node
			if q.show == "" {
				m := regexp.MustCompile(`^1000 IDs from (\d+)\n$`).FindSubmatch(out)
				if m == nil {
					t.Fatalf("the quick start printed %q, want \"1000 IDs from ID\"", out)
				}
				checkQuickStartIDs(t, []string{string(m[1])}, node, 1)
				return
			}
			var ids []string
			if err := json.Unmarshal(out, &ids); err != nil {
				t.Fatalf("the quick start printed %q: %v", out, err)
			}
			checkQuickStartIDs(t, ids, node, 1000)
		})
	}
}

// readmeBlock returns the README's fenced block of the language fence that
// begins with first.
func readmeBlock(t *testing.T, readme, fence, first string) string {
	t.Helper()
	for _, m := range regexp.MustCompile("(?s)```"+fence+"\n(.*?)```").FindAllStringSubmatch(readme, -1) {
		if strings.HasPrefix(m[1], first) {
			return m[1]
		}
	}
	t.Fatalf("README.md has no %s block beginning %q", fence, first)
	return ""
}

// checkQuickStartIDs checks that ids are n strictly increasing IDs of node.
func checkQuickStartIDs(t *testing.T, ids []string, node, n int) {
	t.Helper()
	if len(ids) != n {
		t.Fatalf("got %d IDs, want %d", len(ids), n)
	}
	var last int64
	for i, s := range ids {
		id, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			t.Fatalf("ID %d %q: %v", i, s, err)
		}
		if p, err := snowflake.Decode(snowflake.ID(id)); err != nil || int(p.NodeID) != node {
			t.Fatalf("ID %d %d: node %d (%v), want the broker's %d", i, id, p.NodeID, err, node)
		}
		if i > 0 && id <= last {
			t.Fatalf("ID %d %d is not above the one before, %d", i, id, last)
		}
		last = id
	}
}

// installPython makes a virtual environment in work and installs the client
// at dir into it with pip, with no package index (the package's build
// backend is its own, of the standard library), and checks that the
// installed package has its py.typed (PEP 561: type checkers use its
// annotations).
func installPython(t *testing.T, dir, work string) (func(string) []string, string) {
	python, err := exec.LookPath("python3")
	if err != nil {
		unavailable(t, "python3 is not installed")
	}
	venv := filepath.Join(work, "venv")
	if out, err := exec.Command(python, "-m", "venv", venv).CombinedOutput(); err != nil {
		unavailable(t, "python3 -m venv: %v\n%s (Debian: apt-get install python3-venv)", err, out)
	}
	runIn(t, work, filepath.Join(venv, "bin", "pip"), "install", "--no-index", "--disable-pip-version-check", "--quiet", dir)
	py := filepath.Join(venv, "bin", "python")
	typed := runIn(t, work, py, "-B", "-c", "import importlib.resources as r; print(r.files('nodeid_client').joinpath('py.typed').is_file())")
	if strings.TrimSpace(string(typed)) != "True" {
		t.Errorf("the installed nodeid_client has no py.typed (PEP 561): %q", typed)
	}
	return func(script string) []string { return []string{py, "-B", script} }, "quickstart.py"
}

// installNode returns an installer that makes an npm project in work with
// npm init -y, of ES modules ("type": "module") when esm, else CommonJS (npm
// init's default), and installs the client at dir into it, offline; the
// script is app.js. It checks that the package resolves to its ES module
// (index.js) for import and to its CommonJS build (index.cjs) for require:
// Node.js from 20.19 may require an ES module, 18 and the tools that load
// CommonJS themselves may not.
func installNode(esm bool) func(t *testing.T, dir, work string) (func(string) []string, string) {
	return func(t *testing.T, dir, work string) (func(string) []string, string) {
		node, err := exec.LookPath("node")
		if err != nil {
			unavailable(t, "node is not installed")
		}
		npm, err := exec.LookPath("npm")
		if err != nil {
			unavailable(t, "npm is not installed (Debian: apt-get install npm)")
		}
		runIn(t, work, npm, "init", "-y")
		if esm {
			runIn(t, work, npm, "pkg", "set", "type=module")
		}
		runIn(t, work, npm, "install", "--offline", "--no-audit", "--no-fund", "--silent", dir)
		resolve, want := []string{node, "-e", "console.log(require.resolve('nodeid-client'))"}, "index.cjs"
		if esm {
			resolve, want = []string{node, "--input-type=module", "-e", "console.log(import.meta.resolve('nodeid-client'))"}, "index.js"
		}
		if got := strings.TrimSpace(string(runIn(t, work, resolve...))); filepath.Base(got) != want {
			t.Errorf("nodeid-client resolves to %s, want its %s", got, want)
		}
		return func(script string) []string { return []string{node, script} }, "app.js"
	}
}

// runIn runs argv in dir and returns its standard output, failing the test
// on an error.
func runIn(t *testing.T, dir string, argv ...string) []byte {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	cmd.Dir = dir
	cmd.Env = append(baseEnv(), "npm_config_cache="+filepath.Join(dir, ".npm"))
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("%s: %v\n%s", strings.Join(argv, " "), err, stderr.String())
	}
	return out
}
