package faults

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"slices"
	"strconv"
	"strings"
)

// CorpusFile is the corpus the scenarios replay by default, relative to this
// package's folder: the seeds `bash test/all.sh` (and so CI) runs.
const CorpusFile = "corpus.txt"

// The scenarios a corpus line may name (scenario.name of the runs).
const (
	ScenarioFaults          = "faults"       // TestFaults: every default kind on MinIO
	ScenarioFaultsEtcd      = "faults-etcd"  // TestFaultsEtcd: EtcdKinds on etcd
	ScenarioNoFloor         = "nofloor"      // TestMutationNoFloor: handovers by SIGTERM, control and mutant
	ScenarioNoFence         = "nofence"      // TestMutationNoFence: stalled leaders, control and mutant
	ScenarioNoFloorEtcd     = "nofloor-etcd" // TestMutationNoFloorEtcd
	ScenarioOutage          = "outage"       // TestOutage: store outages shorter and longer than the loss grace, MinIO
	ScenarioOutageEtcd      = "outage-etcd"  // TestOutageEtcd: the same on etcd
	ScenarioStorms          = "storms"       // TestStorms: 503 and 409 bursts, and a release answered 409
	ScenarioFaultsEtcd3     = "faults-etcd3" // TestFaultsEtcd3: leader kill, member partition, quorum loss on three etcd members
	ScenarioClock           = "clock"        // TestClockFaults: clock rates, bumps and strobes within the bound, and a clock beyond it
	ScenarioFaultsRead      = "faults-read"  // TestFaultsRead: TestFaults with keep-alive by reads (challenges, confirms, answers)
	ScenarioStormsRead      = "storms-read"  // TestStormsRead: TestStorms with keep-alive by reads
	ScenarioNoFenceRead     = "nofence-read" // TestMutationNoFenceRead: a stalled leader in read mode, control and mutant
	ScenarioClockRead       = "clock-read"   // TestClockFaultsRead: clock faults with keep-alive by reads
	corpusKnownFailingToken = "known-failing"
)

// Scenarios lists every scenario a corpus line may name.
var Scenarios = []string{ScenarioFaults, ScenarioFaultsEtcd, ScenarioNoFloor, ScenarioNoFence, ScenarioNoFloorEtcd,
	ScenarioOutage, ScenarioOutageEtcd, ScenarioStorms, ScenarioFaultsEtcd3, ScenarioClock, ScenarioPartitionAzblob, ScenarioPartitionGCS, ScenarioPartitionK8s,
	ScenarioFaultsRead, ScenarioStormsRead, ScenarioNoFenceRead, ScenarioClockRead}

// ScenarioPartitionAzblob is TestPartitionAzblob's: on Azure Blob
// (Azurite), a holder partitioned past the grace, one within it, and an
// outage of every broker's store within it.
const ScenarioPartitionAzblob = "partition-azblob"

// ScenarioPartitionGCS is TestPartitionGCS's: the same on Google Cloud
// Storage (fake-gcs-server).
const ScenarioPartitionGCS = "partition-gcs"

// ScenarioPartitionK8s is TestPartitionK8s's: the same on Kubernetes
// Leases (kube-apiserver), and the apiserver killed and restarted.
const ScenarioPartitionK8s = "partition-k8s"

// CorpusEntry is one line of the corpus: a seed of a scenario, and why it is
// there (the fault kinds and check cases it covers, or the bug it once
// found).
type CorpusEntry struct {
	Seed     uint64
	Scenario string
	// KnownFailing marks a seed that fails on a bug not fixed yet: the
	// test command leaves it out, and says so.
	KnownFailing bool
	Why          string
	Line         int
}

// ParseCorpus reads a corpus: one entry a line, "SEED SCENARIO [known-failing]
// WHY...", blank lines and lines starting with # ignored. A seed appears at
// most once per scenario, and every entry says why it is there.
func ParseCorpus(r io.Reader) ([]CorpusEntry, error) {
	var out []CorpusEntry
	seen := map[string]int{}
	sc := bufio.NewScanner(r)
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		f := strings.Fields(line)
		if len(f) < 3 {
			return nil, fmt.Errorf("corpus line %d: want SEED SCENARIO WHY, got %q", n, line)
		}
		seed, err := strconv.ParseUint(f[0], 10, 64)
		if err != nil || seed == 0 {
			return nil, fmt.Errorf("corpus line %d: seed %q is not a positive number", n, f[0])
		}
		if !slices.Contains(Scenarios, f[1]) {
			return nil, fmt.Errorf("corpus line %d: unknown scenario %q (scenarios: %s)", n, f[1], strings.Join(Scenarios, ", "))
		}
		e := CorpusEntry{Seed: seed, Scenario: f[1], Line: n}
		why := f[2:]
		if why[0] == corpusKnownFailingToken {
			e.KnownFailing, why = true, why[1:]
		}
		if len(why) == 0 {
			return nil, fmt.Errorf("corpus line %d: seed %d of %s does not say why it is there", n, seed, f[1])
		}
		e.Why = strings.Join(why, " ")
		key := fmt.Sprintf("%s %d", e.Scenario, seed)
		if prev, dup := seen[key]; dup {
			return nil, fmt.Errorf("corpus line %d: seed %d of %s is already on line %d", n, seed, e.Scenario, prev)
		}
		seen[key] = n
		out = append(out, e)
	}
	return out, sc.Err()
}

// LoadCorpus reads the corpus file at path.
func LoadCorpus(path string) ([]CorpusEntry, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	es, err := ParseCorpus(f)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return es, nil
}
