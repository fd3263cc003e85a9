package conformance

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"

	"github.com/nodeid/nodeid/s3store/s3fake"
)

// workDir holds what the package's tests build: the broker, compiled Java
// drivers. TestMain removes it.
var workDir string

func TestMain(m *testing.M) {
	os.Exit(runMain(m))
}

func runMain(m *testing.M) int {
	dir, err := os.MkdirTemp("", "nodeid-conformance-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(dir)
	workDir = dir
	defer func() {
		if s3 != nil {
			_ = s3.Close()
		}
	}()
	return m.Run()
}

// The nodeid-broker binary and an in-process S3 (gofakes3, a bucket per
// scenario shared by its brokers), made once by the first test that needs
// them.
var (
	setupOnce sync.Once
	brokerBin string
	s3        *s3fake.Server
	setupErr  error
)

// needBrokers builds nodeid-broker and starts the S3 once.
func needBrokers(t *testing.T) {
	t.Helper()
	setupOnce.Do(func() {
		// Without -race even when the tests run with it: the brokers are
		// not what this suite tests (cmd/nodeid-broker's end-to-end tests
		// run them under the race detector), and a race-instrumented broker
		// costs CPU that the clients' timing needs on a 2-core machine.
		bin := filepath.Join(workDir, "nodeid-broker")
		if out, err := exec.Command("go", "build", "-o", bin, "github.com/nodeid/nodeid/cmd/nodeid-broker").CombinedOutput(); err != nil {
			setupErr = fmt.Errorf("go build nodeid-broker: %v\n%s", err, out)
			return
		}
		brokerBin = bin
		s3, setupErr = s3fake.Start(s3fake.Config{})
	})
	if setupErr != nil {
		t.Fatal(setupErr)
	}
}
