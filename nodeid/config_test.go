package nodeid

import (
	"strings"
	"testing"
	"time"
)

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
			c := DefaultConfig()
			if err := c.Validate(); err != nil { // derive the timings the edits refer to
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
		got := []time.Duration{c.RenewInterval, c.RenewDeadline, c.SafetyMargin, c.StoreTimeout}
		want := []time.Duration{tc.interval, tc.deadline, tc.safety, tc.storeTO}
		for i := range got {
			if got[i] != want[i] {
				t.Errorf("LeaseDuration %v: RenewInterval, RenewDeadline, SafetyMargin, StoreTimeout = %v, want %v", tc.lease, got, want)
				break
			}
		}
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
