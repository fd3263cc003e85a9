package main

import (
	"context"
	"encoding/json"
	"os/exec"
	"path/filepath"
	"slices"
	"syscall"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/nodeid/nodeid/internal/testkit/k8stest"
	"github.com/nodeid/nodeid/lease"
)

// TestServeK8s runs brokers with --store k8s on a real kube-apiserver (the
// pinned binary of test/k8s/install.sh) as the least-privilege user, through
// a kubeconfig: two get distinct IDs, nodeidctl status and check agree,
// SIGTERM releases at once and a newcomer takes the ID free; after kill -9 a
// newcomer takes it expired, judged on the apiserver's clock; no ID repeats
// and the brokers' store history is linearizable.
func TestServeK8s(t *testing.T) {
	t.Parallel()
	srv := k8stest.Start(t)
	srv.Namespace(t, "ids")
	kubeconfig := srv.Kubeconfig(t, k8stest.User, "ids")
	env := brokerEnv(t, "NODEID_KUBECONFIG="+kubeconfig)
	args := slices.Concat([]string{"--store", "k8s", "--cluster-size", "2"}, shortLease)
	histories := t.TempDir()
	recorded := func(name string) []string {
		return append(slices.Clone(args), "--debug-store-history", filepath.Join(histories, name+".jsonl"))
	}
	var ids idLedger
	a := startBroker(t, "a", env, recorded("a")...)
	b := startBroker(t, "b", env, recorded("b")...)
	as, bs := a.waitHeld(20*time.Second), b.waitHeld(20*time.Second)
	if as.NodeID == bs.NodeID || as.Version != 1 || bs.Version != 1 {
		t.Fatalf("a holds node %d version %d, b node %d version %d: want two IDs, version 1", as.NodeID, as.Version, bs.NodeID, bs.Version)
	}
	fetchIDs(t, a, as.NodeID, &ids)
	fetchIDs(t, b, bs.NodeID, &ids)

	// The Lease is where the docs say, named from the default prefix
	// "nodeid/".
	ctx := context.Background()
	if _, err := srv.Clientset(t).CoordinationV1().Leases("ids").Get(ctx, "nodeid-2f"+lease.RecordKey(as.NodeID), metav1.GetOptions{}); err != nil {
		t.Errorf("a's Lease: %v", err)
	}

	ctlEnv := append(brokerEnv(t), "NODEID_STORE=k8s", "NODEID_KUBECONFIG="+kubeconfig)
	cmd := exec.Command(ctlBin, "status", "--json")
	cmd.Env = ctlEnv
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("nodeidctl status --json: %v\n%s", err, out)
	}
	var ctl struct {
		Leases []struct {
			NodeID int    `json:"nodeId"`
			State  string `json:"state"`
			Holder string `json:"holder"`
		} `json:"leases"`
	}
	if err := json.Unmarshal(out, &ctl); err != nil || len(ctl.Leases) != 2 || ctl.Leases[as.NodeID].Holder != as.Task || ctl.Leases[bs.NodeID].State != "held" {
		t.Fatalf("nodeidctl status --json: %v\n%s", err, out)
	}
	cmd = exec.Command(ctlBin, "check")
	cmd.Env = ctlEnv
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Errorf("nodeidctl check on Kubernetes Leases: %v\n%s", err, out)
	}

	a.signal(syscall.SIGTERM)
	if code := a.waitExit(15 * time.Second); code != 0 {
		t.Fatalf("a exited %d after SIGTERM, want 0", code)
	}
	c := startBroker(t, "c", env, recorded("c")...)
	cs := c.waitTakeover(as, "free", 15*time.Second)
	fetchIDs(t, c, cs.NodeID, &ids)

	b.signal(syscall.SIGKILL)
	b.waitExit(5 * time.Second)
	killed := time.Now()
	d := startBroker(t, "d", env, recorded("d")...)
	ds := d.waitTakeover(bs, "expired", 30*time.Second)
	t.Logf("d took node %d %v after the kill", ds.NodeID, time.Since(killed).Round(time.Millisecond))
	fetchIDs(t, d, ds.NodeID, &ids)
	t.Logf("%d IDs from 4 brokers on Kubernetes Leases, none repeated", ids.len())
	checkHistories(t, histories)
}
