// Package deploy_test checks the deployment recipes in this directory: every
// JSON file parses, the task definition, the policies and the Dockerfile say
// what deploy/README.md says they do, and the broker builds as the static
// binary the Dockerfile needs (there is no Docker engine in CI to build the
// image itself).
package deploy_test

import (
	"bytes"
	"debug/elf"
	"encoding/json"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
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
	Volumes              []struct{ Name string } `json:"volumes"`
	ContainerDefinitions []struct {
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
		MountPoints []struct {
			SourceVolume  string `json:"sourceVolume"`
			ContainerPath string `json:"containerPath"`
			ReadOnly      bool   `json:"readOnly"`
		} `json:"mountPoints"`
		HealthCheck *struct {
			Command     []string `json:"command"`
			StartPeriod int      `json:"startPeriod"`
		} `json:"healthCheck"`
		DependsOn []struct {
			ContainerName, Condition string
		} `json:"dependsOn"`
	} `json:"containerDefinitions"`
}

func TestTaskDefinition(t *testing.T) {
	var td taskDefinition
	decodeFile(t, "ecs-task-definition.json", &td)
	if td.NetworkMode != "awsvpc" || td.TaskRoleArn == "" || len(td.Volumes) != 1 || len(td.ContainerDefinitions) != 2 {
		t.Fatalf("task definition: %+v", td)
	}
	broker, app := td.ContainerDefinitions[0], td.ContainerDefinitions[1]
	if broker.Name != "nodeid-broker" || !broker.Essential || !slices.Equal(broker.Command, []string{"serve"}) {
		t.Errorf("broker container: %+v", broker)
	}
	if broker.HealthCheck == nil || !slices.Equal(broker.HealthCheck.Command, []string{"CMD", "/nodeid-broker", "healthcheck"}) {
		t.Errorf("broker health check: %+v", broker.HealthCheck)
	}
	env := map[string]string{}
	for _, e := range broker.Environment {
		env[e.Name] = e.Value
	}
	// The stop timeout must cover the whole graceful stop: the id-file grace,
	// the release (bounded by the shutdown timeout), gossip's leave (2 s) and
	// the HTTP drain.
	var need time.Duration
	for _, k := range []string{"NODEID_ID_FILE_GRACE", "NODEID_SHUTDOWN_TIMEOUT", "NODEID_DRAIN_DELAY"} {
		d, err := time.ParseDuration(env[k])
		if err != nil {
			t.Fatalf("%s=%q: %v", k, env[k], err)
		}
		need += d
	}
	need += 2 * time.Second
	if stop := time.Duration(broker.StopTimeout) * time.Second; stop <= need {
		t.Errorf("broker stopTimeout %v, want more than %v", stop, need)
	}
	if len(broker.MountPoints) != 1 || broker.MountPoints[0].ReadOnly ||
		!strings.HasPrefix(env["NODEID_ID_FILE"], broker.MountPoints[0].ContainerPath+"/") {
		t.Errorf("broker: id file %q not in its writable mount %+v", env["NODEID_ID_FILE"], broker.MountPoints)
	}
	if !app.Essential || len(app.DependsOn) != 1 || app.DependsOn[0].ContainerName != broker.Name || app.DependsOn[0].Condition != "HEALTHY" {
		t.Errorf("app container must depend on the broker being HEALTHY: %+v", app.DependsOn)
	}
	if len(app.MountPoints) != 1 || !app.MountPoints[0].ReadOnly || app.MountPoints[0].SourceVolume != broker.MountPoints[0].SourceVolume {
		t.Errorf("app must mount the broker's volume read-only: %+v", app.MountPoints)
	}

	// Every NODEID_ variable the broker is given must be one of its flags.
	out, err := exec.Command(staticBinary(t), "serve", "--help").Output()
	if err != nil {
		t.Fatalf("serve --help: %v", err)
	}
	names := slices.Collect(func(yield func(string) bool) {
		for k := range env {
			if !yield(k) {
				return
			}
		}
	})
	// Gossip is encrypted by default, with a key from a secret, never in the
	// plain environment (issue 18).
	if env["NODEID_GOSSIP_ADDR"] != "" {
		if _, ok := env["NODEID_GOSSIP_KEY"]; ok {
			t.Error("NODEID_GOSSIP_KEY is in environment: pass it in secrets")
		}
		keyed := false
		for _, s := range broker.Secrets {
			keyed = keyed || s.Name == "NODEID_GOSSIP_KEY" && s.ValueFrom != ""
		}
		if !keyed {
			t.Error("gossip is on without NODEID_GOSSIP_KEY in secrets")
		}
	}
	for _, s := range broker.Secrets {
		names = append(names, s.Name)
	}
	for _, k := range names {
		if !strings.Contains(string(out), "[$"+k+"]") {
			t.Errorf("the task definition sets %s, which is not a flag of nodeid-broker serve", k)
		}
	}
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
	if iam.Version != "2012-10-17" || len(iam.Statement) != 2 {
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
		"CGO_ENABLED=0", "go build -trimpath", "./cmd/nodeid-broker", "FROM gcr.io/distroless/static",
		"USER 65532:65532", `VOLUME ["/nodeid"]`, `HEALTHCHECK`, `CMD ["/nodeid-broker", "healthcheck"]`,
		`ENTRYPOINT ["/nodeid-broker"]`,
	} {
		if !strings.Contains(d, want) {
			t.Errorf("Dockerfile lacks %q", want)
		}
	}
	if regexp.MustCompile(`(?m)^RUN`).FindAllStringIndex(d[strings.LastIndex(d, "\nFROM "):], -1) != nil {
		t.Error("the final stage runs commands: it has no shell")
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

// staticBinary builds nodeid-broker as the Dockerfile does, once per run.
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
// distroless/static or scratch.
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
