package deploy_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"sigs.k8s.io/yaml"
)

// The Helm chart (deploy/kubernetes.md), rendered with the real helm for
// every store's values file and decoded strictly into the Kubernetes API's
// own types.
const (
	chartDir      = "helm/nodeid"
	helmNamespace = "orders"
)

// helmStores are the chart's values files, ci/<store>-values.yaml, one per
// store the chart offers.
var helmStores = []string{"k8s", "s3", "gcs", "azblob"}

// helmBin returns NODEID_TEST_HELM, the helm test/helm/install.sh builds. It
// skips the test when that is unset, except with CI=true, where test/all.sh
// sets it and its absence is a failure.
func helmBin(t *testing.T) string {
	t.Helper()
	p := os.Getenv("NODEID_TEST_HELM")
	if p == "" {
		if os.Getenv("CI") == "true" {
			t.Fatal("NODEID_TEST_HELM is not set (test/all.sh builds helm with test/helm/install.sh)")
		}
		t.Skip("set NODEID_TEST_HELM to the path test/helm/install.sh prints, or run test/all.sh")
	}
	return p
}

// runHelm runs helm with its own empty configuration and cache directories
// and returns its stdout, and an error naming its stderr when it fails.
func runHelm(t *testing.T, args ...string) (string, error) {
	t.Helper()
	home := t.TempDir()
	var stdout, stderr bytes.Buffer
	cmd := exec.Command(helmBin(t), args...)
	cmd.Env = append(os.Environ(), "HELM_CACHE_HOME="+home+"/cache", "HELM_CONFIG_HOME="+home+"/config", "HELM_DATA_HOME="+home+"/data")
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return stdout.String(), fmt.Errorf("helm %s: %v\n%s%s", strings.Join(args, " "), err, stdout.String(), stderr.String())
	}
	return stdout.String(), nil
}

// helmTemplate renders the chart in dir with a store's values file and extra
// helm arguments (--set ...).
func helmTemplate(t *testing.T, dir, store string, extra ...string) (string, error) {
	t.Helper()
	args := append([]string{"template", "orders", dir, "--namespace", helmNamespace,
		"-f", filepath.Join(chartDir, "ci", store+"-values.yaml")}, extra...)
	return runHelm(t, args...)
}

// kubeTypes maps an apiVersion and kind to a new object of its Go type: each
// kind the chart renders. Any other kind is an error.
var kubeTypes = map[string]func() any{
	"apps/v1 Deployment":                       func() any { return new(appsv1.Deployment) },
	"v1 Service":                               func() any { return new(corev1.Service) },
	"v1 ServiceAccount":                        func() any { return new(corev1.ServiceAccount) },
	"rbac.authorization.k8s.io/v1 Role":        func() any { return new(rbacv1.Role) },
	"rbac.authorization.k8s.io/v1 RoleBinding": func() any { return new(rbacv1.RoleBinding) },
	"policy/v1 PodDisruptionBudget":            func() any { return new(policyv1.PodDisruptionBudget) },
	"autoscaling/v2 HorizontalPodAutoscaler":   func() any { return new(autoscalingv2.HorizontalPodAutoscaler) },
}

var yamlSeparator = regexp.MustCompile(`(?m)^---\s*$`)

// decodeManifest decodes each document of a rendered manifest into its
// Kubernetes type, refusing an unknown field anywhere in it (a misspelt one:
// the API server would drop it or refuse the object), a duplicated key, or
// a kind the chart has no business rendering.
func decodeManifest(manifest string) ([]any, error) {
	var objs []any
	for i, doc := range yamlSeparator.Split(manifest, -1) {
		js, err := yaml.YAMLToJSONStrict([]byte(doc))
		if err != nil {
			return nil, fmt.Errorf("document %d: %v", i, err)
		}
		if string(js) == "null" {
			continue // comments only
		}
		var meta struct{ APIVersion, Kind string }
		if err := json.Unmarshal(js, &meta); err != nil {
			return nil, fmt.Errorf("document %d: %v", i, err)
		}
		newObj, ok := kubeTypes[meta.APIVersion+" "+meta.Kind]
		if !ok {
			return nil, fmt.Errorf("document %d: unexpected kind %q %q", i, meta.APIVersion, meta.Kind)
		}
		obj := newObj()
		dec := json.NewDecoder(bytes.NewReader(js))
		dec.DisallowUnknownFields()
		if err := dec.Decode(obj); err != nil {
			return nil, fmt.Errorf("document %d (%s %s): %v", i, meta.Kind, name(obj), err)
		}
		objs = append(objs, obj)
	}
	return objs, nil
}

func name(obj any) string {
	if o, ok := obj.(interface{ GetName() string }); ok {
		return o.GetName()
	}
	return "?"
}

// rendered is the chart's output for one values file, by kind.
type rendered struct {
	deploy       *appsv1.Deployment
	services     map[string]*corev1.Service
	sa           *corev1.ServiceAccount
	roles        []*rbacv1.Role
	roleBindings []*rbacv1.RoleBinding
	pdb          *policyv1.PodDisruptionBudget
	hpa          *autoscalingv2.HorizontalPodAutoscaler
}

func renderStore(t *testing.T, store string, extra ...string) rendered {
	t.Helper()
	out, err := helmTemplate(t, chartDir, store, extra...)
	if err != nil {
		t.Fatal(err)
	}
	objs, err := decodeManifest(out)
	if err != nil {
		t.Fatalf("ci/%s-values.yaml: %v", store, err)
	}
	r := rendered{services: map[string]*corev1.Service{}}
	for _, o := range objs {
		switch o := o.(type) {
		case *appsv1.Deployment:
			r.deploy = o
		case *corev1.Service:
			r.services[o.Name] = o
		case *corev1.ServiceAccount:
			r.sa = o
		case *rbacv1.Role:
			r.roles = append(r.roles, o)
		case *rbacv1.RoleBinding:
			r.roleBindings = append(r.roleBindings, o)
		case *policyv1.PodDisruptionBudget:
			r.pdb = o
		case *autoscalingv2.HorizontalPodAutoscaler:
			r.hpa = o
		}
	}
	if r.deploy == nil || r.sa == nil || r.pdb == nil {
		t.Fatalf("ci/%s-values.yaml: want a Deployment, a ServiceAccount and a PodDisruptionBudget, got %d objects", store, len(objs))
	}
	return r
}

// chartValue reads a value (a path of keys) of ci/<store>-values.yaml, or
// else of values.yaml.
func chartValue(t *testing.T, store string, path ...string) any {
	t.Helper()
	for _, f := range []string{"ci/" + store + "-values.yaml", "values.yaml"} {
		var m map[string]any
		if err := yaml.Unmarshal([]byte(mustRead(t, filepath.Join(chartDir, f))), &m); err != nil {
			t.Fatal(err)
		}
		var v any = m
		for _, k := range path {
			mm, _ := v.(map[string]any)
			v = mm[k]
		}
		if v != nil {
			return v
		}
	}
	t.Fatalf("no value %s", strings.Join(path, "."))
	return nil
}

func envMap(env []corev1.EnvVar) map[string]corev1.EnvVar {
	m := map[string]corev1.EnvVar{}
	for _, e := range env {
		m[e.Name] = e
	}
	return m
}

// TestHelmChart renders the chart for each store and checks what a graceful,
// safe deployment rests on: the broker as a native sidecar, the probes on
// its endpoints, a grace that outlasts the release, the least RBAC, the pod
// count within the cluster size, the store's identity and the gossip join.
func TestHelmChart(t *testing.T) {
	helmBin(t)
	help := brokerHelp(t)
	for _, store := range helmStores {
		t.Run(store, func(t *testing.T) {
			src := "ci/" + store + "-values.yaml"
			if out, err := runHelm(t, "lint", "--strict", chartDir, "-f", filepath.Join(chartDir, "ci", store+"-values.yaml")); err != nil {
				t.Fatal(err)
			} else if !strings.Contains(out, "0 chart(s) failed") {
				t.Fatalf("helm lint: %s", out)
			}
			r := renderStore(t, store)
			spec := r.deploy.Spec.Template.Spec
			if len(spec.InitContainers) != 1 || len(spec.Containers) != 1 {
				t.Fatalf("%s: want the broker as the one init container and the application as the one container: %d, %d", src, len(spec.InitContainers), len(spec.Containers))
			}
			broker, app := spec.InitContainers[0], spec.Containers[0]
			env := envMap(broker.Env)

			// A native sidecar: an init container that keeps running.
			var restart corev1.ContainerRestartPolicy
			if broker.RestartPolicy != nil {
				restart = *broker.RestartPolicy
			}
			if broker.Name != "nodeid-broker" || restart != corev1.ContainerRestartPolicyAlways || !slices.Equal(broker.Args, []string{"serve"}) {
				t.Errorf("%s: broker %q: want a native sidecar (restartPolicy Always) running serve; restartPolicy %q, args %v", src, broker.Name, restart, broker.Args)
			}
			if env["NODEID_STORE"].Value != store {
				t.Errorf("%s: NODEID_STORE %q, want %q", src, env["NODEID_STORE"].Value, store)
			}

			// Every NODEID_ variable is a flag of serve. The k8s store's own
			// flags are checked once the broker has that store.
			k8sKnown := strings.Contains(help, "[$NODEID_K8S_NAMESPACE]")
			for k := range env {
				if !strings.HasPrefix(k, "NODEID_") || strings.Contains(help, "[$"+k+"]") {
					continue
				}
				if !k8sKnown && (k == "NODEID_K8S_NAMESPACE" || k == "NODEID_STORE" && store == "k8s") {
					t.Logf("%s sets %s: not a flag of this broker yet (the k8s store is on its own branch)", src, k)
					continue
				}
				t.Errorf("%s sets %s, which is not a flag of nodeid-broker serve", src, k)
			}

			// /ids on loopback only, the operator endpoints on the probed port.
			if host, _, err := net.SplitHostPort(env["NODEID_HTTP_ADDR"].Value); err != nil || host != "127.0.0.1" {
				t.Errorf("%s: NODEID_HTTP_ADDR %q: /ids must be on 127.0.0.1", src, env["NODEID_HTTP_ADDR"].Value)
			}
			_, opsPort, err := net.SplitHostPort(env["NODEID_OPS_ADDR"].Value)
			if err != nil {
				t.Fatalf("%s: NODEID_OPS_ADDR: %v", src, err)
			}
			portOf := func(p corev1.ContainerPort) string { return strconv.Itoa(int(p.ContainerPort)) }
			probeChecks := []struct {
				name string
				p    *corev1.Probe
				path string
			}{{"startup", broker.StartupProbe, "/health"}, {"liveness", broker.LivenessProbe, "/health"}, {"readiness", broker.ReadinessProbe, "/ready"}}
			for _, c := range probeChecks {
				if c.p == nil || c.p.HTTPGet == nil {
					t.Errorf("%s: no %s probe with httpGet", src, c.name)
					continue
				}
				port := c.p.HTTPGet.Port.String()
				for _, p := range broker.Ports {
					if p.Name == port {
						port = portOf(p)
					}
				}
				if c.p.HTTPGet.Path != c.path || port != opsPort {
					t.Errorf("%s: %s probe GET %s on port %s; want %s on the operator port %s", src, c.name, c.p.HTTPGet.Path, port, c.path, opsPort)
				}
			}
			if app.StartupProbe != nil || app.ReadinessProbe != nil || app.LivenessProbe != nil {
				t.Errorf("%s: the chart gives the application no probes of its own", src)
			}

			// A broker in jeopardy answers 503 for up to the loss grace (the
			// lease): the liveness probe must wait longer before a restart.
			dur := func(k string) time.Duration {
				d, err := time.ParseDuration(env[k].Value)
				if err != nil {
					t.Fatalf("%s: %s=%q: %v", src, k, env[k].Value, err)
				}
				return d
			}
			if lp := broker.LivenessProbe; lp != nil && time.Duration(lp.PeriodSeconds*lp.FailureThreshold)*time.Second <= dur("NODEID_LEASE_DURATION") {
				t.Errorf("%s: liveness probe gives up after %d x %d s, not more than the lease %v", src, lp.PeriodSeconds, lp.FailureThreshold, dur("NODEID_LEASE_DURATION"))
			}

			// The grace outlasts the whole stop: the application's preStop
			// sleep and its stop (the sidecar is stopped after it), then the
			// broker's id file grace, release, gossip leave (2 s) and drain.
			need := dur("NODEID_SHUTDOWN_TIMEOUT") + dur("NODEID_DRAIN_DELAY") + 2*time.Second
			if _, ok := env["NODEID_ID_FILE"]; ok {
				need += dur("NODEID_ID_FILE_GRACE")
			}
			if l := app.Lifecycle; l != nil && l.PreStop != nil {
				if l.PreStop.Sleep == nil {
					t.Errorf("%s: the application's preStop is not a sleep: %+v", src, l.PreStop)
				} else {
					need += time.Duration(l.PreStop.Sleep.Seconds) * time.Second
				}
			}
			need += time.Duration(chartValue(t, store, "app", "stopSeconds").(float64)) * time.Second
			if g := spec.TerminationGracePeriodSeconds; g == nil || time.Duration(*g)*time.Second <= need {
				t.Errorf("%s: terminationGracePeriodSeconds %v, want more than %v", src, g, need)
			}

			// The application takes its IDs from one source.
			appEnv := envMap(app.Env)
			switch chartValue(t, store, "app", "idSource") {
			case "http":
				if want := "http://" + env["NODEID_HTTP_ADDR"].Value; appEnv["NODEID_URL"].Value != want || env["NODEID_ID_FILE"].Value != "" {
					t.Errorf("%s: the application's NODEID_URL %q, want %q, and no id file", src, appEnv["NODEID_URL"].Value, want)
				}
			case "file":
				file := env["NODEID_ID_FILE"].Value
				if appEnv["NODEID_ID_FILE"].Value != file || file == "" || appEnv["NODEID_URL"].Value != "" {
					t.Errorf("%s: the application's NODEID_ID_FILE %q, the broker's %q, and no NODEID_URL", src, appEnv["NODEID_ID_FILE"].Value, file)
				}
				shared := func(c corev1.Container, readOnly bool) bool {
					for _, m := range c.VolumeMounts {
						if strings.HasPrefix(file, m.MountPath+"/") && m.ReadOnly == readOnly {
							for _, v := range spec.Volumes {
								if v.Name == m.Name && v.EmptyDir != nil {
									return true
								}
							}
						}
					}
					return false
				}
				if !shared(broker, false) || !shared(app, true) {
					t.Errorf("%s: the id file %s is not on an emptyDir the broker writes and the application reads", src, file)
				}
			}

			// The pods fit in the cluster size, also during a rollout.
			size, err := strconv.Atoi(env["NODEID_CLUSTER_SIZE"].Value)
			if err != nil {
				t.Fatalf("%s: NODEID_CLUSTER_SIZE: %v", src, err)
			}
			most := 0
			if r.hpa != nil {
				most = int(r.hpa.Spec.MaxReplicas)
				if r.deploy.Spec.Replicas != nil {
					t.Errorf("%s: replicas set beside an HPA", src)
				}
				if ref := r.hpa.Spec.ScaleTargetRef; ref.Kind != "Deployment" || ref.Name != r.deploy.Name {
					t.Errorf("%s: the HPA scales %s %s", src, ref.Kind, ref.Name)
				}
			} else if r.deploy.Spec.Replicas != nil {
				most = int(*r.deploy.Spec.Replicas)
			}
			if most == 0 || most > size {
				t.Errorf("%s: up to %d pods, cluster size %d", src, most, size)
			}
			if ru := r.deploy.Spec.Strategy.RollingUpdate; ru == nil || ru.MaxUnavailable.IntValue() == 0 && most+ru.MaxSurge.IntValue() > size {
				t.Errorf("%s: a rollout of %d pods with %+v cannot finish within cluster size %d", src, most, ru, size)
			}

			// The store's identity: RBAC for k8s, the ServiceAccount's
			// annotation for the clouds.
			pod := r.deploy.Spec.Template
			if store == "k8s" {
				checkLeaseRBAC(t, src, r, env["NODEID_K8S_NAMESPACE"].Value)
				if spec.AutomountServiceAccountToken == nil || !*spec.AutomountServiceAccountToken {
					t.Errorf("%s: the k8s store needs the ServiceAccount's token in the pod", src)
				}
			} else {
				if len(r.roles)+len(r.roleBindings) != 0 {
					t.Errorf("%s: a Role for store %s, which calls no Kubernetes API", src, store)
				}
				if spec.AutomountServiceAccountToken == nil || *spec.AutomountServiceAccountToken {
					t.Errorf("%s: the API token mounted for store %s, which needs none", src, store)
				}
			}
			identity := map[string]string{
				"s3":     "eks.amazonaws.com/role-arn",
				"gcs":    "iam.gke.io/gcp-service-account",
				"azblob": "azure.workload.identity/client-id",
			}[store]
			if identity != "" && r.sa.Annotations[identity] == "" {
				t.Errorf("%s: the ServiceAccount has no %s annotation: %v", src, identity, r.sa.Annotations)
			}
			if spec.ServiceAccountName != r.sa.Name {
				t.Errorf("%s: the pods run as %q, the chart's ServiceAccount is %q", src, spec.ServiceAccountName, r.sa.Name)
			}
			if got := pod.Labels["azure.workload.identity/use"]; (store == "azblob") != (got == "true") {
				t.Errorf("%s: pod label azure.workload.identity/use=%q", src, got)
			}
			if store == "azblob" && env["AZURE_TOKEN_CREDENTIALS"].Value != "WorkloadIdentityCredential" {
				t.Errorf("%s: AZURE_TOKEN_CREDENTIALS %q: want the workload identity credential alone", src, env["AZURE_TOKEN_CREDENTIALS"].Value)
			}

			// The PDB and the Services select these pods.
			selects := func(sel map[string]string) bool {
				for k, v := range sel {
					if pod.Labels[k] != v {
						return false
					}
				}
				return len(sel) > 0
			}
			if r.pdb.Spec.Selector == nil || !selects(r.pdb.Spec.Selector.MatchLabels) {
				t.Errorf("%s: the PodDisruptionBudget does not select the pods", src)
			}
			checkGossip(t, src, r, env, selects)
		})
	}
}

// checkLeaseRBAC: the Role grants exactly get, list, create and update on
// coordination.k8s.io leases in the Leases' namespace, and is bound to the
// pods' ServiceAccount.
func checkLeaseRBAC(t *testing.T, src string, r rendered, ns string) {
	t.Helper()
	if len(r.roles) != 1 || len(r.roleBindings) != 1 {
		t.Fatalf("%s: want one Role and one RoleBinding, got %d and %d", src, len(r.roles), len(r.roleBindings))
	}
	role, rb := r.roles[0], r.roleBindings[0]
	if ns != helmNamespace || role.Namespace != ns || rb.Namespace != ns {
		t.Errorf("%s: Leases in %q, Role in %q, RoleBinding in %q; want the release's %q", src, ns, role.Namespace, rb.Namespace, helmNamespace)
	}
	if len(role.Rules) != 1 {
		t.Fatalf("%s: Role rules %+v: want one", src, role.Rules)
	}
	rule := role.Rules[0]
	verbs := slices.Clone(rule.Verbs)
	slices.Sort(verbs)
	if !slices.Equal(verbs, []string{"create", "get", "list", "update"}) || !slices.Equal(rule.APIGroups, []string{"coordination.k8s.io"}) ||
		!slices.Equal(rule.Resources, []string{"leases"}) || len(rule.ResourceNames)+len(rule.NonResourceURLs) != 0 {
		t.Errorf("%s: Role rule %+v: want exactly get, list, create, update on coordination.k8s.io leases", src, rule)
	}
	if rb.RoleRef.Kind != "Role" || rb.RoleRef.Name != role.Name || len(rb.Subjects) != 1 ||
		rb.Subjects[0].Kind != "ServiceAccount" || rb.Subjects[0].Name != r.sa.Name || rb.Subjects[0].Namespace != helmNamespace {
		t.Errorf("%s: RoleBinding %+v does not bind the Role to the pods' ServiceAccount %s", src, rb, r.sa.Name)
	}
}

// checkGossip: with gossip on, the broker joins the headless Service's DNS
// name, which lists the pods ready or not, on the port it gossips on (TCP
// and UDP); its key comes from a Secret.
func checkGossip(t *testing.T, src string, r rendered, env map[string]corev1.EnvVar, selects func(map[string]string) bool) {
	t.Helper()
	if env["NODEID_GOSSIP_ADDR"].Value == "" {
		if _, ok := env["NODEID_JOIN"]; ok {
			t.Errorf("%s: NODEID_JOIN without gossip", src)
		}
		return
	}
	_, port, err := net.SplitHostPort(env["NODEID_GOSSIP_ADDR"].Value)
	if err != nil {
		t.Fatalf("%s: NODEID_GOSSIP_ADDR: %v", src, err)
	}
	host, jport, err := net.SplitHostPort(env["NODEID_JOIN"].Value)
	if err != nil || jport != port {
		t.Fatalf("%s: NODEID_JOIN %q: want the Service's name on the gossip port %s (%v)", src, env["NODEID_JOIN"].Value, port, err)
	}
	svcName, rest, _ := strings.Cut(host, ".")
	svc := r.services[svcName]
	if svc == nil || rest != helmNamespace+".svc.cluster.local" {
		t.Fatalf("%s: NODEID_JOIN %q names no Service of the chart in %s", src, host, helmNamespace)
	}
	if svc.Spec.ClusterIP != corev1.ClusterIPNone || !svc.Spec.PublishNotReadyAddresses || !selects(svc.Spec.Selector) {
		t.Errorf("%s: gossip Service %s: want headless, publishing unready pods, selecting the pods: %+v", src, svc.Name, svc.Spec)
	}
	protos := map[corev1.Protocol]bool{}
	for _, p := range svc.Spec.Ports {
		if strconv.Itoa(int(p.Port)) == port {
			protos[p.Protocol] = true
		}
	}
	if !protos[corev1.ProtocolTCP] || !protos[corev1.ProtocolUDP] {
		t.Errorf("%s: gossip Service ports %+v: want %s over TCP and UDP", src, svc.Spec.Ports, port)
	}
	if k := env["NODEID_GOSSIP_KEY"]; k.Value != "" || k.ValueFrom == nil || k.ValueFrom.SecretKeyRef == nil {
		t.Errorf("%s: NODEID_GOSSIP_KEY must come from a Secret: %+v", src, k)
	}
}

// TestHelmStrictDecodeCatchesMisspelling plants a misspelt field in a copy
// of the chart: helm renders it without a word, and the strict decode
// refuses it (a lenient one would not: the API server would drop the field,
// here the readiness probe).
func TestHelmStrictDecodeCatchesMisspelling(t *testing.T) {
	helmBin(t)
	dir := filepath.Join(t.TempDir(), "nodeid")
	if err := os.CopyFS(dir, os.DirFS(chartDir)); err != nil {
		t.Fatal(err)
	}
	tpl := filepath.Join(dir, "templates", "deployment.yaml")
	text := mustRead(t, tpl)
	if strings.Count(text, "readinessProbe:") != 1 {
		t.Fatal("deployment.yaml: want one readinessProbe to misspell")
	}
	if err := os.WriteFile(tpl, []byte(strings.Replace(text, "readinessProbe:", "readynessProbe:", 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := helmTemplate(t, dir, "k8s")
	if err != nil {
		t.Fatal(err)
	}
	_, err = decodeManifest(out)
	if err == nil || !strings.Contains(err.Error(), `unknown field "readynessProbe"`) {
		t.Fatalf("the misspelt field passed the strict decode: %v", err)
	}
	t.Logf("caught: %v", err)

	// The check is the strictness: the same objects decode without it.
	for _, doc := range yamlSeparator.Split(out, -1) {
		js, _ := yaml.YAMLToJSON([]byte(doc))
		var d appsv1.Deployment
		if strings.Contains(string(js), `"kind":"Deployment"`) && json.Unmarshal(js, &d) != nil {
			t.Fatal("the lenient decode failed too")
		}
	}
	if _, err := decodeManifest("apiVersion: apps/v1\nkind: Deploymnet\nmetadata: {name: x}\n"); err == nil {
		t.Error("an unknown kind decoded")
	}
}

// TestHelmRefusesBadValues: values that would break the deployment fail
// `helm template` (comparisons of two values, made in the templates) or
// `helm lint` (values.schema.json), with a message saying what to change.
func TestHelmRefusesBadValues(t *testing.T) {
	helmBin(t)
	k8sValues := filepath.Join(chartDir, "ci", "k8s-values.yaml") // cluster size 64, HPA to 32
	for _, c := range []struct {
		name string
		lint bool // a schema check: helm lint fails too
		set  []string
		want string
	}{
		{"HPA beyond the cluster size", false, []string{"--set", "autoscaling.maxReplicas=65"}, "exceed broker.clusterSize (64)"},
		{"replicas beyond the cluster size", false, []string{"--set", "autoscaling.enabled=false", "--set", "replicaCount=65"}, "exceed broker.clusterSize (64)"},
		{"a rollout that cannot finish", false, []string{"--set", "autoscaling.maxReplicas=64"}, "a rollout would never end"},
		{"a grace shorter than the stop", false, []string{"--set", "terminationGracePeriodSeconds=28"}, "does not exceed the 28 s the stop needs"},
		{"a liveness probe quicker than the loss grace", false, []string{"--set", "broker.livenessProbe.failureThreshold=1"}, "must exceed the loss grace"},
		{"gossip without a key", false, []string{"--set", "gossip.keySecret.name="}, "gossip.enabled needs gossip.keySecret.name"},
		{"preStop sleep on Kubernetes 1.29", false, []string{"--kube-version", "1.29.4"}, "Kubernetes 1.30+"},
		{"Kubernetes 1.28", false, []string{"--kube-version", "1.28.9"}, "kubeVersion"},
		{"an unknown store", true, []string{"--set", "store.type=dynamodb"}, "at '/store/type': value must be one of"},
		{"a misspelt value", true, []string{"--set", "broker.clusterSise=8"}, "clusterSise"},
		{"a cluster size above 1024", true, []string{"--set", "broker.clusterSize=2048"}, "at '/broker/clusterSize'"},
		{"a duration as a string", true, []string{"--set-string", "broker.leaseDurationSeconds=15s"}, "at '/broker/leaseDurationSeconds'"},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := helmTemplate(t, chartDir, "k8s", c.set...)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("helm template %v: want an error with %q, got %v", c.set, c.want, err)
			}
			if c.lint {
				out, err := runHelm(t, append([]string{"lint", chartDir, "-f", k8sValues}, c.set...)...)
				if err == nil || !strings.Contains(out, c.want) {
					t.Fatalf("helm lint %v: want a failure naming %q, got %v\n%s", c.set, c.want, err, out)
				}
			}
		})
	}
	// And the values just inside each bound render.
	for _, set := range [][]string{
		{"--set", "autoscaling.maxReplicas=63", "--set", "terminationGracePeriodSeconds=29", "--set", "broker.livenessProbe.failureThreshold=2"},
		{"--kube-version", "1.29.4", "--set", "app.preStopSleepSeconds=0"},
	} {
		if _, err := helmTemplate(t, chartDir, "k8s", set...); err != nil {
			t.Fatal(err)
		}
	}
}
