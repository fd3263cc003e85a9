package main

import (
	"context"
	"encoding/json"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/nodeid/nodeid/etcdstore"
	"github.com/nodeid/nodeid/internal/testkit/etcdtest"
	"github.com/nodeid/nodeid/lease"
	"github.com/nodeid/nodeid/lease/storetest"
	"github.com/nodeid/nodeid/node"
)

// checkHistories reads the --debug-store-history files in dir back as one
// history, checks that it has writes of the lease objects and that it is
// linearizable (storetest.CheckLinearizable). The probe object is left out:
// nodeidctl check writes it too, unrecorded.
func checkHistories(t *testing.T, dir string) {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(dir, "*.jsonl"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no history files in %s: %v", dir, err)
	}
	var all []storetest.Call
	writes := 0
	for i, name := range files {
		f, err := os.Open(name)
		if err != nil {
			t.Fatal(err)
		}
		calls, err := storetest.ReadCallLog(f)
		_ = f.Close()
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range calls {
			if c.Key == lease.ProbeKey {
				continue
			}
			c.Client = i + 1
			all = append(all, c)
			if c.Op != storetest.OpGet && c.Outcome == storetest.OutcomeDone && c.Key == lease.RecordKey(0) {
				writes++
			}
		}
	}
	if writes < 2 {
		t.Fatalf("the histories of %d brokers have %d done writes of %s, want its take and renewals", len(files), writes, lease.RecordKey(0))
	}
	if err := storetest.CheckLinearizable(all, time.Minute); err != nil {
		t.Fatalf("the brokers' store history (%d calls): %v", len(all), err)
	}
	t.Logf("the brokers' store history: %d calls, linearizable", len(all))
}

// readEtcdLease reads node id's lease record from etcd.
func readEtcdLease(t *testing.T, st *etcdstore.Store, id int) (lease.Record, lease.Meta) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	body, meta, err := st.Get(ctx, lease.RecordKey(id))
	if err != nil {
		t.Fatalf("read lease %d from etcd: %v", id, err)
	}
	r, err := lease.DecodeRecord(body, id)
	if err != nil {
		t.Fatalf("lease %d: %v", id, err)
	}
	return r, meta
}

// TestServeEtcd runs brokers on a real etcd (the pinned server of
// test/etcd/install.sh): two get distinct IDs; SIGTERM releases at once and a
// newcomer takes the ID free with a higher version; after kill -9 the ID stays
// taken while etcd keeps its liveness, and a newcomer takes it, expired, with
// a higher version; no ID repeats.
func TestServeEtcd(t *testing.T) {
	t.Parallel()
	srv := etcdtest.Start(t)
	st, err := etcdstore.New(etcdstore.Config{Endpoints: []string{srv.Endpoint}, Prefix: "nodeid/"})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	env := brokerEnv(t)
	args := slices.Concat([]string{"--store", "etcd", "--etcd-endpoints", srv.Endpoint, "--cluster-size", "2"}, shortLease)
	var ids idLedger
	// Each broker records its store calls (--debug-store-history), checked
	// together at the end: the wrapper must keep etcd's live writes (b's
	// lease reads live below) and the history must be linearizable.
	histories := t.TempDir()
	recorded := func(name string) []string {
		return append(slices.Clone(args), "--debug-store-history", filepath.Join(histories, name+".jsonl"))
	}

	a := startBroker(t, "a", env, recorded("a")...)
	b := startBroker(t, "b", env, recorded("b")...)
	as, bs := a.waitHeld(15*time.Second), b.waitHeld(15*time.Second)
	if as.NodeID == bs.NodeID || as.Version != 1 || bs.Version != 1 {
		t.Fatalf("a holds node %d version %d, b node %d version %d: want two IDs, version 1", as.NodeID, as.Version, bs.NodeID, bs.Version)
	}
	fetchIDs(t, a, as.NodeID, &ids)
	fetchIDs(t, b, bs.NodeID, &ids)
	if _, meta := readEtcdLease(t, st, bs.NodeID); meta.Liveness != lease.LivenessLive {
		t.Fatalf("b's lease in etcd: liveness %v, want live", meta.Liveness)
	}
	t.Run("nodeidctl agrees", func(t *testing.T) {
		ctlEnv := append(brokerEnv(t), "NODEID_STORE=etcd", "NODEID_ETCD_ENDPOINTS="+srv.Endpoint)
		cmd := exec.Command(ctlBin, "status", "--json")
		cmd.Env = ctlEnv
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("nodeidctl status --json: %v\n%s", err, out)
		}
		var ctl struct {
			Manifest struct {
				ClusterSize int `json:"clusterSize"`
			} `json:"manifest"`
			Leases []struct {
				NodeID  int    `json:"nodeId"`
				State   string `json:"state"`
				Holder  string `json:"holder"`
				Version int64  `json:"version"`
			} `json:"leases"`
		}
		if err := json.Unmarshal(out, &ctl); err != nil || ctl.Manifest.ClusterSize != 2 || len(ctl.Leases) != 2 {
			t.Fatalf("nodeidctl status --json: %v\n%s", err, out)
		}
		for _, s := range []node.StatusResponse{as, bs} {
			if l := ctl.Leases[s.NodeID]; l.NodeID != s.NodeID || l.State != "held" || l.Holder != s.Task || l.Version != s.Version {
				t.Errorf("nodeidctl sees node %d as %+v; the broker's /status says %+v", s.NodeID, l, s)
			}
		}
		// check: the probe passes, and etcd needs no Date or Last-Modified.
		cmd = exec.Command(ctlBin, "check")
		cmd.Env = ctlEnv
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Errorf("nodeidctl check on etcd: %v\n%s", err, out)
		}
		// A live lease is not released without --force.
		cmd = exec.Command(ctlBin, "release", "--id", strconv.Itoa(bs.NodeID))
		cmd.Env = ctlEnv
		if out, err := cmd.CombinedOutput(); err == nil || !strings.Contains(string(out), "etcd") {
			t.Errorf("nodeidctl release of b's live lease: %v\n%s; want a refusal naming etcd's liveness", err, out)
		}
	})

	// SIGTERM: a releases its ID and exits 0; c takes it free, version 2.
	a.signal(syscall.SIGTERM)
	if code := a.waitExit(15 * time.Second); code != 0 {
		t.Fatalf("a exited %d after SIGTERM, want 0", code)
	}
	if rec, _ := readEtcdLease(t, st, as.NodeID); rec.Holder != "" || rec.Version != as.Version {
		t.Fatalf("after a's SIGTERM, lease %d = holder %q version %d; want free, version %d", as.NodeID, rec.Holder, rec.Version, as.Version)
	}
	c := startBroker(t, "c", env, recorded("c")...)
	cs := c.waitTakeover(as, "free", 10*time.Second)
	fetchIDs(t, c, cs.NodeID, &ids)

	// kill -9: b's ID stays taken while etcd keeps its liveness; d waits
	// (503 acquiring), then takes it expired, with version 2.
	b.signal(syscall.SIGKILL)
	b.waitExit(5 * time.Second)
	killed := time.Now()
	d := startBroker(t, "d", env, recorded("d")...)
	if code, _, err := d.get("/ids"); err != nil || code != http.StatusServiceUnavailable {
		t.Errorf("d's /ids while acquiring: HTTP %d %v; want 503", code, err)
	}
	ds := d.waitTakeover(bs, "expired", 20*time.Second)
	t.Logf("d took node %d %v after the kill", ds.NodeID, time.Since(killed).Round(time.Millisecond))
	if floor := d.waitLog("acquired node ID", time.Second)["floor"]; floor == nil || floor.(float64) <= 0 {
		t.Errorf("d took node %d with floor %v, want b's reservation", ds.NodeID, floor)
	}
	fetchIDs(t, d, ds.NodeID, &ids)
	t.Logf("%d IDs from 4 brokers on etcd, none repeated", ids.len())
	checkHistories(t, histories)
}
