// Package deploy_test checks the deployment recipes in this directory: every
// JSON file parses, the task definition, the policies and the Dockerfile say
// what deploy/README.md says they do, and the broker builds as the static
// binary the Dockerfile needs. TestImageRuns (image_test.go) runs the image
// itself, as test/image.sh builds it with buildah.
package deploy_test

import (
	"bytes"
	"debug/elf"
	"encoding/json"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// decodeFile decodes a JSON file strictly: one value, nothing after it.
func decodeFile(t *testing.T, path string, v any) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	if err := dec.Decode(v); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	if _, err := dec.Token(); err != io.EOF {
		t.Fatalf("%s: data after the JSON value", path)
	}
}

func TestJSONFilesParse(t *testing.T) {
	files, err := filepath.Glob("*.json")
	if err != nil || len(files) < 3 {
		t.Fatalf("JSON files: %v %v", files, err)
	}
	for _, f := range files {
		var v any
		decodeFile(t, f, &v)
	}
}

type taskDefinition struct {
	NetworkMode          string                  `json:"networkMode"`
	TaskRoleArn          string                  `json:"taskRoleArn"`
	ExecutionRoleArn     string                  `json:"executionRoleArn"`
	Volumes              []struct{ Name string } `json:"volumes"`
	ContainerDefinitions []container             `json:"containerDefinitions"`
}

// container is a container definition, as ecs-task-definition.json and the
// CloudFormation template (whose keys differ only in case, which
// encoding/json ignores) both write it. An intrinsic function in the
// template reads as its YAML text: "!Ref GossipKey".
type container struct {
	Name        string   `json:"name"`
	Essential   bool     `json:"essential"`
	Command     []string `json:"command"`
	User        string   `json:"user"`
	StopTimeout int      `json:"stopTimeout"`
	Environment []struct {
		Name, Value string
	} `json:"environment"`
	Secrets []struct {
		Name, ValueFrom string
	} `json:"secrets"`
	PortMappings []struct {
		ContainerPort int    `json:"containerPort"`
		Protocol      string `json:"protocol"`
	} `json:"portMappings"`
	MountPoints []struct {
		SourceVolume  string `json:"sourceVolume"`
		ContainerPath string `json:"containerPath"`
		ReadOnly      bool   `json:"readOnly"`
	} `json:"mountPoints"`
	HealthCheck *struct {
		Command     []string `json:"command"`
		StartPeriod int      `json:"startPeriod"`
		Interval    int      `json:"interval"`
		Retries     int      `json:"retries"`
	} `json:"healthCheck"`
	DependsOn []struct {
		ContainerName, Condition string
	} `json:"dependsOn"`
}

// env returns the container's environment by name.
func (c *container) env() map[string]string {
	env := map[string]string{}
	for _, e := range c.Environment {
		env[e.Name] = e.Value
	}
	return env
}

// published reports whether the container publishes port over protocol.
func (c *container) published(port int, protocol string) bool {
	return slices.ContainsFunc(c.PortMappings, func(p struct {
		ContainerPort int    `json:"containerPort"`
		Protocol      string `json:"protocol"`
	}) bool {
		return p.ContainerPort == port && p.Protocol == protocol
	})
}

func TestTaskDefinition(t *testing.T) {
	var td taskDefinition
	decodeFile(t, "ecs-task-definition.json", &td)
	if td.NetworkMode != "awsvpc" || td.TaskRoleArn == "" || len(td.Volumes) != 0 || len(td.ContainerDefinitions) != 2 {
		t.Fatalf("task definition: %+v", td)
	}
	broker, app := td.ContainerDefinitions[0], td.ContainerDefinitions[1]
	checkSidecar(t, "ecs-task-definition.json", broker, app)

	// The execution role reads the gossip key: iam-execution-role-policy.json
	// grants secretsmanager:GetSecretValue on the secret the task names.
	var exec policy
	decodeFile(t, "iam-execution-role-policy.json", &exec)
	key := ""
	for _, s := range broker.Secrets {
		if s.Name == "NODEID_GOSSIP_KEY" {
			key = s.ValueFrom
		}
	}
	if len(exec.Statement) != 1 || exec.Statement[0].Effect != "Allow" || string(exec.Statement[0].Action) != `"secretsmanager:GetSecretValue"` ||
		string(exec.Statement[0].Resource) != strconv.Quote(key) {
		t.Errorf("iam-execution-role-policy.json must allow secretsmanager:GetSecretValue on %s: %+v", key, exec.Statement)
	}
}

// checkSidecar checks a broker container and its application (from src) as
// deploy/README.md describes them, and against the flags of the broker it
// runs.
func checkSidecar(t *testing.T, src string, broker, app container) {
	t.Helper()
	if broker.Name != "nodeid-broker" || !broker.Essential || !slices.Equal(broker.Command, []string{"serve"}) {
		t.Errorf("%s: broker container: %+v", src, broker)
	}
	if broker.HealthCheck == nil || !slices.Equal(broker.HealthCheck.Command, []string{"CMD", "/nodeid-broker", "healthcheck"}) {
		t.Errorf("%s: broker health check: %+v", src, broker.HealthCheck)
	}
	env := broker.env()
	dur := func(k string) time.Duration {
		d, err := time.ParseDuration(env[k])
		if err != nil {
			t.Fatalf("%s: %s=%q: %v", src, k, env[k], err)
		}
		return d
	}
	// The stop timeout must cover the whole graceful stop: the release
	// (bounded by the shutdown timeout), gossip's leave (2 s) and the HTTP
	// drain.
	// A broker in jeopardy fails its health check for up to --loss-grace
	// (default: the lease) before it recovers or exits: ECS must not replace
	// it sooner, after retries x interval of failed checks.
	grace := flagDefault(t, brokerHelp(t), "NODEID_LEASE_DURATION")
	for _, k := range []string{"NODEID_LEASE_DURATION", "NODEID_LOSS_GRACE"} {
		if _, ok := env[k]; ok {
			grace = dur(k)
		}
	}
	if hc := broker.HealthCheck; hc != nil && grace >= time.Duration(hc.Interval*hc.Retries)*time.Second {
		t.Errorf("%s: the loss grace %v is not below the health check's retries x interval (%d x %d s): ECS would replace a broker in jeopardy before it can recover",
			src, grace, hc.Retries, hc.Interval)
	}
	need := dur("NODEID_SHUTDOWN_TIMEOUT") + dur("NODEID_DRAIN_DELAY") + 2*time.Second
	if stop := time.Duration(broker.StopTimeout) * time.Second; stop <= need {
		t.Errorf("%s: broker stopTimeout %v, want more than %v", src, stop, need)
	}

	// /ids is on loopback and its port is not published; the operator port
	// (no /ids) and gossip (TCP and UDP) are.
	port := func(k string) (string, int) {
		host, p, err := net.SplitHostPort(env[k])
		n, perr := strconv.Atoi(p)
		if err != nil || perr != nil {
			t.Fatalf("%s: %s=%q is not host:port", src, k, env[k])
		}
		return host, n
	}
	if host, p := port("NODEID_HTTP_ADDR"); host != "127.0.0.1" || broker.published(p, "tcp") {
		t.Errorf("%s: NODEID_HTTP_ADDR %q (/ids) must be on 127.0.0.1 and its port not published: %+v", src, env["NODEID_HTTP_ADDR"], broker.PortMappings)
	}
	if _, p := port("NODEID_OPS_ADDR"); !broker.published(p, "tcp") {
		t.Errorf("%s: NODEID_OPS_ADDR %q (/ready, /metrics) is not published", src, env["NODEID_OPS_ADDR"])
	}
	if _, p := port("NODEID_GOSSIP_ADDR"); !broker.published(p, "tcp") || !broker.published(p, "udp") {
		t.Errorf("%s: gossip port %d is not published over TCP and UDP", src, p)
	}

	// The application depends on the broker being HEALTHY and takes IDs from
	// one source, the recommended one (docs/nodeid-broker.md, "Sidecar
	// use"; clients/README.md): the broker's /ids on loopback, through
	// NODEID_URL. No id file, so no shared volume.
	if !app.Essential || len(app.DependsOn) != 1 || app.DependsOn[0].ContainerName != broker.Name || app.DependsOn[0].Condition != "HEALTHY" {
		t.Errorf("%s: app container must depend on the broker being HEALTHY: %+v", src, app.DependsOn)
	}
	if want := "http://" + env["NODEID_HTTP_ADDR"]; app.env()["NODEID_URL"] != want {
		t.Errorf("%s: the app's NODEID_URL is %q, want the broker's /ids at %q", src, app.env()["NODEID_URL"], want)
	}
	if _, ok := env["NODEID_ID_FILE"]; ok || len(broker.MountPoints)+len(app.MountPoints) != 0 {
		t.Errorf("%s: an id file or a shared volume beside /ids: one ID source (docs/nodeid-broker.md, \"never both\")", src)
	}

	// Every NODEID_ variable the broker is given must be one of its flags.
	help := brokerHelp(t)
	var names []string
	for k := range env {
		names = append(names, k)
	}
	// Gossip is encrypted by default, with a key from a secret, never in the
	// plain environment (issue 18).
	if env["NODEID_GOSSIP_ADDR"] != "" {
		if _, ok := env["NODEID_GOSSIP_KEY"]; ok {
			t.Errorf("%s: NODEID_GOSSIP_KEY is in environment: pass it in secrets", src)
		}
		keyed := false
		for _, s := range broker.Secrets {
			keyed = keyed || s.Name == "NODEID_GOSSIP_KEY" && s.ValueFrom != ""
		}
		if !keyed {
			t.Errorf("%s: gossip is on without NODEID_GOSSIP_KEY in secrets", src)
		}
	}
	for _, s := range broker.Secrets {
		names = append(names, s.Name)
	}
	for _, k := range names {
		if !strings.Contains(help, "[$"+k+"]") {
			t.Errorf("%s sets %s, which is not a flag of nodeid-broker serve", src, k)
		}
	}
}

// brokerHelp returns nodeid-broker serve --help.
func brokerHelp(t *testing.T) string {
	t.Helper()
	out, err := exec.Command(staticBinary(t), "serve", "--help").Output()
	if err != nil {
		t.Fatalf("serve --help: %v", err)
	}
	return string(out)
}

type policy struct {
	Version   string `json:"Version"`
	Statement []struct {
		Sid       string          `json:"Sid"`
		Effect    string          `json:"Effect"`
		Principal any             `json:"Principal"`
		Action    json.RawMessage `json:"Action"`
		Resource  json.RawMessage `json:"Resource"`
		Condition map[string]map[string]string
	} `json:"Statement"`
}

func TestPolicies(t *testing.T) {
	const objects = `"arn:aws:s3:::my-nodeid-bucket/nodeid/*"`
	var iam policy
	decodeFile(t, "iam-task-role-policy.json", &iam)
	if iam.Version != "2012-10-17" || len(iam.Statement) != 3 {
		t.Fatalf("IAM policy: %+v", iam)
	}
	s := iam.Statement[0]
	if s.Effect != "Allow" || string(s.Action) != `["s3:GetObject", "s3:PutObject"]` || string(s.Resource) != objects {
		t.Errorf("IAM object statement: %+v %s %s", s, s.Action, s.Resource)
	}
	s = iam.Statement[1]
	if s.Effect != "Allow" || string(s.Action) != `"s3:ListBucket"` || s.Condition["StringLike"]["s3:prefix"] != "nodeid/*" {
		t.Errorf("IAM list statement must be limited to the prefix: %+v", s)
	}
	s = iam.Statement[2]
	if s.Effect != "Allow" || string(s.Action) != `["s3:GetBucketVersioning", "s3:GetBucketObjectLockConfiguration", "s3:GetLifecycleConfiguration"]` ||
		string(s.Resource) != `"arn:aws:s3:::my-nodeid-bucket"` {
		t.Errorf("IAM bucket-settings statement: only reads of the bucket's settings: %+v %s %s", s, s.Action, s.Resource)
	}
	if strings.Contains(mustRead(t, "iam-task-role-policy.json"), "Delete") {
		t.Error("the task role must never delete lease objects")
	}

	var bucket policy
	decodeFile(t, "s3-bucket-policy.json", &bucket)
	s = bucket.Statement[0]
	if s.Effect != "Deny" || s.Principal != "*" || string(s.Action) != `"s3:PutObject"` || string(s.Resource) != objects ||
		s.Condition["Null"]["s3:if-none-match"] != "true" || s.Condition["Null"]["s3:if-match"] != "true" {
		t.Errorf("bucket policy must deny PUTs without If-None-Match and If-Match: %+v", s)
	}
}

func TestDockerfile(t *testing.T) {
	d := mustRead(t, "Dockerfile")
	for _, want := range []string{
		"\nFROM golang:1.26 AS build\n", "\nRUN sh deploy/rootfs.sh /out\n", "\nFROM scratch\n",
		"\nCOPY --from=build /out/root/ /\n", "\nCOPY --from=build --chown=65532:65532 /out/nodeid /nodeid\n",
		"\nUSER 65532:65532\n", "\nVOLUME [\"/nodeid\"]\n", "\nHEALTHCHECK ", ` CMD ["/nodeid-broker", "healthcheck"]` + "\n",
		"\nENTRYPOINT [\"/nodeid-broker\"]\n", "\nCMD [\"serve\"]\n",
	} {
		if !strings.Contains(d, want) {
			t.Errorf("Dockerfile lacks %q", want)
		}
	}
	if regexp.MustCompile(`(?m)^RUN`).FindAllStringIndex(d[strings.LastIndex(d, "\nFROM "):], -1) != nil {
		t.Error("the final stage runs commands: it has no shell")
	}
	// The build stage's script builds the binary as staticBinary does.
	if r := mustRead(t, "rootfs.sh"); !strings.Contains(r, "\n"+`CGO_ENABLED=0 GOOS=linux go build -trimpath -ldflags="-s -w" -o "$root/nodeid-broker" ./cmd/nodeid-broker`+"\n") {
		t.Error("rootfs.sh does not build the binary with CGO_ENABLED=0 GOOS=linux go build -trimpath -ldflags=\"-s -w\" as staticBinary does")
	}
}

func mustRead(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

var (
	buildOnce sync.Once
	binPath   string
	buildErr  error
	buildOut  []byte
)

// staticBinary builds nodeid-broker as the Dockerfile does (deploy/rootfs.sh),
// once per run.
func staticBinary(t *testing.T) string {
	t.Helper()
	buildOnce.Do(func() {
		dir, err := os.MkdirTemp("", "nodeid-deploy-test-")
		if err != nil {
			buildErr = err
			return
		}
		binPath = filepath.Join(dir, "nodeid-broker")
		cmd := exec.Command("go", "build", "-trimpath", "-ldflags=-s -w", "-o", binPath, "../cmd/nodeid-broker")
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS=linux")
		buildOut, buildErr = cmd.CombinedOutput()
	})
	if buildErr != nil {
		t.Fatalf("CGO_ENABLED=0 go build: %v\n%s", buildErr, buildOut)
	}
	return binPath
}

func TestMain(m *testing.M) {
	code := m.Run()
	if binPath != "" {
		_ = os.RemoveAll(filepath.Dir(binPath))
	}
	os.Exit(code)
}

// TestStaticBinary checks that CGO_ENABLED=0 gives a static executable: no
// program interpreter (dynamic loader) and no shared libraries, so it runs in
// the Dockerfile's image, FROM scratch.
func TestStaticBinary(t *testing.T) {
	f, err := elf.Open(staticBinary(t))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP || p.Type == elf.PT_DYNAMIC {
			t.Errorf("the binary has a %v program header: it is dynamically linked", p.Type)
		}
	}
	if libs, err := f.ImportedLibraries(); err != nil || len(libs) > 0 {
		t.Errorf("the binary needs shared libraries %v (%v)", libs, err)
	}
}
