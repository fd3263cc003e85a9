package broker

import (
	"errors"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/nodeid/nodeid/cmd/internal/envflag"
	"github.com/nodeid/nodeid/node"
	"github.com/nodeid/nodeid/nodeid"
)

// parseValidated parses serve's flags, validates the node's configuration
// as New will, and returns the provider's timings (those left zero derived).
func parseValidated(t *testing.T, args []string, vars ...string) (nodeid.Timings, error) {
	t.Helper()
	c, err := parseServeFlags("nodeid-broker", append([]string{"--bucket", "b"}, args...), env(vars...), io.Discard)
	if err != nil {
		return nodeid.Timings{}, err
	}
	nc := c.node
	nc.Provider.TaskID = "task"
	if err := nc.Validate(); err != nil {
		t.Fatalf("%v: parsed, then refused by Validate: %v", args, err)
	}
	return nc.Provider.Timings(), nil
}

// TestParseKeepAlive: --keepalive read sets read mode with nodeid's
// defaults (window 15s, backstop 10m, the backstop as the lease, backstop
// writes every B/3, polls every W/2), or the window, backstop, backstop
// interval and poll interval given by flag or variable; write mode, the
// default, sets none of them.
func TestParseKeepAlive(t *testing.T) {
	for _, tc := range []struct {
		name                                           string
		args, vars                                     []string
		mode                                           nodeid.KeepAlive
		window, backstop, lease, renew, poll, maxLease time.Duration
	}{
		{"default", nil, nil, nodeid.KeepAliveWrite, 0, 0, 15 * time.Second, 5 * time.Second, 0, time.Minute},
		{"write", []string{"--keepalive", "write"}, nil, nodeid.KeepAliveWrite, 0, 0, 15 * time.Second, 5 * time.Second, 0, time.Minute},
		{"read, defaults", []string{"--keepalive", "read"}, nil, nodeid.KeepAliveRead,
			15 * time.Second, 10 * time.Minute, 10 * time.Minute, 200 * time.Second, 7500 * time.Millisecond, 10 * time.Minute},
		{"read, short", []string{"--keepalive", "read", "--window", "3s", "--backstop", "12s"}, nil, nodeid.KeepAliveRead,
			3 * time.Second, 12 * time.Second, 12 * time.Second, 4 * time.Second, 700 * time.Millisecond, time.Minute},
		{"read, all given", []string{"--keepalive", "read", "--window", "5s", "--backstop", "30s", "--backstop-interval", "6s", "--poll-interval", "1s"}, nil,
			nodeid.KeepAliveRead, 5 * time.Second, 30 * time.Second, 30 * time.Second, 6 * time.Second, time.Second, time.Minute},
		{"read, from the environment", nil, []string{"NODEID_KEEPALIVE", "read", "NODEID_WINDOW", "5s", "NODEID_BACKSTOP", "30s",
			"NODEID_BACKSTOP_INTERVAL", "6s", "NODEID_POLL_INTERVAL", "1s"},
			nodeid.KeepAliveRead, 5 * time.Second, 30 * time.Second, 30 * time.Second, 6 * time.Second, time.Second, time.Minute},
		{"read, a backstop above the longest lease", []string{"--keepalive", "read", "--backstop", "2m"}, nil, nodeid.KeepAliveRead,
			15 * time.Second, 2 * time.Minute, 2 * time.Minute, 40 * time.Second, 7500 * time.Millisecond, 2 * time.Minute},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pc, err := parseValidated(t, tc.args, tc.vars...)
			if err != nil {
				t.Fatal(err)
			}
			if pc.KeepAlive.Mode() != tc.mode || pc.Window != tc.window || pc.Backstop != tc.backstop || pc.Lease != tc.lease ||
				pc.RenewInterval != tc.renew || pc.PollInterval != tc.poll || pc.MaxLeaseDuration != tc.maxLease {
				t.Errorf("mode %q window %v backstop %v lease %v renew %v poll %v max lease %v;\nwant %q %v %v %v %v %v %v",
					pc.KeepAlive, pc.Window, pc.Backstop, pc.Lease, pc.RenewInterval, pc.PollInterval, pc.MaxLeaseDuration,
					tc.mode, tc.window, tc.backstop, tc.lease, tc.renew, tc.poll, tc.maxLease)
			}
		})
	}
}

// TestParseKeepAliveUsage: read mode's flags in write mode, write mode's
// lease flags in read mode, an unknown mode, and timings that break read
// mode's rules are usage errors naming the flags (or variables) the user
// set, with durations as people write them and no internal field names.
func TestParseKeepAliveUsage(t *testing.T) {
	for _, tc := range []struct {
		args, vars []string
		want       string
	}{
		{[]string{"--window", "3s"}, nil, "--window is for --keepalive read only"},
		{[]string{"--keepalive", "write", "--backstop", "1m", "--poll-interval", "1s"}, nil,
			"--backstop and --poll-interval are for --keepalive read only"},
		{[]string{"--window", "3s", "--backstop", "1m", "--backstop-interval", "10s"}, nil,
			"--window, --backstop and --backstop-interval are for --keepalive read only"},
		{nil, []string{"NODEID_BACKSTOP_INTERVAL", "10s"}, "NODEID_BACKSTOP_INTERVAL (--backstop-interval) is for --keepalive read only"},
		{[]string{"--keepalive", "reads"}, nil, `--keepalive "reads" is not write or read`},
		{nil, []string{"NODEID_KEEPALIVE", ""}, `NODEID_KEEPALIVE (--keepalive) "" is not write or read`},
		{[]string{"--keepalive", "read", "--lease-duration", "15s"}, nil,
			"--lease-duration is for --keepalive write only: in read mode the lease every record states is --backstop"},
		{[]string{"--keepalive", "read", "--renew-interval", "5s"}, nil,
			"--renew-interval is for --keepalive write only: in read mode the time between writes is --backstop-interval"},
		{[]string{"--keepalive", "read"}, []string{"NODEID_LEASE_DURATION", "15s"},
			"NODEID_LEASE_DURATION (--lease-duration) is for --keepalive write only"},
		{[]string{"--keepalive", "read", "--window", "500ms"}, nil,
			"--window 500ms must be a whole number of ms, at least 1s and above --safety-margin 1s"},
		{[]string{"--keepalive", "read", "--window", "3s", "--backstop", "5s"}, nil,
			"--backstop 5s below --renew-deadline 3.333s + --window 3s"},
		{[]string{"--keepalive", "read", "--window", "3s", "--backstop", "12s", "--poll-interval", "2s"}, nil,
			"--poll-interval 2s must be positive, and with the store timeout 1.067s below --window minus --safety-margin (2s)"},
		{[]string{"--keepalive", "read", "--window", "3s", "--backstop", "12s", "--backstop-interval", "9s"}, nil,
			"--backstop-interval 9s must be positive and below --renew-deadline 8s"},
		{[]string{"--keepalive", "read", "--window", "3s"}, nil,
			"the default --poll-interval 0s must be positive, and with the store timeout 2s below --window minus --safety-margin (2s), given --window 3s: " +
				"set the timings left to their defaults, or change those"},
		{[]string{"--keepalive", "read", "--backstop", "2s", "--window", "1s"}, nil,
			"--backstop 2s below --renew-deadline 1.333s + --window 1s"},
	} {
		_, err := parseValidated(t, tc.args, tc.vars...)
		if !errors.Is(err, envflag.ErrUsage) || !strings.HasPrefix(err.Error(), tc.want) {
			t.Errorf("%v %v: %v\nwant %s", tc.args, tc.vars, err, tc.want)
			continue
		}
		for _, field := range []string{"StoreTimeout", "Window", "Backstop", "PollInterval", "RenewInterval", "LeaseDuration", "KeepAlive", "666.666"} {
			if strings.Contains(err.Error(), field) {
				t.Errorf("%v: %v names %s", tc.args, err, field)
			}
		}
	}
}

// TestRunKeepAliveRead: run takes serve's read-mode flags, and its check
// of the child's stop budget passes at read mode's timings (the backstop
// is the lease it is computed on).
func TestRunKeepAliveRead(t *testing.T) {
	for _, args := range [][]string{
		{"--keepalive", "read"},
		{"--keepalive", "read", "--window", "3s", "--backstop", "12s"},
	} {
		c, err := parseBrokerFlags("nodeid-broker run", "", append([]string{"--bucket", "b"}, args...), env(), io.Discard, nil)
		if err != nil {
			t.Fatalf("%v: %v", args, err)
		}
		cc := node.DefaultChildConfig()
		if err := checkRunConfig("nodeid-broker", c, &cc, true, []string{"true"}); err != nil {
			t.Errorf("%v: %v", args, err)
		}
		if c.node.Provider.KeepAlive != nodeid.KeepAliveRead {
			t.Errorf("%v: keep-alive %q", args, c.node.Provider.KeepAlive)
		}
	}
}
