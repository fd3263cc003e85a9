package faults

import (
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"
)

// TestCorpus: the corpus parses, has a seed for every scenario, and its fault
// scenarios' schedules draw every kind of theirs; seed 629954 still replays
// the schedule that found the exit-code rule wrong (issue 25).
func TestCorpus(t *testing.T) {
	entries, err := LoadCorpus(CorpusFile)
	if err != nil {
		t.Fatal(err)
	}
	drawn := map[string]map[Kind]int{}
	for _, e := range entries {
		if e.KnownFailing {
			continue
		}
		if drawn[e.Scenario] == nil {
			drawn[e.Scenario] = map[Kind]int{}
		}
		if e.Scenario != ScenarioFaults && e.Scenario != ScenarioFaultsEtcd && e.Scenario != ScenarioFaultsRead {
			continue
		}
		for _, ev := range FaultsSchedule(e.Seed, e.Scenario == ScenarioFaultsEtcd, 0, nil) {
			drawn[e.Scenario][ev.Kind]++
		}
	}
	for _, sc := range Scenarios {
		if drawn[sc] == nil {
			t.Errorf("no seed of scenario %s in %s", sc, CorpusFile)
		}
	}
	for sc, kinds := range map[string][]Kind{ScenarioFaults: DefaultKinds, ScenarioFaultsEtcd: EtcdKinds, ScenarioFaultsRead: DefaultKinds} {
		for _, k := range kinds {
			if drawn[sc][k] == 0 {
				t.Errorf("the corpus's %s schedules never draw %s: %v", sc, k, drawn[sc])
			}
		}
	}
	ev := FaultsSchedule(629954, true, 0, nil)
	if len(ev) < 2 || ev[0].Kind != KindEtcd || ev[0].At != 6*time.Second || ev[0].For.Round(10*time.Millisecond) != 2960*time.Millisecond ||
		ev[1].Kind != KindTerm || ev[1].At.Round(10*time.Millisecond) != 7550*time.Millisecond {
		t.Errorf("seed 629954 of faults-etcd no longer draws etcd down at 6.00 s for 2.96 s and a SIGTERM at 7.55 s (a kind added to EtcdKinds, or the schedule's draws changed?): it no longer replays the run of issue 25:\n%s",
			FormatSchedule(ev[:min(len(ev), 3)]))
	}
}

func TestParseCorpus(t *testing.T) {
	es, err := ParseCorpus(strings.NewReader("# comment\n\n7 faults why\n8  nofence  known-failing  a bug\n"))
	if err != nil {
		t.Fatal(err)
	}
	want := []CorpusEntry{{Seed: 7, Scenario: ScenarioFaults, Why: "why", Line: 3}, {Seed: 8, Scenario: ScenarioNoFence, KnownFailing: true, Why: "a bug", Line: 4}}
	if !slices.Equal(es, want) {
		t.Errorf("got %+v, want %+v", es, want)
	}
	for _, bad := range []string{
		"7 faults",                     // no why
		"7 faults known-failing",       // no why
		"x faults why",                 // seed
		"0 faults why",                 // seed
		"7 soak why",                   // scenario
		"7 faults why\n7 faults again", // twice
	} {
		if _, err := ParseCorpus(strings.NewReader(bad)); err == nil {
			t.Errorf("%q parsed", bad)
		}
	}
}

func TestCoverageMissing(t *testing.T) {
	var c Coverage
	c.Add(map[string]int{"kill9": 2, "skipped": 1}, &Report{Exercised: map[string]int{CheckExitCode + "/lost": 1, CheckRelease: 3}}, false)
	c.Add(map[string]int{"sigterm": 1}, &Report{Violations: []Violation{{Check: CheckDuplicate}}}, true)
	kinds, checks := c.Missing([]Kind{KindKill, KindTerm, KindPause}, []string{CheckExitCode, CheckRelease, CheckDuplicate, CheckCorrupt})
	if !slices.Equal(kinds, []string{"sigstop"}) || !slices.Equal(checks, []string{CheckCorrupt}) {
		t.Errorf("missing kinds %v, checks %v; want [sigstop], [%s]", kinds, checks, CheckCorrupt)
	}
	if s := c.String(); !strings.Contains(s, "kinds never applied: "+string(KindPause)) {
		t.Errorf("String:\n%s", s)
	}
}

// TestExploreKnowsEveryScenario: test/explore.sh, which explores the
// scenarios with fresh seeds, names every scenario a corpus line may name,
// each with a test of this package that exists, and nothing else.
func TestExploreKnowsEveryScenario(t *testing.T) {
	script, err := os.ReadFile("../explore.sh")
	if err != nil {
		t.Fatal(err)
	}
	known := map[string]string{}
	for _, m := range regexp.MustCompile(`\[([a-z0-9-]+)\]=(Test\w+)`).FindAllStringSubmatch(string(script), -1) {
		known[m[1]] = m[2]
	}
	sources, err := filepath.Glob("*_test.go")
	if err != nil {
		t.Fatal(err)
	}
	var all strings.Builder
	for _, f := range sources {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		all.Write(b)
	}
	for _, sc := range Scenarios {
		test, ok := known[sc]
		switch {
		case !ok:
			t.Errorf("test/explore.sh does not know scenario %s", sc)
		case !strings.Contains(all.String(), "func "+test+"(t *testing.T)"):
			t.Errorf("test/explore.sh runs %s for %s: no such test here", test, sc)
		}
		delete(known, sc)
	}
	for sc := range known {
		t.Errorf("test/explore.sh names %s, not a scenario of corpus.go", sc)
	}
}
