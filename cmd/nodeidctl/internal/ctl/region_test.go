package ctl

import (
	"path/filepath"
	"strings"
	"testing"
)

// TestNoRegionIsUsage: every command on AWS S3 with no region anywhere (no
// --region, no AWS_REGION, no profile) exits 2, a bad configuration as
// documented, before any request.
func TestNoRegionIsUsage(t *testing.T) {
	none := filepath.Join(t.TempDir(), "none")
	for k, v := range map[string]string{"AWS_REGION": "", "AWS_DEFAULT_REGION": "", "AWS_PROFILE": "",
		"AWS_CONFIG_FILE": none, "AWS_SHARED_CREDENTIALS_FILE": none, "AWS_EC2_METADATA_DISABLED": "true"} {
		t.Setenv(k, v)
	}
	run := runWith(t, map[string]string{"NODEID_BUCKET": "b"})
	for _, args := range [][]string{
		{"status"}, {"check"}, {"init"}, {"release", "--id", "0"}, {"repair", "--id", "0", "--floor", "1"},
		{"resize", "--cluster-size", "2"}, {"leaders"},
	} {
		if out := run(ExitUsage, args...); !strings.Contains(out, "no AWS region") {
			t.Errorf("nodeidctl %s: %s, want it to say there is no AWS region", strings.Join(args, " "), out)
		}
	}
}
