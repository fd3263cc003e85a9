//go:build faults

package faults

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/nodeid/nodeid/internal/testkit/etcdtest"
)

// Flags of the scenarios (go test -tags faults ./test/faults -seed 7 -duration 10m).
var (
	flagSeed     = flag.Uint64("seed", 0, "seed of the fault schedules and broker settings of every scenario run (0: replay the seeds of corpus.txt)")
	flagDuration = flag.Duration("duration", 0, "length of the fault phase of TestFaults and TestFaultsEtcd (0: 60s and 45s, the CI run; longer for a soak, with -timeout 0), and of TestStorms' 503 storm (0: 20s)")
	flagBrokers  = flag.Int("brokers", 5, "brokers alive at once in TestFaults (the cluster has one node ID fewer)")
	flagKinds    = flag.String("kinds", "", "comma-separated fault kinds of TestFaults (empty: the default kinds; \"all\": every kind, slow-writes included)")
	flagKeep     = flag.Bool("keep", false, "keep the run folders (broker logs, schedule, report) even when the scenarios pass")
)

// suite is what every scenario shares: the broker binaries and a MinIO of
// the suite's own, which it may restart.
type suite struct {
	broker string // nodeid-broker
	mutant string // nodeid-broker built with -tags nodeid_mutation
	minio  *minioServer
	err    error // why the suite cannot run
	fatal  bool  // err is a failure even outside CI
	// minioErr is why the scenarios on MinIO cannot run (the etcd ones
	// may).
	minioErr error
	// etcd is the suite's etcd server, started by needEtcd.
	etcd    *etcdtest.Server
	etcdErr error
}

// coverage sums what the scenarios of this test binary exercised; TestMain
// prints it (Coverage.String).
var coverage struct {
	sync.Mutex
	Coverage
}

var (
	setupOnce sync.Once
	etcdOnce  sync.Once
	shared    suite
	workDir   string
)

func TestMain(m *testing.M) {
	flag.Parse()
	code := m.Run()
	if coverage.Runs > 0 {
		fmt.Print(coverage.String())
	}
	if shared.minio != nil {
		if err := shared.minio.stop(); err != nil {
			fmt.Fprintln(os.Stderr, "faults: stop MinIO:", err)
		}
	}
	if shared.etcd != nil {
		shared.etcd.Stop(syscall.SIGKILL)
	}
	if workDir != "" {
		_ = os.RemoveAll(workDir)
	}
	os.Exit(code)
}

// needSuite builds the binaries and starts MinIO once. Without the MinIO
// binary the scenarios skip, or fail with CI=true.
func needSuite(t *testing.T) *suite {
	t.Helper()
	s := needBinaries(t)
	if s.minioErr != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("fault suite: %v", s.minioErr)
		}
		t.Skipf("fault suite: %v", s.minioErr)
	}
	return s
}

// needBinaries builds the broker binaries once (and starts MinIO).
func needBinaries(t *testing.T) *suite {
	t.Helper()
	setupOnce.Do(func() { shared = setUp() })
	if shared.err != nil {
		if shared.fatal || os.Getenv("CI") == "true" {
			t.Fatalf("fault suite: %v", shared.err)
		}
		t.Skipf("fault suite: %v", shared.err)
	}
	return &shared
}

// needEtcd builds the binaries and starts the suite's etcd server once
// (internal/testkit/etcdtest: the pinned server of test/etcd/install.sh). Without the
// etcd binary the scenarios skip, or fail with CI=true.
func needEtcd(t *testing.T) *suite {
	t.Helper()
	s := needBinaries(t)
	etcdOnce.Do(func() {
		bin := etcdtest.Binary()
		if bin == "" {
			s.etcdErr = errors.New("no etcd binary (build it: bash test/etcd/install.sh)")
			return
		}
		dir := filepath.Join(workDir, "etcd")
		if err := os.MkdirAll(dir, 0o755); err != nil {
			s.etcdErr = err
			return
		}
		s.etcd, s.etcdErr = etcdtest.Launch(bin, dir)
	})
	if s.etcdErr != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("fault suite on etcd: %v", s.etcdErr)
		}
		t.Skipf("fault suite on etcd: %v", s.etcdErr)
	}
	return s
}

func setUp() suite {
	var s suite
	dir, err := os.MkdirTemp("", "nodeid-faults-bin-")
	if err != nil {
		return suite{err: err, fatal: true}
	}
	workDir = dir
	s.broker, s.mutant = filepath.Join(dir, "nodeid-broker"), filepath.Join(dir, "nodeid-broker-mutant")
	for bin, tags := range map[string]string{s.broker: "", s.mutant: "nodeid_mutation"} {
		args := []string{"build", "-o", bin}
		if tags != "" {
			args = append(args, "-tags", tags)
		}
		args = append(args, "github.com/nodeid/nodeid/cmd/nodeid-broker")
		if out, err := exec.Command("go", args...).CombinedOutput(); err != nil {
			return suite{err: fmt.Errorf("go %s: %v\n%s", strings.Join(args, " "), err, out), fatal: true}
		}
	}
	m, err := startMinIO(dir)
	if err != nil {
		s.minioErr = err
		return s
	}
	s.minio = m
	return s
}

// minioServer is a MinIO started by test/minio/servers.sh in a state folder
// of the suite's own, so that restarting it disturbs no other test.
type minioServer struct {
	script, state string
	endpoint      string
	accessKey     string
	secretKey     string

	mu       sync.Mutex // one restart at a time
	restarts int
}

func repoRoot() string {
	wd, _ := os.Getwd() // the package folder, test/faults
	return filepath.Clean(filepath.Join(wd, "..", ".."))
}

func startMinIO(dir string) (*minioServer, error) {
	cache := os.Getenv("NODEID_SERVER_CACHE")
	if cache == "" {
		home, _ := os.UserHomeDir()
		cache = filepath.Join(home, ".cache", "nodeid-servers")
	}
	if _, err := os.Stat(filepath.Join(cache, "bin", "minio")); err != nil {
		return nil, fmt.Errorf("no MinIO binary in %s/bin (build it: bash test/minio/servers.sh install minio): %w", cache, err)
	}
	m := &minioServer{script: filepath.Join(repoRoot(), "test", "minio", "servers.sh"), state: filepath.Join(dir, "servers")}
	if err := os.MkdirAll(m.state, 0o755); err != nil {
		return nil, err
	}
	if _, err := m.run(nil, "start", "minio"); err != nil {
		return nil, err
	}
	out, err := m.run(nil, "env", "minio")
	if err != nil {
		return nil, err
	}
	sc := bufio.NewScanner(strings.NewReader(out))
	for sc.Scan() {
		k, v, ok := strings.Cut(strings.TrimPrefix(sc.Text(), "export "), "=")
		if !ok {
			continue
		}
		switch k {
		case "NODEID_TEST_MINIO_ENDPOINT":
			m.endpoint = v
		case "NODEID_TEST_MINIO_ACCESS_KEY":
			m.accessKey = v
		case "NODEID_TEST_MINIO_SECRET_KEY":
			m.secretKey = v
		}
	}
	if m.endpoint == "" || m.accessKey == "" {
		return nil, fmt.Errorf("servers.sh env minio printed no endpoint or key:\n%s", out)
	}
	return m, nil
}

// run runs servers.sh with args in the suite's state folder.
func (m *minioServer) run(extraEnv []string, args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "bash", append([]string{m.script}, args...)...)
	cmd.Env = append(append(os.Environ(), "NODEID_SERVER_STATE="+m.state), extraEnv...)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return string(out), fmt.Errorf("servers.sh %s: %w\n%s", strings.Join(args, " "), err, stderr.String())
	}
	return string(out), nil
}

// restart stops MinIO (SIGKILL when crash), keeps it down for down, and
// starts it again on the same port and data.
func (m *minioServer) restart(down time.Duration, crash bool) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	sig := "TERM"
	if crash {
		sig = "KILL"
	}
	_, err := m.run([]string{"NODEID_SERVER_RESTART_SIGNAL=" + sig, fmt.Sprintf("NODEID_SERVER_RESTART_PAUSE=%.3f", down.Seconds())}, "restart", "minio")
	if err == nil {
		m.restarts++
	}
	return err
}

func (m *minioServer) stop() error {
	_, err := m.run(nil, "stop", "minio")
	return errors.Join(err, os.RemoveAll(m.state))
}
