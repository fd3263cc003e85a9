package main

import (
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// brokerBin is the nodeid-broker binary the end-to-end tests run, built once by
// TestMain (with -race when the tests run with it); ctlBin is nodeidctl, to
// compare its view of the bucket with the brokers'.
var brokerBin, ctlBin string

// netnsChildEnv, in this test binary's environment, names the broker binary
// of the test that re-ran it inside a user and network namespace of its own
// (TestServeGossipPartitionHeals): it runs that one test, which finds the
// variable set, and builds nothing.
const netnsChildEnv = "NODEID_TEST_NETNS_BROKER"

func TestMain(m *testing.M) {
	if mode := os.Getenv(testChildEnv); mode != "" { // nodeid-broker run started this binary as its child
		os.Exit(testChild(mode))
	}
	flag.Parse()
	if bin := os.Getenv(netnsChildEnv); bin != "" { // a test re-ran this binary in network namespaces of its own
		brokerBin = bin
		os.Exit(m.Run())
	}
	dir, err := os.MkdirTemp("", "nodeid-broker-test-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	brokerBin, ctlBin = filepath.Join(dir, "nodeid-broker"), filepath.Join(dir, "nodeidctl")
	for bin, pkg := range map[string]string{brokerBin: ".", ctlBin: "../nodeidctl"} {
		args := []string{"build", "-o", bin}
		if raceEnabled {
			args = append(args, "-race")
		}
		if out, err := exec.Command("go", append(args, pkg)...).CombinedOutput(); err != nil {
			fmt.Fprintf(os.Stderr, "go build %s: %v\n%s", pkg, err, out)
			_ = os.RemoveAll(dir)
			os.Exit(1)
		}
	}
	code := m.Run()
	_ = os.RemoveAll(dir)
	os.Exit(code)
}
