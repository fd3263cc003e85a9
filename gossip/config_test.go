package gossip

import (
	"errors"
	"strings"
	"testing"
	"time"
)

func TestConfigValidation(t *testing.T) {
	tests := []struct {
		name   string
		modify func(*Config)
		want   string // "" = valid; else a substring of the error
	}{
		{"local defaults", func(c *Config) {}, ""},
		{"LAN defaults", func(c *Config) {
			d := DefaultConfig()
			d.Name = c.Name
			*c = d
		}, ""},
		{"empty name", func(c *Config) { c.Name = "" }, "Name is empty"},
		{"long name", func(c *Config) { c.Name = strings.Repeat("x", MaxNameLen+1) }, "Name is 513 bytes"},
		{"key 16", func(c *Config) { c.SecretKey = make([]byte, 16) }, ""},
		{"key 24", func(c *Config) { c.SecretKey = make([]byte, 24) }, ""},
		{"key 32", func(c *Config) { c.SecretKey = make([]byte, 32) }, ""},
		{"key 15", func(c *Config) { c.SecretKey = make([]byte, 15) }, "SecretKey is 15 bytes"},
		{"key 33", func(c *Config) { c.SecretKey = make([]byte, 33) }, "SecretKey is 33 bytes"},
		{"bind addr not an IP", func(c *Config) { c.BindAddr = "localhost" }, "BindAddr"},
		{"advertise addr not an IP", func(c *Config) { c.AdvertiseAddr = "x" }, "AdvertiseAddr"},
		{"bind port", func(c *Config) { c.BindPort = 70000 }, "BindPort"},
		{"advertise port", func(c *Config) { c.AdvertisePort = -1 }, "AdvertisePort"},
		{"probe timeout above interval", func(c *Config) { c.ProbeTimeout = 2 * c.ProbeInterval }, "ProbeTimeout"},
		{"gossip interval", func(c *Config) { c.GossipInterval = 0 }, "GossipInterval"},
		{"push/pull interval", func(c *Config) { c.PushPullInterval = 0 }, "PushPullInterval"},
		{"tcp timeout", func(c *Config) { c.TCPTimeout = 0 }, "TCPTimeout"},
		{"gossip to the dead", func(c *Config) { c.GossipToTheDeadTime = -time.Second }, "GossipToTheDeadTime"},
		{"update timeout", func(c *Config) { c.UpdateTimeout = -time.Second }, "UpdateTimeout"},
		{"leave timeout", func(c *Config) { c.LeaveTimeout = 0 }, "LeaveTimeout"},
		{"query interval", func(c *Config) { c.QueryInterval = 0 }, "QueryInterval"},
		{"suspicion mult", func(c *Config) { c.SuspicionMult = 0 }, "SuspicionMult"},
		{"rejoin min", func(c *Config) { c.RejoinMin = 0 }, "RejoinMin"},
		{"rejoin min above max", func(c *Config) { c.RejoinMin = 2 * c.RejoinMax }, "RejoinMin"},
		{"reconnect interval", func(c *Config) { c.ReconnectInterval = 0 }, "ReconnectInterval"},
		{"reconnect timeout below interval", func(c *Config) { c.ReconnectTimeout = c.ReconnectInterval / 2 }, "ReconnectTimeout"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := testConfig("n")
			tt.modify(&c)
			err := c.Validate()
			switch {
			case tt.want == "" && err != nil:
				t.Fatalf("validate = %v, want nil", err)
			case tt.want != "" && (!errors.Is(err, ErrInvalidConfig) || !strings.Contains(err.Error(), tt.want)):
				t.Fatalf("validate = %v, want ErrInvalidConfig mentioning %q", err, tt.want)
			}
		})
	}
}

func TestStartRefusesBadConfig(t *testing.T) {
	for _, c := range []Config{testConfig(""), func() Config { c := testConfig("k"); c.SecretKey = []byte("short"); return c }()} {
		if n, err := Start(c); !errors.Is(err, ErrInvalidConfig) {
			if n != nil {
				_ = n.Close()
			}
			t.Errorf("Start(%+v) = %v, want ErrInvalidConfig", c, err)
		}
	}
}

func TestDefaultConfigValidatesWithName(t *testing.T) {
	c := DefaultConfig()
	if err := c.Validate(); !errors.Is(err, ErrInvalidConfig) {
		t.Fatalf("DefaultConfig without a name validates: %v", err)
	}
	c.Name = "task"
	if err := c.Validate(); err != nil {
		t.Fatalf("DefaultConfig with a name: %v", err)
	}
	if c.Logger == nil {
		t.Error("validate left Logger nil")
	}
}

// TestGossipToTheDeadTimeReachesMemberlist: the LAN and local defaults are
// memberlist's (30 s, 15 s), and the field is what memberlist is given.
func TestGossipToTheDeadTimeReachesMemberlist(t *testing.T) {
	for _, tt := range []struct {
		c    Config
		want time.Duration
	}{{DefaultConfig(), 30 * time.Second}, {DefaultLocalConfig(), 15 * time.Second}} {
		if got := tt.c.memberlistConfig(&Node{}).GossipToTheDeadTime; got != tt.want {
			t.Errorf("memberlist's GossipToTheDeadTime = %v, want %v", got, tt.want)
		}
	}
	c := DefaultLocalConfig()
	c.GossipToTheDeadTime = 3 * time.Second
	if got := c.memberlistConfig(&Node{}).GossipToTheDeadTime; got != 3*time.Second {
		t.Errorf("memberlist's GossipToTheDeadTime = %v, want the field's 3s", got)
	}
}
