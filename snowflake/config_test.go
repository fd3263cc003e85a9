package snowflake

import (
	"errors"
	"strings"
	"testing"
	"time"
)

func TestConfigValidation(t *testing.T) {
	for _, tc := range []struct {
		name      string
		mod       func(*Config)
		wantField string // "" for a valid config
		layoutErr bool
	}{
		{"default with a node ID", func(c *Config) { c.NodeID = 1 }, "", false},
		{"highest node ID", func(c *Config) { c.NodeID = 1023 }, "", false},
		{"node ID too large", func(c *Config) { c.NodeID = 1024 }, "NodeID", false},
		{"negative node ID", func(c *Config) { c.NodeID = -1 }, "NodeID", false},
		{"node ID fits a wider layout", func(c *Config) {
			c.Layout = Layout{TimestampBits: 41, NodeBits: 12, SequenceBits: 10, EpochMs: DefaultEpochMs}
			c.NodeID = 4095
		}, "", false},
		{"node ID does not fit a narrower layout", func(c *Config) {
			c.Layout = Layout{TimestampBits: 41, NodeBits: 1, SequenceBits: 21, EpochMs: DefaultEpochMs}
			c.NodeID = 2
		}, "NodeID", false},
		{"zero layout", func(c *Config) { c.Layout = Layout{} }, "Layout", true},
		{"bits do not sum to 63", func(c *Config) { c.Layout.SequenceBits = 13 }, "Layout", true},
		{"negative floor", func(c *Config) { c.FloorMs = -1 }, "FloorMs", false},
		{"floor at the layout's end", func(c *Config) { c.FloorMs = c.Layout.MaxTimeMs() }, "FloorMs", false},
		{"floor just before the layout's end", func(c *Config) { c.FloorMs = c.Layout.MaxTimeMs() - 1 }, "", false},
		{"negative MaxClockWait", func(c *Config) { c.MaxClockWait = -time.Second }, "MaxClockWait", false},
		{"zero MaxClockWait", func(c *Config) { c.MaxClockWait = 0 }, "", false},
		{"negative MaxReservationWait", func(c *Config) { c.MaxReservationWait = -1 }, "MaxReservationWait", false},
		{"all inputs set", func(c *Config) {
			c.Fence = FenceFunc(func() bool { return true })
			c.Reservation = func() int64 { return t0 }
			c.FloorMs = t0
			c.Clock = newFakeClock(t0)
		}, "", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := DefaultConfig()
			tc.mod(&cfg)
			g, err := New(cfg)
			if tc.wantField == "" {
				if err != nil || g == nil {
					t.Fatalf("New = %v, want success", err)
				}
				return
			}
			if g != nil || !errors.Is(err, ErrInvalidConfig) {
				t.Fatalf("New = %v, want ErrInvalidConfig", err)
			}
			if errors.Is(err, ErrInvalidLayout) != tc.layoutErr {
				t.Fatalf("errors.Is(%v, ErrInvalidLayout) = %v, want %v", err, !tc.layoutErr, tc.layoutErr)
			}
			if want := "snowflake: invalid config: " + tc.wantField + ": "; !strings.HasPrefix(err.Error(), want) {
				t.Fatalf("error %q, want it to start %q", err, want)
			}
			if strings.Count(err.Error(), "snowflake:") != 1 {
				t.Fatalf("error %q repeats the prefix", err)
			}
		})
	}
}

func TestDefaultConfig(t *testing.T) {
	c := DefaultConfig()
	if c.Layout != DefaultLayout() || c.MaxClockWait != 5*time.Second || c.MaxReservationWait != 5*time.Second {
		t.Fatalf("DefaultConfig() = %+v", c)
	}
	if c.Fence != nil || c.Reservation != nil || c.Clock != nil || c.FloorMs != 0 {
		t.Fatalf("DefaultConfig() sets an input: %+v", c)
	}
}
