package doccheck

import (
	"os/exec"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/nodeid/nodeid/node"
)

// documents are the files whose flags and variables are checked.
var documents = []string{"README.md", "docs/nodeid-broker.md", "docs/nodeidctl.md", "docs/evidence/design.md", "docs/regions.md",
	"deploy/README.md", "deploy/cloud-run.md", "deploy/azure-container-apps.md", "deploy/kubernetes.md", "deploy/systemd/broker.env", "clients/README.md"}

// foreignFlags are flags the docs name that belong to other tools, with
// whose.
var foreignFlags = map[string]string{
	"data-dir": "etcd", "minio": "bench/nodeid-bench.sh", "port": "the example application", "help": "every command",
	"capabilities": "aws cloudformation deploy", "parameter-overrides": "aws cloudformation deploy",
	"stack-name": "aws cloudformation deploy", "template-file": "aws cloudformation deploy", "now": "systemctl",
	"test": "node", "etcd": "the --etcd-* family", "azblob": "the --azblob-* family", "gcs": "the --gcs-* family", "k8s": "the --k8s-* family", "lifecycle-configuration": "aws s3api put-bucket-lifecycle-configuration",
	"lease-durations": "nodeid-bench", "runs": "nodeid-bench", "latency": "nodeid-bench", "seed": "nodeid-bench",
	"tasks": "nodeid-bench", "ids": "nodeid-bench", "orders": "nodeid-bench",
	// The image's build and run in deploy/README.md (test/image.sh, deploy/image_test.go).
	"storage-driver": "buildah and podman", "cgroup-manager": "podman", "runtime": "podman", "ulimit": "podman run",
	"signal": "podman kill", "build-context": "buildah bud", "pull": "buildah bud", "format": "buildah bud and podman image inspect",
	"location": "gcloud storage buckets create", "uniform-bucket-level-access": "gcloud storage buckets create",
	"member":            "gcloud storage buckets add-iam-policy-binding",
	"repository-format": "gcloud artifacts repositories create", "project": "gcloud",
	"username": "docker login", "password-stdin": "docker login", "repository-name": "aws ecr create-repository",
	// The az CLI in deploy/azure-container-apps.md.
	"yaml": "az containerapp create", "sku": "az storage account create", "kind": "az storage account create",
	"min-tls-version": "az storage account create", "allow-blob-public-access": "az storage account create",
	"allow-shared-key-access": "az storage account create", "storage-account": "az storage container-rm create",
	"query": "az", "assignee-object-id": "az role assignment create", "assignee-principal-type": "az role assignment create",
	"role": "az role assignment create and gcloud storage buckets add-iam-policy-binding", "scope": "az role assignment create", "condition": "az role assignment create",
	"condition-version": "az role assignment create",
	// The Kubernetes, EKS and AKS set-up in deploy/kubernetes.md.
	"from-literal": "kubectl create secret", "cluster": "aws eks create-pod-identity-association",
	"namespace": "aws eks create-pod-identity-association", "service-account": "aws eks create-pod-identity-association",
	"role-arn": "aws eks create-pod-identity-association", "identity-name": "az identity federated-credential create",
	"name": "az identity federated-credential create", "issuer": "az identity federated-credential create",
	"subject": "az identity federated-credential create",
}

// otherVars are NODEID_ variables the docs name that are no flag: the
// child's environment (node.Env*), a family, an example of a variable that
// is not the broker's. node.EnvURL is also what the deploy kit gives the
// application.
var otherVars = []string{node.EnvNodeID, node.EnvVersion, node.EnvFloorMs, node.EnvURL, node.EnvIDFile,
	"NODEID_ETCD", "NODEID_AZBLOB", "NODEID_GCS", "NODEID_APP_MODE"}

// helps returns the --help of every command and subcommand the docs
// describe.
func helps(t *testing.T) string {
	t.Helper()
	var all strings.Builder
	for _, c := range [][]string{
		{"nodeid-broker", "serve"}, {"nodeid-broker", "run"}, {"nodeid-broker", "healthcheck"}, {"nodeid-broker", "local-s3"},
		{"demo-broker", "demo"}, {"nodeidctl", "status"}, {"nodeidctl", "check"}, {"nodeidctl", "init"}, {"nodeidctl", "release"},
		{"nodeidctl", "repair"}, {"nodeidctl", "resize"}, {"nodeidctl", "leaders"},
	} {
		out, err := exec.Command(command(c[0]), c[1], "--help").CombinedOutput()
		if err != nil {
			t.Fatalf("%s %s --help: %v\n%s", c[0], c[1], err, out)
		}
		all.Write(out)
	}
	return all.String()
}

// TestDocsNameRealFlags: every --flag the docs name is one a command's
// --help lists, and every NODEID_ variable is a flag's variable or one of
// otherVars, so that a renamed or dropped flag cannot linger in the docs.
func TestDocsNameRealFlags(t *testing.T) {
	help := helps(t)
	flags := map[string]bool{}
	for _, m := range regexp.MustCompile(`(?m)^  -([a-z0-9-]+)`).FindAllStringSubmatch(help, -1) {
		flags[m[1]] = true
	}
	vars := map[string]bool{}
	for _, m := range regexp.MustCompile(`\[\$(NODEID_[A-Z0-9_]+)\]`).FindAllStringSubmatch(help, -1) {
		vars[m[1]] = true
	}
	if len(flags) < 50 || !flags["max-issue-stall"] || !vars["NODEID_OPS_ADDR"] {
		t.Fatalf("the help lists %d flags: %v", len(flags), flags)
	}
	flagRe := regexp.MustCompile(`(?:^|[^A-Za-z0-9_-])--([a-z][a-z0-9-]*[a-z0-9])`)
	varRe := regexp.MustCompile(`NODEID_[A-Z0-9_]*[A-Z0-9]`)
	for _, doc := range documents {
		text := read(t, doc)
		for _, m := range flagRe.FindAllStringSubmatch(text, -1) {
			if !flags[m[1]] && foreignFlags[m[1]] == "" {
				t.Errorf("%s names --%s, which no command's --help lists", doc, m[1])
			}
		}
		for _, v := range varRe.FindAllString(text, -1) {
			if !vars[v] && !slices.Contains(otherVars, v) && !strings.HasPrefix(v, "NODEID_TEST_") {
				t.Errorf("%s names %s, which is no flag's variable", doc, v)
			}
		}
	}
}
