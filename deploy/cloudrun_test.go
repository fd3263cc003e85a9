package deploy_test

import (
	"encoding/json"
	"net"
	"os"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"go.yaml.in/yaml/v3"
)

// cloudRunService is what cloudrun_test.go reads of cloudrun/service.yaml, a
// Cloud Run service in the Knative form `gcloud run services replace` takes.
type cloudRunService struct {
	Kind string `yaml:"kind"`
	Spec struct {
		Template struct {
			Metadata struct {
				Annotations map[string]string `yaml:"annotations"`
			} `yaml:"metadata"`
			Spec struct {
				ServiceAccountName string              `yaml:"serviceAccountName"`
				Containers         []cloudRunContainer `yaml:"containers"`
			} `yaml:"spec"`
		} `yaml:"template"`
	} `yaml:"spec"`
}

type cloudRunContainer struct {
	Name  string   `yaml:"name"`
	Image string   `yaml:"image"`
	Args  []string `yaml:"args"`
	Ports []struct {
		ContainerPort int `yaml:"containerPort"`
	} `yaml:"ports"`
	Env []struct {
		Name  string `yaml:"name"`
		Value string `yaml:"value"`
	} `yaml:"env"`
	StartupProbe  *cloudRunProbe `yaml:"startupProbe"`
	LivenessProbe *cloudRunProbe `yaml:"livenessProbe"`
}

type cloudRunProbe struct {
	HTTPGet struct {
		Path string `yaml:"path"`
		Port int    `yaml:"port"`
	} `yaml:"httpGet"`
	PeriodSeconds    int `yaml:"periodSeconds"`
	FailureThreshold int `yaml:"failureThreshold"`
}

func (c cloudRunContainer) env() map[string]string {
	env := map[string]string{}
	for _, e := range c.Env {
		env[e.Name] = e.Value
	}
	return env
}

// TestCloudRunPushTags: the build-and-push commands of deploy/cloud-run.md
// push the very images cloudrun/service.yaml runs, so that a user who runs
// them as printed deploys what they pushed.
func TestCloudRunPushTags(t *testing.T) {
	doc := mustRead(t, "cloud-run.md")
	_, section, ok := strings.Cut(doc, "## Build and push the images")
	block, _, _ := strings.Cut(section, "```\n\n")
	vars := map[string]string{}
	for _, name := range []string{"project", "region", "version"} {
		m := regexp.MustCompile(`\b` + name + `=(\S+)`).FindStringSubmatch(block)
		if !ok || m == nil {
			t.Fatalf("cloud-run.md, Build and push the images: no %s= in\n%s", name, block)
		}
		vars[name] = m[1]
	}
	registry := vars["region"] + "-docker.pkg.dev/" + vars["project"] + "/containers"
	if !strings.Contains(block, "registry=$region-docker.pkg.dev/$project/containers") ||
		!strings.Contains(block, `docker push "$registry/nodeid-broker:$version"`) || !strings.Contains(block, "gcloud auth configure-docker") {
		t.Fatalf("cloud-run.md, Build and push the images: the commands changed:\n%s", block)
	}
	var svc cloudRunService
	if err := yaml.Unmarshal([]byte(mustRead(t, "cloudrun/service.yaml")), &svc); err != nil {
		t.Fatal(err)
	}
	images := map[string]string{}
	for _, c := range svc.Spec.Template.Spec.Containers {
		images[c.Name] = c.Image
	}
	for name, image := range map[string]string{"nodeid-broker": "nodeid-broker", "app": "orders-service"} {
		if want := registry + "/" + image + ":" + vars["version"]; images[name] != want {
			t.Errorf("cloudrun/service.yaml runs %s as %q; cloud-run.md pushes %q", name, images[name], want)
		}
	}
}

// cloudRunKillAfter is how long Cloud Run waits after SIGTERM before it
// kills an instance.
const cloudRunKillAfter = 10 * time.Second

// TestCloudRunService checks cloudrun/service.yaml against what
// deploy/cloud-run.md says of it and against the broker's flags.
func TestCloudRunService(t *testing.T) {
	const src = "cloudrun/service.yaml"
	b, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	var svc cloudRunService
	if err := yaml.Unmarshal(b, &svc); err != nil {
		t.Fatalf("%s: %v", src, err)
	}
	tpl := svc.Spec.Template
	if svc.Kind != "Service" || tpl.Spec.ServiceAccountName == "" || len(tpl.Spec.Containers) != 2 {
		t.Fatalf("%s: want a Service with a service account and two containers: %+v", src, svc)
	}
	app, broker := tpl.Spec.Containers[0], tpl.Spec.Containers[1]
	env := broker.env()
	help := brokerHelp(t)

	// The broker: serve on Cloud Storage, every variable one of its flags, no
	// gossip (instances cannot reach each other).
	if broker.Name != "nodeid-broker" || strings.Join(broker.Args, " ") != "serve" || len(broker.Ports) != 0 {
		t.Errorf("%s: broker container %+v: want nodeid-broker running serve, with no ingress port", src, broker)
	}
	if env["NODEID_STORE"] != "gcs" || env["NODEID_GCS_BUCKET"] == "" {
		t.Errorf("%s: the broker must use --store gcs with a bucket: %v", src, env)
	}
	for k := range env {
		if !strings.Contains(help, "[$"+k+"]") {
			t.Errorf("%s sets %s, which is not a flag of nodeid-broker serve", src, k)
		}
	}
	for _, k := range []string{"NODEID_GOSSIP_ADDR", "NODEID_JOIN", "NODEID_GCS_ENDPOINT", "NODEID_GCS_NO_AUTH"} {
		if _, ok := env[k]; ok {
			t.Errorf("%s sets %s: not on Cloud Run (no gossip between instances; Cloud Storage itself with the service's credentials)", src, k)
		}
	}
	if host, _, err := net.SplitHostPort(env["NODEID_HTTP_ADDR"]); err != nil || host != "127.0.0.1" {
		t.Errorf("%s: NODEID_HTTP_ADDR %q: /ids must be on 127.0.0.1", src, env["NODEID_HTTP_ADDR"])
	}
	_, ops, err := net.SplitHostPort(env["NODEID_OPS_ADDR"])
	if err != nil {
		t.Fatalf("%s: NODEID_OPS_ADDR %q: %v", src, env["NODEID_OPS_ADDR"], err)
	}
	for name, p := range map[string]*cloudRunProbe{"startup": broker.StartupProbe, "liveness": broker.LivenessProbe} {
		if p == nil || p.HTTPGet.Path != "/health" || strconv.Itoa(p.HTTPGet.Port) != ops {
			t.Errorf("%s: the broker's %s probe must GET /health on the ops port %s: %+v", src, name, ops, p)
		}
	}

	// Timing: the release and the drain fit between SIGTERM and the kill; a
	// broker in jeopardy may recover before the liveness probe restarts it.
	dur := func(k string) time.Duration {
		v, ok := env[k]
		if !ok {
			return flagDefault(t, help, k)
		}
		d, err := time.ParseDuration(v)
		if err != nil {
			t.Fatalf("%s: %s=%q: %v", src, k, v, err)
		}
		return d
	}
	if stop := dur("NODEID_SHUTDOWN_TIMEOUT") + dur("NODEID_DRAIN_DELAY"); stop >= cloudRunKillAfter {
		t.Errorf("%s: shutdown timeout + drain delay = %v, want below Cloud Run's %v from SIGTERM to the kill", src, stop, cloudRunKillAfter)
	}
	grace := dur("NODEID_LEASE_DURATION")
	if _, ok := env["NODEID_LOSS_GRACE"]; ok {
		grace = dur("NODEID_LOSS_GRACE")
	}
	if lp := broker.LivenessProbe; lp != nil && grace >= time.Duration(lp.PeriodSeconds*lp.FailureThreshold)*time.Second {
		t.Errorf("%s: the loss grace %v is not below the liveness probe's %d x %d s: a broker in jeopardy would be restarted before it can recover",
			src, grace, lp.FailureThreshold, lp.PeriodSeconds)
	}

	// The application: the only ingress, started after the broker, IDs from
	// its /ids.
	if len(app.Ports) != 1 || app.env()["NODEID_URL"] != "http://"+env["NODEID_HTTP_ADDR"] {
		t.Errorf("%s: the app container must take the traffic and IDs from the broker's /ids: %+v", src, app)
	}
	ann := tpl.Metadata.Annotations
	var deps map[string][]string
	if err := json.Unmarshal([]byte(ann["run.googleapis.com/container-dependencies"]), &deps); err != nil || strings.Join(deps[app.Name], ",") != broker.Name {
		t.Errorf("%s: container-dependencies %q must start %s after %s", src, ann["run.googleapis.com/container-dependencies"], app.Name, broker.Name)
	}

	// The instance: CPU between requests for the renewals; at least one warm,
	// never more than the cluster's node IDs.
	if ann["run.googleapis.com/cpu-throttling"] != "false" {
		t.Errorf("%s: run.googleapis.com/cpu-throttling must be \"false\": the renewals run outside requests", src)
	}
	minScale, err1 := strconv.Atoi(ann["autoscaling.knative.dev/minScale"])
	maxScale, err2 := strconv.Atoi(ann["autoscaling.knative.dev/maxScale"])
	size, err3 := strconv.Atoi(env["NODEID_CLUSTER_SIZE"])
	if err1 != nil || err2 != nil || err3 != nil || minScale < 1 || maxScale < minScale || maxScale > size {
		t.Errorf("%s: minScale %q, maxScale %q, NODEID_CLUSTER_SIZE %q: want 1 <= minScale <= maxScale <= the cluster size", src,
			ann["autoscaling.knative.dev/minScale"], ann["autoscaling.knative.dev/maxScale"], env["NODEID_CLUSTER_SIZE"])
	}
}
