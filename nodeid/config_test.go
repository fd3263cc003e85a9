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
		{"safety margin zero", func(c *Config) { c.SafetyMargin = 0 }, "SafetyMargin"},
		{"safety margin above lease", func(c *Config) { c.SafetyMargin = c.LeaseDuration }, "SafetyMargin"},
		{"lease too short", func(c *Config) { c.LeaseDuration = 500 * time.Millisecond }, "LeaseDuration"},
		{"lease above max", func(c *Config) { c.MaxLeaseDuration = 10 * time.Second }, "MaxLeaseDuration"},
		{"cluster too big", func(c *Config) { c.ClusterSize = 1025 }, "ClusterSize 1025"},
		{"cluster empty", func(c *Config) { c.ClusterSize = 0 }, "ClusterSize 0"},
		{"cluster fits wider layout", func(c *Config) {
			c.ClusterSize, c.Layout.NodeBits, c.Layout.SequenceBits = 4096, 12, 10
		}, ""},
		{"layout sum", func(c *Config) { c.Layout.SequenceBits = 13 }, "sum to 63"},
		{"order", func(c *Config) { c.Order = "random" }, "Order"},
		{"reads", func(c *Config) { c.MaxReadsInFlight = 0 }, "MaxReadsInFlight"},
		{"task id", func(c *Config) { c.TaskID = "" }, "TaskID"},
		{"store timeout", func(c *Config) { c.StoreTimeout = c.RenewDeadline }, "StoreTimeout"},
		{"several errors", func(c *Config) { c.Order, c.MaxReadsInFlight = "x", 0 }, "MaxReadsInFlight"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := DefaultConfig()
			tc.edit(&c)
			err := c.validate()
			switch {
			case tc.want == "" && err != nil:
				t.Fatalf("valid config refused: %v", err)
			case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
				t.Fatalf("error = %v, want one naming %q", err, tc.want)
			}
		})
	}
}

func TestDefaultTaskIDUnique(t *testing.T) {
	if a, b := DefaultTaskID(), DefaultTaskID(); a == b || a == "" {
		t.Fatalf("DefaultTaskID not unique: %q %q", a, b)
	}
}
