package deploy_test

import (
	"bufio"
	"bytes"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/nodeid/nodeid/internal/testkit/nodemetrics"
)

// The operator kit (issue 14): alert rules, their unit tests, a Grafana
// dashboard and a systemd unit, checked with the real tools.
const (
	alertRules = "prometheus/nodeid-alerts.yml"
	alertTests = "prometheus/nodeid-alerts.test.yml"
	dashboard  = "grafana/nodeid-dashboard.json"
	unitFile   = "systemd/nodeid-broker.service"
	envFile    = "systemd/broker.env"
)

// tool returns the path of a command the kit is checked with: $envVar if set,
// else name on PATH. A missing tool skips the test, except with CI=true, where
// test/all.sh installs it and its absence is a failure.
func tool(t *testing.T, envVar, name string) string {
	t.Helper()
	if p := os.Getenv(envVar); p != "" {
		return p
	}
	p, err := exec.LookPath(name)
	if err == nil {
		return p
	}
	if os.Getenv("CI") == "true" {
		t.Fatalf("%s is not installed (test/all.sh installs it; or set %s)", name, envVar)
	}
	t.Skipf("%s is not installed (set %s or run test/all.sh): %v", name, envVar, err)
	return ""
}

// run runs a command and fails the test on a non-zero exit or, when quiet, on
// any output to stderr (systemd-analyze warns and still exits 0).
func run(t *testing.T, quiet bool, name string, args ...string) string {
	t.Helper()
	var stdout, stderr bytes.Buffer
	cmd := exec.Command(name, args...)
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	if err != nil || quiet && stderr.Len() > 0 {
		t.Fatalf("%s %s: %v\n%s%s", filepath.Base(name), strings.Join(args, " "), err, stdout.String(), stderr.String())
	}
	return stdout.String()
}

func TestAlertRules(t *testing.T) {
	promtool := tool(t, "NODEID_TEST_PROMTOOL", "promtool")
	run(t, false, promtool, "check", "rules", alertRules)
	// Every alert fires on a series made for it and stays quiet on another.
	out := run(t, false, promtool, "test", "rules", alertTests)
	if !strings.Contains(out, "SUCCESS") {
		t.Fatalf("promtool test rules: %s", out)
	}
	rules, tests, docs := mustRead(t, alertRules), mustRead(t, alertTests), mustRead(t, "../docs/nodeid-broker.md")
	alerts := regexp.MustCompile(`(?m)^\s+- alert: (\w+)$`).FindAllStringSubmatch(rules, -1)
	if len(alerts) < 10 {
		t.Fatalf("%s has only %d alerts", alertRules, len(alerts))
	}
	for _, m := range alerts {
		if !strings.Contains(tests, "alertname: "+m[1]+"\n") {
			t.Errorf("alert %s has no unit test in %s", m[1], alertTests)
		}
		// Its runbook annotation names its section of docs/nodeid-broker.md.
		if !strings.Contains(docs, "\n### "+m[1]+"\n") {
			t.Errorf("alert %s has no section in docs/nodeid-broker.md", m[1])
		}
	}
}

// metricRefs returns the nodeid_ metric names an expression text refers to,
// histogram series mapped to their histogram.
func metricRefs(text string) []string {
	var refs []string
	for _, m := range regexp.MustCompile(`\bnodeid_[a-z0-9_]+`).FindAllString(text, -1) {
		for _, suffix := range []string{"_bucket", "_sum", "_count"} {
			if base, ok := strings.CutSuffix(m, suffix); ok && strings.HasSuffix(base, "_seconds") {
				m = base
			}
		}
		refs = append(refs, m)
	}
	slices.Sort(refs)
	return slices.Compact(refs)
}

type grafanaDashboard struct {
	UID        string `json:"uid"`
	Templating struct {
		List []struct {
			Name string `json:"name"`
		} `json:"list"`
	} `json:"templating"`
	Panels []struct {
		ID         int    `json:"id"`
		Type       string `json:"type"`
		Title      string `json:"title"`
		Datasource *struct {
			UID string `json:"uid"`
		} `json:"datasource"`
		Targets []struct {
			Expr string `json:"expr"`
		} `json:"targets"`
	} `json:"panels"`
}

// TestKitMetricNames checks that every metric the alert rules and the
// dashboard name is one the broker really serves, so that renaming a metric
// fails here and not in an operator's silent dashboard.
func TestKitMetricNames(t *testing.T) {
	served := nodemetrics.Served(t)
	var d grafanaDashboard
	decodeFile(t, dashboard, &d)
	var exprs strings.Builder
	for _, p := range d.Panels {
		for _, tg := range p.Targets {
			exprs.WriteString(tg.Expr + "\n")
		}
	}
	used := map[string]bool{}
	for file, text := range map[string]string{alertRules: mustRead(t, alertRules), dashboard: exprs.String()} {
		refs := metricRefs(text)
		if len(refs) < 10 {
			t.Errorf("%s names only %d metrics: %v", file, len(refs), refs)
		}
		for _, m := range refs {
			used[m] = true
			if !served[m] {
				t.Errorf("%s uses %s, which the broker does not serve", file, m)
			}
		}
	}
	// The dashboard shows every nodeid metric.
	for _, m := range slices.Sorted(maps.Keys(served)) {
		if strings.HasPrefix(m, "nodeid_") && !strings.Contains(exprs.String(), m) {
			t.Errorf("the dashboard does not show %s", m)
		}
	}
}

func TestDashboard(t *testing.T) {
	var d grafanaDashboard
	decodeFile(t, dashboard, &d)
	vars := map[string]bool{}
	for _, v := range d.Templating.List {
		vars[v.Name] = true
	}
	for _, v := range []string{"datasource", "job", "instance"} {
		if !vars[v] {
			t.Errorf("no $%s template variable", v)
		}
	}
	ids := map[int]bool{}
	for _, p := range d.Panels {
		if ids[p.ID] {
			t.Errorf("panel id %d twice", p.ID)
		}
		ids[p.ID] = true
		if p.Type == "row" {
			continue
		}
		if p.Datasource == nil || p.Datasource.UID != "${datasource}" {
			t.Errorf("panel %q: datasource is not $datasource", p.Title)
		}
		if len(p.Targets) == 0 {
			t.Errorf("panel %q has no query", p.Title)
		}
		for _, tg := range p.Targets {
			if !strings.Contains(tg.Expr, `job=~"$job"`) || !strings.Contains(tg.Expr, `instance=~"$instance"`) {
				t.Errorf("panel %q: %s ignores $job or $instance", p.Title, tg.Expr)
			}
		}
	}
}

// envSettings reads NODEID_ assignments from an env file, commented-out ones
// included (they are documented options and must be flags too).
func envSettings(t *testing.T, path string) map[string]string {
	t.Helper()
	env := map[string]string{}
	sc := bufio.NewScanner(strings.NewReader(mustRead(t, path)))
	for sc.Scan() {
		line := strings.TrimPrefix(strings.TrimSpace(sc.Text()), "#")
		k, v, ok := strings.Cut(line, "=")
		if ok && strings.HasPrefix(k, "NODEID_") && !strings.Contains(k, " ") {
			env[k] = v
		}
	}
	return env
}

// flagDefault returns the default of a duration flag from serve --help.
func flagDefault(t *testing.T, help, env string) time.Duration {
	t.Helper()
	m := regexp.MustCompile(regexp.QuoteMeta("[$"+env+"]") + ` \(default ([0-9a-z.]+)\)`).FindStringSubmatch(help)
	if m == nil {
		t.Fatalf("serve --help gives no default for %s", env)
	}
	d, err := time.ParseDuration(m[1])
	if err != nil {
		t.Fatal(err)
	}
	return d
}

func TestSystemdUnit(t *testing.T) {
	analyze := tool(t, "NODEID_TEST_SYSTEMD_ANALYZE", "systemd-analyze")
	bin := staticBinary(t)
	help := run(t, false, bin, "serve", "--help")
	env := envSettings(t, envFile)
	if len(env) < 5 {
		t.Fatalf("%s sets only %v", envFile, env)
	}
	for k := range env {
		if !strings.Contains(help, "[$"+k+"]") {
			t.Errorf("%s sets %s, which is not a flag of nodeid-broker serve", envFile, k)
		}
	}
	// One ID source, the recommended one (/ids); the id file, the other, is
	// a comment, and in the unit's RuntimeDirectory when it is uncommented.
	if regexp.MustCompile(`(?m)^NODEID_ID_FILE=`).MatchString(mustRead(t, envFile)) {
		t.Errorf("%s sets NODEID_ID_FILE beside /ids: one ID source (leave the id file a comment)", envFile)
	}
	if !strings.HasPrefix(env["NODEID_ID_FILE"], "/run/nodeid/") {
		t.Errorf("NODEID_ID_FILE %q is not in the unit's RuntimeDirectory /run/nodeid", env["NODEID_ID_FILE"])
	}
	unit := mustRead(t, unitFile)
	for _, want := range []string{"\nRestart=on-failure\n", "\nKillSignal=SIGTERM\n", "\nKillMode=mixed\n",
		"\nRuntimeDirectory=nodeid\n", "\nEnvironmentFile=/etc/nodeid/broker.env\n", "\nExecStart=/usr/local/bin/nodeid-broker serve\n"} {
		if !strings.Contains(unit, want) {
			t.Errorf("%s lacks %q", unitFile, strings.TrimSpace(want))
		}
	}
	// TimeoutStopSec covers the graceful stop: the id file's grace, the release
	// (bounded by the shutdown timeout), gossip's leave (2 s) and the drain.
	m := regexp.MustCompile(`\nTimeoutStopSec=(\S+)\n`).FindStringSubmatch(unit)
	if m == nil {
		t.Fatalf("%s has no TimeoutStopSec", unitFile)
	}
	stop, err := time.ParseDuration(m[1])
	if err != nil {
		t.Fatal(err)
	}
	need := 2 * time.Second
	for _, k := range []string{"NODEID_ID_FILE_GRACE", "NODEID_SHUTDOWN_TIMEOUT", "NODEID_DRAIN_DELAY"} {
		need += flagDefault(t, help, k)
	}
	if stop <= need {
		t.Errorf("TimeoutStopSec=%v, want more than %v", stop, need)
	}

	// systemd-analyze verify, with the binary and env file where this test
	// has them; any warning fails.
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "broker.env"), []byte(mustRead(t, envFile)), 0o644); err != nil {
		t.Fatal(err)
	}
	unit = strings.ReplaceAll(unit, "/usr/local/bin/nodeid-broker", bin)
	unit = strings.ReplaceAll(unit, "/etc/nodeid/broker.env", filepath.Join(dir, "broker.env"))
	path := filepath.Join(dir, "nodeid-broker.service")
	if err := os.WriteFile(path, []byte(unit), 0o644); err != nil {
		t.Fatal(err)
	}
	run(t, true, analyze, "verify", path)
}
