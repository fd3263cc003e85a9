//go:build faults

package faults

import (
	"context"
	"net/url"
	"os"
	"testing"
	"time"

	"github.com/nodeid/nodeid/azblobstore"
	"github.com/nodeid/nodeid/lease"
)

// azuriteEnv names the variable of Azurite's account URL
// (http://127.0.0.1:PORT/devstoreaccount1), which test/all.sh sets.
const azuriteEnv = "NODEID_TEST_AZURITE_URL"

// needAzurite builds the binaries and returns the suite with the Azurite of
// NODEID_TEST_AZURITE_URL as a storeBackend. The suite does not start
// Azurite (it never restarts it: Azurite keeps its blobs in memory): without
// the variable the scenario skips, or fails with CI=true.
func needAzurite(t *testing.T) (*suite, storeBackend) {
	t.Helper()
	s := needBinaries(t)
	u := os.Getenv(azuriteEnv)
	if u == "" {
		why := azuriteEnv + " is not set"
		if os.Getenv("CI") == "true" {
			t.Fatalf("fault suite on Azure Blob: %s (CI=true, so this is a failure, not a skip; test/all.sh starts Azurite)", why)
		}
		t.Skipf(`fault suite on Azure Blob: %s (start Azurite: eval "$(bash test/azurite.sh start)")`, why)
	}
	pu, err := url.Parse(u)
	if err != nil || pu.Host == "" {
		t.Fatalf("%s=%q is not a URL with a host", azuriteEnv, u)
	}
	return s, azurite{url: pu}
}

// azurite is Azure Blob on Azurite, as a storeBackend: a container per
// run, shared key auth with the emulator's well-known account.
type azurite struct{ url *url.URL }

func (a azurite) Name() string { return "Azure Blob on Azurite at " + a.url.String() }

func (a azurite) Open(t *testing.T, name, prefix string) lease.Store {
	t.Helper()
	cfg := azblobstore.DefaultConfig()
	cfg.AccountURL, cfg.Container, cfg.Prefix = a.url.String(), name, prefix
	cfg.AccountName, cfg.AccountKey = azblobstore.AzuriteAccountName, azblobstore.AzuriteAccountKey
	cfg.RequestTimeout = 2 * time.Second
	st, err := azblobstore.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := st.Client().Create(ctx, nil); err != nil {
		t.Fatalf("create container %s on %s: %v", name, a.Name(), err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		_, _ = st.Client().Delete(ctx, nil)
	})
	return st
}

func (a azurite) Target() string { return a.url.Host }

func (a azurite) BrokerArgs(name, addr string) []string {
	u := *a.url
	u.Host = addr // shared key signs the account and path, not the host
	return []string{"--store", "azblob", "--azblob-account-url", u.String(), "--azblob-container", name}
}

func (a azurite) BrokerEnv() []string {
	return []string{"NODEID_AZBLOB_ACCOUNT_NAME=" + azblobstore.AzuriteAccountName, "NODEID_AZBLOB_ACCOUNT_KEY=" + azblobstore.AzuriteAccountKey}
}

// azblobPartition is how long the partitioned holder of TestPartitionAzblob
// is cut off: past the renew deadline and the grace after its last write
// (2 s + outageGrace), so that it must declare its loss while cut off, and
// past the lease's expiry on the store's clock (lease + 1 s + the clock
// margin, and Last-Modified's whole second), so that the spare may take its
// ID over meanwhile.
const azblobPartition = outageGrace + 4*time.Second

// TestPartitionAzblob: ScenarioPartitionAzblob, the outage scenario's rules
// on Azure Blob (Azurite), through a TCP proxy per broker, with the real
// broker (partition-azblob-control: every check must pass) and with the
// nofence mutant, which serves through its renew deadline (nofence: the
// checks must find the partitioned holder serving after the spare took its
// ID over). See testPartitionAzblob.
func TestPartitionAzblob(t *testing.T) {
	s, az := needAzurite(t)
	forEachSeed(t, ScenarioPartitionAzblob, func(t *testing.T, seed uint64) {
		t.Run("partition-azblob-control", func(t *testing.T) { testPartitionAzblob(t, s, az, seed, "") })
		t.Run("nofence", func(t *testing.T) { testPartitionAzblob(t, s, az, seed, "nofence") })
	})
}

// testPartitionAzblob runs four real brokers (--store azblob) on three node
// IDs, one of them a spare waiting for an ID, at 3 s leases and a loss grace
// of 5 s, each reaching Azurite through a TCPProxy of its own, through three
// phases:
//
//  1. one holder (the seed picks it) partitioned for azblobPartition: its
//     fence falls, it must declare its loss while cut off and exit 3, and
//     the spare takes its ID over, expired, with a higher version;
//  2. one holder partitioned for shortOutage: it must enter jeopardy
//     (/health 503), recover with the same version and serve again;
//  3. every broker's Azure Blob black-holed at once for shortOutage (Azurite
//     keeps its blobs in memory, so the outage is the proxies', not a
//     restart): each must enter jeopardy, recover and serve again.
//
// Then every check of Check (0 duplicate IDs, the floors and fences, the
// exit codes, and the store history the brokers recorded, linearizable), and
// checkOutagePhases for the short phases: no exit, no acquisition, no version
// change.
//
// With a mutation (the mutant binary) only the checks' verdict is asserted:
// nofence must give superseded-holder-served.
func testPartitionAzblob(t *testing.T, s *suite, az storeBackend, seed uint64, mutation string) {
	var (
		phases []*outagePhase
		victim *proc
		vNode  int
		vVer   int64
	)
	sc := scenario{
		name: ScenarioPartitionAzblob, seed: seed, brokers: 4, clusterSize: 3, backend: az, mutation: mutation,
		lease: outageLease, renew: time.Second, lossGrace: outageGrace,
		idsEvery: [2]time.Duration{5 * time.Millisecond, 20 * time.Millisecond}, idsN: 100,
	}
	sc.script = func(r *run) {
		// As many brokers as node IDs answer /health 200 and have answered
		// /ids, which tells the test their node IDs.
		if _, ok := r.waitServing(30 * time.Second); !ok {
			r.t.Errorf("%d brokers did not serve within 30s of the start", sc.clusterSize)
			return
		}
		r.note("on %s", az.Name())

		held := r.eligible(true)
		victim = held[int(seed%uint64(len(held)))]
		vNode, vVer = int(victim.node.Load()), victim.version.Load()
		r.apply(Event{At: r.since(), Kind: KindPartition, Pick: int(seed % uint64(len(held))), For: azblobPartition, Fault: Fault{Action: BlackHole}})
		if !waitFor(30*time.Second, func() bool { return r.holders() == sc.clusterSize }) {
			r.t.Errorf("node %d was not taken over within 30s of the partition's end", vNode)
			return
		}

		ph := r.beginPhase("partition-short", "one holder partitioned from Azure Blob for less than the grace", true, true)
		p := ph.holders[int(seed/7%uint64(len(ph.holders)))]
		ph.holders = []*proc{p}
		r.note("partition %s for %v", p.name, shortOutage)
		_ = p.proxy.Inject(Fault{Action: BlackHole})
		time.Sleep(shortOutage)
		_ = p.proxy.Heal()
		r.endPhase(ph)
		phases = append(phases, ph)

		ph = r.beginPhase("outage-blackhole", "every broker's Azure Blob black-holed", true, true)
		r.blackHoleAll(shortOutage)
		r.endPhase(ph)
		phases = append(phases, ph)
	}
	r := newRun(t, s, sc)
	rep := r.execute()
	if mutation != "" {
		if rep.Count(CheckSuperseded) == 0 {
			t.Errorf("the checks did not find the partitioned holder serving with the fence broken (%s): %s", mutation, rep.Summary())
		}
		return
	}
	if rep.Failed() {
		t.Errorf("the checks failed on Azure Blob (reproduce with -seed %d): %s", seed, rep.Summary())
	}
	if victim == nil {
		return // the script failed before the partition
	}
	checkOutagePhases(t, r, phases)
	b := r.h.Broker(victim.idx)
	switch {
	case !b.Exited || b.ExitCode != 3:
		t.Errorf("%s, partitioned for %v while holding node %d, exited %v with %d, want exit 3 (lease lost): %s", b.Name, azblobPartition, vNode, b.Exited, b.ExitCode, b.ExitErr)
	case b.LossLoggedAt == 0:
		t.Errorf("%s never logged its loss", b.Name)
	}
	taken := false
	if vNode < 0 {
		t.Fatalf("the partitioned %s's node ID was never seen", b.Name)
	}
	for _, o := range r.h.Takeovers {
		taken = taken || o.Node == vNode && o.Version > vVer && o.Expired && o.Broker != victim.idx
	}
	if !taken {
		t.Errorf("node %d (v%d, held by the partitioned %s) was never taken over expired by another broker", vNode, vVer, b.Name)
	}
}

// holders returns how many slots' brokers answer /health 200.
func (r *run) holders() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	n := 0
	for _, p := range r.slots {
		if p != nil && !p.hasExited() && p.healthy.Load() {
			n++
		}
	}
	return n
}
