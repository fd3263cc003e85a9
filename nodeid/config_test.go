package nodeid

import (
	"reflect"
	"strings"
	"testing"
	"time"
)

// resolvedConfig returns c with each timing it left zero set to the value
// Timings derives for it: the config the edits of TestConfigValidation
// refer to.
func resolvedConfig(c Config) Config {
	t := c.Timings()
	c.RenewInterval, c.RenewDeadline, c.SafetyMargin, c.StoreTimeout = t.RenewInterval, t.RenewDeadline, t.SafetyMargin, t.StoreTimeout
	return c
}

func TestConfigValidation(t *testing.T) {
	tests := []struct {
		name string
		edit func(*Config)
		want string // "" = valid
	}{
		{"default", func(*Config) {}, ""},
		{"local", func(c *Config) { *c = DefaultLocalConfig() }, ""},
		{"renew interval not below deadline", func(c *Config) { c.RenewInterval = c.RenewDeadline }, "RenewInterval"},
		{"deadline above lease-safety", func(c *Config) { c.RenewDeadline = c.LeaseDuration }, "RenewDeadline"},
		{"safety margin negative", func(c *Config) { c.SafetyMargin = -time.Second }, "SafetyMargin"},
		{"safety margin above lease", func(c *Config) { c.SafetyMargin = c.LeaseDuration }, "SafetyMargin"},
		{"lease too short", func(c *Config) { c.LeaseDuration = 500 * time.Millisecond }, "LeaseDuration"},
		{"lease above max", func(c *Config) { c.MaxLeaseDuration = 10 * time.Second }, "MaxLeaseDuration"},
		{"cluster too big", func(c *Config) { c.ClusterSize = 1025 }, "ClusterSize: 1025"},
		{"cluster empty", func(c *Config) { c.ClusterSize = 0 }, "ClusterSize: 0"},
		{"range at the top", func(c *Config) { c.ClusterSize, c.FirstNodeID = 512, 512 }, ""},
		{"range past the node bits", func(c *Config) { c.ClusterSize, c.FirstNodeID = 512, 513 }, "FirstNodeID: 513 with ClusterSize 512 leaves 0..1023"},
		{"range negative", func(c *Config) { c.FirstNodeID = -1 }, "FirstNodeID: -1"},
		{"cluster fits wider layout", func(c *Config) {
			c.ClusterSize, c.Layout.NodeBits, c.Layout.SequenceBits = 4096, 12, 10
		}, ""},
		{"layout sum", func(c *Config) { c.Layout.SequenceBits = 13 }, "sum to 63"},
		{"order", func(c *Config) { c.Order = "random" }, "Order"},
		{"reads", func(c *Config) { c.MaxReadsInFlight = 0 }, "MaxReadsInFlight"},
		{"task id", func(c *Config) { c.TaskID = "" }, "TaskID"},
		{"value at the limit", func(c *Config) { c.Value = strings.Repeat("v", 4096) }, ""},
		{"value too long", func(c *Config) { c.Value = strings.Repeat("v", 4097) }, "Value: 4097 bytes"},
		{"store timeout", func(c *Config) { c.StoreTimeout = c.RenewDeadline }, "StoreTimeout"},
		// Three attempts and two pauses of a tenth of the window fit: 4/15.
		{"store timeout: three attempts fit", func(c *Config) { c.StoreTimeout = (c.RenewDeadline - c.RenewInterval) * 4 / 15 }, ""},
		{"store timeout: fewer than three attempts fit", func(c *Config) {
			c.StoreTimeout = (c.RenewDeadline-c.RenewInterval)*4/15 + time.Millisecond
		}, "leaves room for fewer than three renewal attempts between RenewInterval 5s and RenewDeadline 10s: at most 1.333333333s"},
		{"loss grace off", func(c *Config) { c.LossGrace = NoLossGrace }, ""},
		{"loss grace negative", func(c *Config) { c.LossGrace = -time.Second }, "LossGrace"},
		{"several errors", func(c *Config) { c.Order, c.MaxReadsInFlight = "x", 0 }, "MaxReadsInFlight"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := resolvedConfig(DefaultConfig())
			if err := c.Validate(); err != nil {
				t.Fatal(err)
			}
			tc.edit(&c)
			err := c.Validate()
			switch {
			case tc.want == "" && err != nil:
				t.Fatalf("valid config refused: %v", err)
			case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
				t.Fatalf("error = %v, want one naming %q", err, tc.want)
			}
		})
	}
}

// TestValidateChangesNothing: Validate checks a configuration and leaves it
// as it was, in either mode, valid or not: the timings it checks are
// Timings', never written back.
func TestValidateChangesNothing(t *testing.T) {
	read := DefaultConfig()
	read.KeepAlive, read.LeaseDuration = KeepAliveRead, 20*time.Second
	bad := DefaultConfig()
	bad.Order = "x"
	for name, c := range map[string]Config{"write": DefaultConfig(), "read": read, "invalid": bad, "local": DefaultLocalConfig()} {
		was := c
		err := c.Validate()
		if (err != nil) != (name == "invalid") {
			t.Fatalf("%s: Validate() = %v", name, err)
		}
		if err := c.ValidateFor(nil); (err != nil) != (name == "invalid") {
			t.Fatalf("%s: ValidateFor() = %v", name, err)
		}
		if !reflect.DeepEqual(c, was) {
			t.Errorf("%s: Validate changed the config:\n%+v\nwas\n%+v", name, c, was)
		}
	}
}

// TestProviderKeepsTimings: a Provider runs by its Config's Timings, and
// Config returns the configuration it was given, the timings left zero
// still zero; a claim reports the loss window of those timings.
func TestProviderKeepsTimings(t *testing.T) {
	e := newEnv(t)
	cfg := e.config("a")
	cfg.LeaseDuration, cfg.RenewInterval, cfg.RenewDeadline, cfg.SafetyMargin = 6*time.Second, 0, 0, 0
	p := e.provider(cfg)
	if got := p.Config(); got.RenewInterval != 0 || got.RenewDeadline != 0 || got.SafetyMargin != 0 || got.StoreTimeout != 0 ||
		got.LossGrace != 0 || got.Observer == nil || got.Logger == nil {
		t.Fatalf("Config() = %+v: want the timings as given (zero), the Observer and Logger filled in", got)
	}
	tm := p.Timings()
	if tm != cfg.Timings() || tm.Lease != 6*time.Second || tm.RenewInterval != 2*time.Second || tm.RenewDeadline != 4*time.Second {
		t.Fatalf("Timings() = %+v, want %+v", tm, cfg.Timings())
	}
	c := e.acquire(p)
	if got, want := c.LossWindow(), 6*time.Second-time.Second-4*time.Second; got != want || cfg.LossWindow() != want {
		t.Fatalf("LossWindow: claim %v, config %v; want %v", got, cfg.LossWindow(), want)
	}
	if !c.ReadsFailingAt().IsZero() {
		t.Fatalf("ReadsFailingAt in write mode: %v, want zero", c.ReadsFailingAt())
	}
}

// TestConfigDerivesTimingsFromLease: a user who sets only LeaseDuration gets
// the documented derived timings, not a validation error.
func TestConfigDerivesTimingsFromLease(t *testing.T) {
	tests := []struct {
		lease                               time.Duration
		interval, deadline, safety, storeTO time.Duration
	}{
		// StoreTimeout: 4/15 of RenewDeadline - RenewInterval (three attempts
		// and two pauses of a tenth fit), at most 2 s.
		{15 * time.Second, 5 * time.Second, 10 * time.Second, time.Second, 5 * time.Second * 4 / 15},
		{5 * time.Second, 5 * time.Second / 3, 5 * time.Second * 2 / 3, time.Second, (5*time.Second*2/3 - 5*time.Second/3) * 4 / 15},
		{2 * time.Second, 2 * time.Second / 3, 2 * time.Second * 2 / 3, 500 * time.Millisecond, (2*time.Second*2/3 - 2*time.Second/3) * 4 / 15},
		{60 * time.Second, 20 * time.Second, 40 * time.Second, time.Second, 2 * time.Second},
	}
	for _, tc := range tests {
		c := DefaultConfig()
		c.LeaseDuration = tc.lease
		if err := c.Validate(); err != nil {
			t.Fatalf("LeaseDuration %v alone: %v", tc.lease, err)
		}
		tm := c.Timings()
		got := []time.Duration{tm.Lease, tm.RenewInterval, tm.RenewDeadline, tm.SafetyMargin, tm.StoreTimeout, tm.LossGrace, tm.MaxLeaseDuration, tm.PollInterval, tm.Window, tm.Backstop}
		want := []time.Duration{tc.lease, tc.interval, tc.deadline, tc.safety, tc.storeTO, tc.lease, c.MaxLeaseDuration, 0, 0, 0}
		for i := range got {
			if got[i] != want[i] {
				t.Errorf("LeaseDuration %v: Lease, RenewInterval, RenewDeadline, SafetyMargin, StoreTimeout, LossGrace, MaxLeaseDuration, PollInterval, Window, Backstop = %v, want %v", tc.lease, got, want)
				break
			}
		}
		if lw := tm.LossWindow(); lw != tc.lease-tc.safety-tc.deadline || c.LossWindow() != lw {
			t.Errorf("LeaseDuration %v: LossWindow %v (Config's %v), want %v", tc.lease, lw, c.LossWindow(), tc.lease-tc.safety-tc.deadline)
		}
	}
	// A timing that is set is kept; NoLossGrace too.
	c := DefaultConfig()
	c.RenewInterval, c.RenewDeadline, c.SafetyMargin, c.StoreTimeout, c.LossGrace = 2*time.Second, 9*time.Second, 3*time.Second, time.Second, NoLossGrace
	if tm := c.Timings(); tm.RenewInterval != 2*time.Second || tm.RenewDeadline != 9*time.Second || tm.SafetyMargin != 3*time.Second ||
		tm.StoreTimeout != time.Second || tm.LossGrace != NoLossGrace || tm.KeepAlive != KeepAliveWrite || tm.Layout != c.Layout {
		t.Errorf("Timings of a config with every timing set: %+v", tm)
	}
}

// TestFieldErrors: every broken rule is one FieldError naming its field.
func TestFieldErrors(t *testing.T) {
	c := DefaultConfig()
	c.Order, c.MaxReadsInFlight, c.LeaseDuration = "x", 0, 500*time.Millisecond
	var fields []string
	for _, fe := range FieldErrors(c.Validate()) {
		fields = append(fields, fe.Field)
	}
	if got, want := strings.Join(fields, ","), "LeaseDuration,Order,MaxReadsInFlight"; got != want {
		t.Fatalf("fields = %s, want %s", got, want)
	}
}

func TestDefaultTaskIDUnique(t *testing.T) {
	if a, b := DefaultTaskID(), DefaultTaskID(); a == b || a == "" {
		t.Fatalf("DefaultTaskID not unique: %q %q", a, b)
	}
}

// TestConfigReadMode: read mode's defaults, derived from Window alone, and
// its rules (docs/evidence/design.md section 11), each a FieldError naming its field.
func TestConfigReadMode(t *testing.T) {
	c := DefaultConfig()
	c.KeepAlive = KeepAliveRead
	if err := c.Validate(); err != nil {
		t.Fatalf("read mode with the defaults: %v", err)
	}
	tm := c.Timings()
	got := []time.Duration{tm.Window, tm.Backstop, tm.Lease, tm.MaxLeaseDuration, tm.PollInterval, tm.RenewInterval, tm.RenewDeadline, tm.SafetyMargin, tm.StoreTimeout, tm.LossGrace}
	want := []time.Duration{15 * time.Second, 10 * time.Minute, 10 * time.Minute, 10 * time.Minute, 7500 * time.Millisecond, 200 * time.Second, 400 * time.Second, time.Second, 2 * time.Second, 10 * time.Minute}
	for i := range got {
		if got[i] != want[i] {
			t.Fatalf("Window, Backstop, Lease, MaxLeaseDuration, PollInterval, RenewInterval, RenewDeadline, SafetyMargin, StoreTimeout, LossGrace = %v, want %v", got, want)
		}
	}
	if c.LeaseDuration != 15*time.Second || c.Window != 0 || c.Backstop != 0 || c.MaxLeaseDuration != time.Minute || tm.KeepAlive != KeepAliveRead {
		t.Fatalf("validated: LeaseDuration %v, Window %v, Backstop %v, MaxLeaseDuration %v (mode %q): want them as set", c.LeaseDuration, c.Window, c.Backstop, c.MaxLeaseDuration, tm.KeepAlive)
	}
	tests := []struct {
		name  string
		edit  func(*Config)
		field string // "" = valid
		want  string
	}{
		{"local window", func(c *Config) { c.Window, c.Backstop = 3*time.Second, 12*time.Second }, "", ""},
		{"lease ignored", func(c *Config) { c.LeaseDuration = 5 * time.Second }, "", ""},
		{"unknown mode", func(c *Config) { c.KeepAlive = "gossip" }, "KeepAlive", `"gossip" is not`},
		{"window in write mode", func(c *Config) { c.KeepAlive, c.Window = KeepAliveWrite, 15*time.Second }, "KeepAlive", "for KeepAliveRead only"},
		{"poll in write mode", func(c *Config) { c.KeepAlive, c.PollInterval = "", time.Second }, "KeepAlive", "for KeepAliveRead only"},
		{"window below 1s", func(c *Config) { c.Window, c.Backstop = 900*time.Millisecond, 30*time.Second }, "Window", "at least 1s"},
		{"window not above the margin", func(c *Config) { c.Window, c.SafetyMargin = 2*time.Second, 2*time.Second }, "Window", "above SafetyMargin"},
		{"window not whole ms", func(c *Config) { c.Window = 15*time.Second + time.Microsecond }, "Window", "whole number of ms"},
		{"backstop not whole ms", func(c *Config) { c.Backstop = time.Minute + time.Microsecond }, "Backstop", "whole number of ms"},
		{"backstop above a day", func(c *Config) { c.Backstop = 25 * time.Hour }, "MaxLeaseDuration", "above 24h"},
		{"backstop below the renewals and a window", func(c *Config) { c.Backstop = 30 * time.Second }, "Backstop", "below RenewDeadline 20s + Window 15s"},
		{"backstop just enough", func(c *Config) { c.Backstop, c.RenewDeadline = 30*time.Second, 15*time.Second }, "", ""},
		{"poll too slow", func(c *Config) { c.PollInterval = 12 * time.Second }, "PollInterval", "below Window - SafetyMargin (14s)"},
		{"poll and timeout just below", func(c *Config) { c.PollInterval = 12*time.Second - time.Millisecond }, "", ""},
		{"poll negative", func(c *Config) { c.PollInterval = -time.Second }, "PollInterval", "must be positive"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := DefaultConfig()
			c.KeepAlive = KeepAliveRead
			tc.edit(&c)
			err := c.Validate()
			if tc.field == "" {
				if err != nil {
					t.Fatalf("valid config refused: %v", err)
				}
				return
			}
			for _, fe := range FieldErrors(err) {
				if fe.Field == tc.field && strings.Contains(fe.Reason, tc.want) {
					return
				}
			}
			t.Fatalf("error = %v, want a FieldError on %s mentioning %q", err, tc.field, tc.want)
		})
	}
}
