package broker

import (
	"errors"
	"io"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/nodeid/nodeid/cmd/internal/envflag"
	"github.com/nodeid/nodeid/node"
)

// TestChildEnviron: run's child gets the caller's environment less every
// variable the broker reads as a flag (its secrets among them); other
// NODEID_ variables, which are not the broker's, pass.
func TestChildEnviron(t *testing.T) {
	vars := map[string]string{
		"NODEID_BUCKET": "b", "NODEID_GOSSIP_KEY": "MDEyMzQ1Njc4OWFiY2RlZg==", "NODEID_ETCD_PASSWORD": "secret",
		"NODEID_CHILD_STOP_TIMEOUT": "5s", "NODEID_ID_FILE": "/run/nodeid/id.json",
	}
	lookup := func(k string) (string, bool) { v, ok := vars[k]; return v, ok }
	cfg, err := parseBrokerFlags("nodeid-broker run", runHelp, nil, lookup, io.Discard, func(f *envflag.Set) {
		f.Duration("child-stop-timeout", 0, "")
	})
	if err != nil {
		t.Fatal(err)
	}
	var environ []string
	for k, v := range vars {
		environ = append(environ, k+"="+v)
	}
	environ = append(environ, "PATH=/usr/bin", "MY_APP_SETTING=1", "NODEID_APP_MODE=fast", "NODEID_NODE_ID=99")
	got := childEnviron(environ, cfg.ownVars)
	want := []string{"PATH=/usr/bin", "MY_APP_SETTING=1", "NODEID_APP_MODE=fast", "NODEID_NODE_ID=99"}
	if !slices.Equal(got, want) {
		t.Errorf("child environment %q, want %q", got, want)
	}
	for _, k := range []string{"NODEID_GOSSIP_KEY", "NODEID_ETCD_PASSWORD", "NODEID_LOG_LEVEL", "NODEID_EMBEDDED_S3", "NODEID_CHILD_STOP_TIMEOUT"} {
		if !slices.Contains(cfg.ownVars, k) {
			t.Errorf("%s is not among the broker's own variables %v", k, cfg.ownVars)
		}
	}
}

// TestRunChecksTheCommandFirst: a CMD that cannot be found is a usage error
// before any I/O; one found on PATH is accepted.
func TestRunChecksTheCommandFirst(t *testing.T) {
	cfg, err := parseBrokerFlags("nodeid-broker run", runHelp, []string{"--bucket", "b"}, func(string) (string, bool) { return "", false }, io.Discard, nil)
	if err != nil {
		t.Fatal(err)
	}
	cc := node.DefaultChildConfig()
	err = checkRunConfig("nodeid-broker", cfg, &cc, true, []string{"/nonexistent/nodeid-cmd", "--port", "9"})
	if !errors.Is(err, envflag.ErrUsage) || !strings.Contains(err.Error(), `CMD "/nonexistent/nodeid-cmd" cannot be run`) {
		t.Errorf("checkRunConfig of a missing command: %v", err)
	}
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	if err := checkRunConfig("nodeid-broker", cfg, &cc, true, []string{self}); err != nil {
		t.Errorf("checkRunConfig of %s: %v", self, err)
	}
}
