package deploy_test

import (
	"archive/tar"
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/nodeid/nodeid/snowflake"
)

// podmanFlags are the global flags test/image.sh builds with: vfs storage (no
// overlay mounts), cgroupfs (no systemd) and runc (crun fails on these
// machines' rlimits and hybrid cgroups).
var podmanFlags = []string{"--storage-driver", "vfs", "--cgroup-manager", "cgroupfs", "--runtime", "runc"}

// podman runs podman with podmanFlags and returns its stdout; a non-zero exit
// is an error carrying stderr.
func podman(ctx context.Context, bin string, args ...string) (string, error) {
	var stdout, stderr bytes.Buffer
	cmd := exec.CommandContext(ctx, bin, append(slices.Clone(podmanFlags), args...)...)
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return stdout.String(), fmt.Errorf("podman %s: %w: %s", strings.Join(args, " "), err, strings.TrimSpace(stderr.String()))
	}
	return stdout.String(), nil
}

// TestImageRuns runs the broker's image as deploy/Dockerfile builds it
// (test/image.sh builds it and gives its ID in NODEID_TEST_IMAGE) with podman,
// on the S3 embedded in the broker: its configuration is the Dockerfile's, its
// files are those of a FROM-scratch image with no shell, it serves /health
// and IDs of its node on the port the image sets, its own HEALTHCHECK passes,
// it writes the id file into the /nodeid volume as user 65532, and SIGTERM
// stops it with exit code 0 after releasing its ID. It logs the image's size.
// Without NODEID_TEST_IMAGE it skips, except with CI=true.
func TestImageRuns(t *testing.T) {
	image := os.Getenv("NODEID_TEST_IMAGE")
	if image == "" {
		if os.Getenv("CI") == "true" {
			t.Fatal("NODEID_TEST_IMAGE is not set: test/all.sh builds the image with test/image.sh")
		}
		t.Skip("NODEID_TEST_IMAGE is not set (NODEID_TEST_IMAGE=$(bash test/image.sh), as root)")
	}
	bin := tool(t, "NODEID_TEST_PODMAN", "podman")
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	must := func(args ...string) string {
		t.Helper()
		out, err := podman(ctx, bin, args...)
		if err != nil {
			t.Fatal(err)
		}
		return out
	}

	// The image's configuration is the Dockerfile's.
	var img []struct {
		Size   int64
		Config struct {
			User       string
			Env        []string
			Entrypoint []string
			Cmd        []string
			Volumes    map[string]struct{}
			StopSignal string
		}
		Healthcheck *struct{ Test []string }
	}
	if err := json.Unmarshal([]byte(must("image", "inspect", image)), &img); err != nil || len(img) != 1 {
		t.Fatalf("podman image inspect %s: %v", image, err)
	}
	cfg := img[0].Config
	t.Logf("image %s: %d bytes (%.1f MB; podman image inspect --format {{.Size}})", image, img[0].Size, float64(img[0].Size)/1e6)
	if cfg.User != "65532:65532" || !slices.Equal(cfg.Entrypoint, []string{"/nodeid-broker"}) || !slices.Equal(cfg.Cmd, []string{"serve"}) ||
		cfg.StopSignal != "SIGTERM" || !slices.Contains(cfg.Env, "NODEID_HTTP_ADDR=:8080") {
		t.Errorf("image configuration: %+v", cfg)
	}
	if _, ok := cfg.Volumes["/nodeid"]; !ok || len(cfg.Volumes) != 1 {
		t.Errorf("image volumes %v, want /nodeid", cfg.Volumes)
	}
	if hc := img[0].Healthcheck; hc == nil || !slices.Equal(hc.Test, []string{"CMD", "/nodeid-broker", "healthcheck"}) {
		t.Errorf("image health check: %+v", hc)
	}

	var rnd [4]byte
	_, _ = rand.Read(rnd[:])
	name := "nodeid-image-test-" + hex.EncodeToString(rnd[:])
	began := time.Now()
	// The image's own NODEID_HTTP_ADDR (:8080), published on a free port of
	// the host's loopback; the S3 inside the broker, on the container's.
	must("run", "-d", "--name", name,
		"--ulimit", "nofile=1024:1024", "--ulimit", "nproc=1024:1024",
		"-p", "127.0.0.1::8080",
		image, "serve", "--embedded-s3", "127.0.0.1:9000", "--cluster-size", "4", "--id-file", "/nodeid/id.json")
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		if t.Failed() {
			logs, _ := exec.CommandContext(ctx, bin, append(slices.Clone(podmanFlags), "logs", name)...).CombinedOutput()
			t.Logf("podman logs %s:\n%s", name, logs)
		}
		// -v: the anonymous volume of /nodeid too.
		if _, err := podman(ctx, bin, "rm", "-f", "-v", "-t", "0", name); err != nil {
			t.Error(err)
		}
	})
	hostPort := strings.TrimSpace(must("port", name, "8080/tcp"))
	if !strings.HasPrefix(hostPort, "127.0.0.1:") {
		t.Fatalf("podman port %s 8080/tcp: %q", name, hostPort)
	}
	base := "http://" + hostPort
	client := &http.Client{Timeout: 2 * time.Second}
	get := func(path string) (int, []byte, error) {
		resp, err := client.Get(base + path)
		if err != nil {
			return 0, nil, err
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		return resp.StatusCode, b, err
	}
	running := func() bool {
		out, err := podman(ctx, bin, "inspect", "--format", "{{.State.Running}}", name)
		return err != nil || strings.TrimSpace(out) == "true"
	}

	// /health answers 200 once the broker holds its node ID.
	deadline := time.Now().Add(60 * time.Second)
	lastCheck := time.Now()
	for {
		code, body, err := get("/health")
		if err == nil && code == http.StatusOK {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("GET /health: no 200 within 60 s: %d %s %v", code, body, err)
		}
		if time.Since(lastCheck) > time.Second {
			lastCheck = time.Now()
			if !running() {
				t.Fatalf("the container exited before /health answered 200 (last: %d %s %v)", code, body, err)
			}
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Logf("healthy %v after podman run", time.Since(began).Round(time.Millisecond))

	// The image's HEALTHCHECK command, run by podman inside the container.
	if out, err := podman(ctx, bin, "healthcheck", "run", name); err != nil {
		t.Errorf("the image's HEALTHCHECK: %v %s", err, out)
	}

	// IDs of the broker's node, increasing, from about now.
	var status struct {
		NodeID *int64 `json:"nodeId"`
	}
	code, body, err := get("/status")
	if err != nil || code != http.StatusOK || json.Unmarshal(body, &status) != nil || status.NodeID == nil {
		t.Fatalf("GET /status: %d %s %v", code, body, err)
	}
	node := *status.NodeID
	if node < 0 || node >= 4 {
		t.Errorf("node ID %d, want one of the cluster's 0..3", node)
	}
	var ids struct {
		NodeID int64    `json:"nodeId"`
		IDs    []string `json:"ids"`
	}
	code, body, err = get("/ids?n=100")
	if err != nil || code != http.StatusOK || json.Unmarshal(body, &ids) != nil {
		t.Fatalf("GET /ids?n=100: %d %s %v", code, body, err)
	}
	if ids.NodeID != node || len(ids.IDs) != 100 {
		t.Fatalf("GET /ids?n=100: node %d and %d IDs, want node %d and 100 IDs: %s", ids.NodeID, len(ids.IDs), node, body)
	}
	var prev snowflake.ID
	for _, s := range ids.IDs {
		id, err := snowflake.Parse(s)
		if err != nil {
			t.Fatal(err)
		}
		if id.NodeID() != node || id <= prev || id.Time().Before(began.Add(-time.Minute)) || id.Time().After(time.Now().Add(time.Minute)) {
			t.Fatalf("ID %s: node %d at %v after %d, want node %d, increasing, about now", s, id.NodeID(), id.Time(), prev, node)
		}
		prev = id
	}

	// The id file, in the volume at /nodeid, written by user 65532.
	idFile := readFromContainer(ctx, t, bin, name, "/nodeid/id.json")
	var file struct {
		NodeID *int64 `json:"nodeId"`
	}
	if err := json.Unmarshal(idFile, &file); err != nil || file.NodeID == nil || *file.NodeID != node {
		t.Errorf("/nodeid/id.json %s (%v), want node %d", idFile, err, node)
	}

	// The files of the image: the binary, what distroless/static gave, no
	// shell, /nodeid and nonroot's home owned by 65532, /tmp sticky.
	checkImageFiles(ctx, t, bin, name)

	// SIGTERM: the broker releases its ID and exits 0.
	stopped := time.Now()
	must("kill", "--signal", "TERM", name)
	waitCtx, waitCancel := context.WithTimeout(ctx, 60*time.Second)
	defer waitCancel()
	out, err := podman(waitCtx, bin, "wait", name)
	if err != nil {
		t.Fatalf("after SIGTERM: %v", err)
	}
	if exit := strings.TrimSpace(out); exit != "0" {
		t.Fatalf("after SIGTERM the broker exited %s, want 0", exit)
	}
	t.Logf("exited 0 %v after SIGTERM", time.Since(stopped).Round(time.Millisecond))
	// The broker logs on stderr, which podman logs gives back on its stderr.
	logs, err := exec.CommandContext(ctx, bin, append(slices.Clone(podmanFlags), "logs", name)...).CombinedOutput()
	if err != nil {
		t.Fatalf("podman logs: %v: %s", err, logs)
	}
	for _, want := range []string{`"msg":"released node ID"`, `"msg":"stopped"`} {
		if !bytes.Contains(logs, []byte(want)) {
			t.Errorf("the broker's log lacks %s", want)
		}
	}
}

// readFromContainer returns the content of the file at path in a container
// (podman cp, which reads volumes too).
func readFromContainer(ctx context.Context, t *testing.T, bin, name, path string) []byte {
	t.Helper()
	out, err := podman(ctx, bin, "cp", name+":"+path, "-")
	if err != nil {
		t.Fatal(err)
	}
	tr := tar.NewReader(strings.NewReader(out))
	if _, err := tr.Next(); err != nil {
		t.Fatalf("podman cp %s: %v", path, err)
	}
	b, err := io.ReadAll(tr)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// checkImageFiles checks the container's file system (podman export) against
// the final stage of deploy/Dockerfile.
func checkImageFiles(ctx context.Context, t *testing.T, bin, name string) {
	t.Helper()
	cmd := exec.CommandContext(ctx, bin, append(slices.Clone(podmanFlags), "export", name)...)
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	files := map[string]*tar.Header{}
	var passwd []byte
	tr := tar.NewReader(stdout)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatalf("podman export: %v", err)
		}
		path := strings.TrimSuffix(strings.TrimPrefix(h.Name, "./"), "/")
		files[path] = h
		if path == "etc/passwd" {
			if passwd, err = io.ReadAll(tr); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := cmd.Wait(); err != nil {
		t.Fatalf("podman export: %v: %s", err, stderr.String())
	}
	type want struct {
		mode     int64 // permission bits and sticky bit
		uid, gid int
	}
	for path, w := range map[string]want{
		"nodeid-broker":                     {0o755, 0, 0},
		"etc/passwd":                        {0o644, 0, 0},
		"etc/group":                         {0o644, 0, 0},
		"etc/ssl/certs/ca-certificates.crt": {0o644, 0, 0},
		"zoneinfo.zip":                      {0o644, 0, 0},
		"tmp":                               {0o1777, 0, 0},
		"home":                              {0o755, 0, 0},
		"home/nonroot":                      {0o755, 65532, 65532},
		"nodeid":                            {0o755, 65532, 65532},
	} {
		h, ok := files[path]
		if !ok {
			t.Errorf("the image has no /%s", path)
			continue
		}
		if got := h.Mode & 0o1777; got != w.mode || h.Uid != w.uid || h.Gid != w.gid {
			t.Errorf("/%s: mode %s uid %d gid %d, want %s %d %d", path,
				strconv.FormatInt(got, 8), h.Uid, h.Gid, strconv.FormatInt(w.mode, 8), w.uid, w.gid)
		}
	}
	for path := range files {
		if strings.HasPrefix(path, "bin/") || strings.HasPrefix(path, "usr/") || strings.HasPrefix(path, "sbin/") || strings.HasPrefix(path, "lib") {
			t.Errorf("the image has /%s: the final stage is FROM scratch, with no shell or libraries", path)
		}
	}
	if !strings.Contains(string(passwd), "\nnonroot:x:65532:65532:") {
		t.Errorf("/etc/passwd has no nonroot user 65532:\n%s", passwd)
	}
}
