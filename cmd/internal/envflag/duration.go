package envflag

import (
	"regexp"
	"strings"
	"time"
)

// FormatDuration formats d as people write it: to the millisecond (above
// one), without zero trailing units: 667ms, 14.333s, 2m, 1h30m (where
// time.Duration's String gives 666.666666ms, 14.333333333s, 2m0s,
// 1h30m0s).
func FormatDuration(d time.Duration) string {
	if d.Abs() >= time.Millisecond {
		d = d.Round(time.Millisecond)
	}
	s := d.String()
	if strings.HasSuffix(s, "m0s") {
		s = strings.TrimSuffix(s, "0s")
	}
	if strings.HasSuffix(s, "h0m") {
		s = strings.TrimSuffix(s, "0m")
	}
	return s
}

// goDuration matches a duration as time.Duration's String writes it, after
// a space, "(" or "=" or at the start.
var goDuration = regexp.MustCompile(`(^|[\s(=])(-?(?:[0-9]+(?:\.[0-9]+)?(?:ns|us|µs|ms|h|m|s))+)\b`)

// HumanDurations rewrites the durations in text (a validation message made
// with %v) as FormatDuration writes them.
func HumanDurations(text string) string {
	return goDuration.ReplaceAllStringFunc(text, func(m string) string {
		sub := goDuration.FindStringSubmatch(m)
		d, err := time.ParseDuration(sub[2])
		if err != nil {
			return m
		}
		return sub[1] + FormatDuration(d)
	})
}
