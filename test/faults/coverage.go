package faults

import (
	"fmt"
	"slices"
	"strings"
)

// Coverage sums what a set of runs (a replay of the corpus) exercised: the
// fault kinds applied, and how often each check was put to the test
// (Report.Exercised) or, in the mutants' runs, caught something.
type Coverage struct {
	Runs      int
	Kinds     map[string]int // applied, by kind ("skipped": an event with nobody to pick)
	Exercised map[string]int // Report.Exercised, summed
	Caught    map[string]int // violations found in the mutants' runs, by check
}

// Add counts one run: the faults it applied and its report.
func (c *Coverage) Add(faults map[string]int, rep *Report, mutant bool) {
	if c.Kinds == nil {
		c.Kinds, c.Exercised, c.Caught = map[string]int{}, map[string]int{}, map[string]int{}
	}
	c.Runs++
	for k, n := range faults {
		c.Kinds[k] += n
	}
	for k, n := range rep.Exercised {
		c.Exercised[k] += n
	}
	if mutant {
		for _, v := range rep.Violations {
			c.Caught[v.Check]++
		}
	}
}

// Missing returns the kinds never applied and the checks never exercised
// (by a case of theirs) nor caught.
func (c *Coverage) Missing(kinds []Kind, checks []string) (k, ch []string) {
	for _, kind := range kinds {
		if c.Kinds[string(kind)] == 0 {
			k = append(k, string(kind))
		}
	}
	for _, check := range checks {
		n := c.Caught[check]
		for key, m := range c.Exercised {
			if key == check || strings.HasPrefix(key, check+"/") {
				n += m
			}
		}
		if n == 0 {
			ch = append(ch, check)
		}
	}
	return k, ch
}

// CoverageKinds are the kinds a replay of the whole corpus should apply:
// every kind of the S3 and etcd schedules, the leader stalls of
// TestMutationNoFence and the fenced stop that ends TestFaults and
// TestFaultsEtcd.
func CoverageKinds() []Kind {
	ks := slices.Clone(AllKinds)
	for _, k := range append(slices.Clone(EtcdKinds), KindTermFenced) {
		if !slices.Contains(ks, k) {
			ks = append(ks, k)
		}
	}
	return ks
}

// String prints the coverage and what is missing from it.
func (c *Coverage) String() string {
	k, ch := c.Missing(CoverageKinds(), Checks)
	var b strings.Builder
	fmt.Fprintf(&b, "COVERAGE of %d runs\n  fault kinds applied: %s\n  checks put to the test: %s\n  caught in the mutants' runs: %s\n",
		c.Runs, formatCounts(c.Kinds), formatCounts(c.Exercised), formatCounts(c.Caught))
	fmt.Fprintf(&b, "  kinds never applied: %s\n  checks never put to the test: %s\n", orNone(k), orNone(ch))
	return b.String()
}

func orNone(s []string) string {
	if len(s) == 0 {
		return "none"
	}
	return strings.Join(s, ", ")
}
