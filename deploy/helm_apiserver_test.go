package deploy_test

import (
	"context"
	"encoding/base64"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/nodeid/nodeid/internal/testkit/k8stest"
)

// TestHelmChartOnTheAPIServer puts the chart's Kubernetes-store rendering
// where the strict decode cannot reach: every object is created on a real
// kube-apiserver, whose own validation and defaulting judge it (the native
// sidecar, the probes, the HPA and the PodDisruptionBudget included). Then
// the broker runs as the pod would run it: with the NODEID_ variables the
// chart gives its container, as the chart's ServiceAccount (a token from the
// TokenRequest API, in a kubeconfig), so that the chart's Role is shown to
// be enough: the broker holds a node ID in a Lease of the release's
// namespace, /health answers 200, and SIGTERM releases it (exit 0). The
// same token is refused Leases in another namespace and the pods of its
// own: the Role grants no more than the store needs.
func TestHelmChartOnTheAPIServer(t *testing.T) {
	helmBin(t)
	srv := k8stest.Start(t)
	ctx := context.Background()
	cs := srv.Clientset(t)
	r := renderStore(t, "k8s")
	if _, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: helmNamespace}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	installRendered(t, cs, r)

	tr, err := cs.CoreV1().ServiceAccounts(helmNamespace).CreateToken(ctx, r.sa.Name, &authenticationv1.TokenRequest{}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("a token of the chart's ServiceAccount %s: %v", r.sa.Name, err)
	}
	sa := &rest.Config{Host: srv.URL, BearerToken: tr.Status.Token, TLSClientConfig: rest.TLSClientConfig{CAData: srv.CAData}}
	asSA, err := kubernetes.NewForConfig(sa)
	if err != nil {
		t.Fatal(err)
	}
	waitLeaseAccess(t, asSA)
	for what, call := range map[string]func() error{
		"Leases of namespace default": func() error {
			_, err := asSA.CoordinationV1().Leases("default").List(ctx, metav1.ListOptions{})
			return err
		},
		"the pods of its namespace": func() error {
			_, err := asSA.CoreV1().Pods(helmNamespace).List(ctx, metav1.ListOptions{})
			return err
		},
	} {
		if err := call(); !apierrors.IsForbidden(err) {
			t.Errorf("the chart's ServiceAccount lists %s: %v, want Forbidden", what, err)
		}
	}

	ops := runChartBroker(t, r, writeKubeconfig(t, srv.URL, srv.CAData, tr.Status.Token))
	leases, err := cs.CoordinationV1().Leases(helmNamespace).List(ctx, metav1.ListOptions{})
	if err != nil || len(leases.Items) == 0 {
		t.Fatalf("Leases of %s once the broker was healthy: %d, %v; want the manifest and the node IDs'", helmNamespace, len(leases.Items), err)
	}
	t.Logf("the broker, as the chart's ServiceAccount, is healthy at %s; %d Leases in %s", ops, len(leases.Items), helmNamespace)
}

// installRendered creates every object of r in helmNamespace, as admin.
func installRendered(t *testing.T, cs *kubernetes.Clientset, r rendered) {
	t.Helper()
	ctx, opts, ns := context.Background(), metav1.CreateOptions{}, helmNamespace
	check := func(what string, err error) {
		t.Helper()
		if err != nil {
			t.Fatalf("the apiserver refused the chart's %s: %v", what, err)
		}
	}
	_, err := cs.CoreV1().ServiceAccounts(ns).Create(ctx, r.sa, opts)
	check("ServiceAccount", err)
	for _, role := range r.roles {
		_, err := cs.RbacV1().Roles(ns).Create(ctx, role, opts)
		check("Role "+role.Name, err)
	}
	for _, rb := range r.roleBindings {
		_, err := cs.RbacV1().RoleBindings(ns).Create(ctx, rb, opts)
		check("RoleBinding "+rb.Name, err)
	}
	for _, svc := range r.services {
		_, err := cs.CoreV1().Services(ns).Create(ctx, svc, opts)
		check("Service "+svc.Name, err)
	}
	_, err = cs.AppsV1().Deployments(ns).Create(ctx, r.deploy, opts)
	check("Deployment", err)
	_, err = cs.PolicyV1().PodDisruptionBudgets(ns).Create(ctx, r.pdb, opts)
	check("PodDisruptionBudget", err)
	if r.hpa != nil {
		_, err = cs.AutoscalingV2().HorizontalPodAutoscalers(ns).Create(ctx, r.hpa, opts)
		check("HorizontalPodAutoscaler", err)
	}
}

// waitLeaseAccess waits until the apiserver's authorizer, which learns of
// the RoleBinding through a watch, lets c list Leases in helmNamespace.
func waitLeaseAccess(t *testing.T, c *kubernetes.Clientset) {
	t.Helper()
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(20 * time.Millisecond) {
		_, err := c.CoordinationV1().Leases(helmNamespace).List(context.Background(), metav1.ListOptions{Limit: 1})
		if err == nil {
			return
		}
		if !apierrors.IsForbidden(err) || time.Now().After(deadline) {
			t.Fatalf("the chart's ServiceAccount lists Leases in %s: %v", helmNamespace, err)
		}
	}
}

// writeKubeconfig writes a kubeconfig for the apiserver at url with token,
// as the broker's --kubeconfig reads it.
func writeKubeconfig(t *testing.T, url string, ca []byte, token string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "kubeconfig")
	conf := fmt.Sprintf(`apiVersion: v1
kind: Config
clusters: [{name: test, cluster: {server: %q, certificate-authority-data: %s}}]
users: [{name: sa, user: {token: %q}}]
contexts: [{name: test, context: {cluster: test, user: sa}}]
current-context: test
`, url, base64.StdEncoding.EncodeToString(ca), token)
	if err := os.WriteFile(path, []byte(conf), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// runChartBroker runs the broker with the NODEID_ variables the chart gives
// the nodeid-broker container of r, except: the kubeconfig in place of the
// in-cluster configuration, free ports of 127.0.0.1 in place of the pod's,
// and no gossip (its key is a Secret, its join a cluster DNS name). It waits
// until /health answers 200, and when the test ends sends SIGTERM and
// expects exit 0 (the node ID released). It returns the operator address.
func runChartBroker(t *testing.T, r rendered, kubeconfig string) string {
	t.Helper()
	var env []string
	for _, c := range r.deploy.Spec.Template.Spec.InitContainers {
		if c.Name != "nodeid-broker" {
			continue
		}
		for _, e := range c.Env {
			if e.ValueFrom != nil || strings.HasPrefix(e.Name, "NODEID_GOSSIP") || e.Name == "NODEID_JOIN" {
				continue
			}
			env = append(env, e.Name+"="+e.Value)
		}
	}
	if len(env) == 0 {
		t.Fatal("no nodeid-broker init container with variables in the Deployment")
	}
	ops, ids := freeAddr(t), freeAddr(t)
	env = append(env, "NODEID_OPS_ADDR="+ops, "NODEID_HTTP_ADDR="+ids, "NODEID_KUBECONFIG="+kubeconfig,
		"NODEID_ID_FILE="+filepath.Join(t.TempDir(), "id.json"))
	cmd := exec.Command(staticBinary(t), "serve")
	cmd.Env = append([]string{"PATH=" + os.Getenv("PATH"), "HOME=" + t.TempDir()}, env...)
	logPath := filepath.Join(t.TempDir(), "broker.log")
	logFile, err := os.Create(logPath)
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stdout, cmd.Stderr = logFile, logFile
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	brokerLog := func() string { b, _ := os.ReadFile(logPath); return string(b) }
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		select {
		case err := <-exited:
			if err != nil {
				t.Errorf("the broker's exit after SIGTERM: %v, want 0 (released)\n%s", err, brokerLog())
			}
		case <-time.After(30 * time.Second):
			_ = cmd.Process.Kill()
			t.Errorf("the broker did not exit within 30 s of SIGTERM\n%s", brokerLog())
		}
	})
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(50 * time.Millisecond) {
		select {
		case err := <-exited:
			t.Fatalf("the broker exited (%v) before /health answered 200\n%s", err, brokerLog())
		default:
		}
		if resp, err := http.Get("http://" + ops + "/health"); err == nil {
			_ = resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return ops
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("the broker's /health not 200 within a minute\n%s", brokerLog())
		}
	}
}

// freeAddr returns a free address of 127.0.0.1.
func freeAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}
