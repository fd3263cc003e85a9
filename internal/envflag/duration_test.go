package envflag

import (
	"testing"
	"time"
)

func TestFormatDuration(t *testing.T) {
	for d, want := range map[time.Duration]string{
		0: "0s", 2 * time.Second / 3: "667ms", 43 * time.Second / 3: "14.333s", 2 * time.Minute: "2m",
		90 * time.Minute: "1h30m", time.Hour: "1h", 61 * time.Second: "1m1s", -1500 * time.Millisecond: "-1.5s",
		250 * time.Microsecond: "250µs", 1500 * time.Microsecond: "2ms", 10 * time.Second: "10s",
	} {
		if got := FormatDuration(d); got != want {
			t.Errorf("FormatDuration(%v) = %q, want %q", d, got, want)
		}
	}
}

func TestHumanDurations(t *testing.T) {
	for in, want := range map[string]string{
		"--renew-interval 666.666666ms must be below --renew-deadline 1.333333333s": "--renew-interval 667ms must be below --renew-deadline 1.333s",
		"--lease-duration 2m0s above --max-lease-duration 1m0s":                     "--lease-duration 2m above --max-lease-duration 1m",
		"in (0, --lease-duration 1h0m0s)":                                           "in (0, --lease-duration 1h)",
		"--cluster-size 0 outside 1..1024 (2^NodeBits)":                             "--cluster-size 0 outside 1..1024 (2^NodeBits)",
		"key=7s, lease 0.json, v1s":                                                 "key=7s, lease 0.json, v1s",
	} {
		if got := HumanDurations(in); got != want {
			t.Errorf("HumanDurations(%q) = %q, want %q", in, got, want)
		}
	}
}
