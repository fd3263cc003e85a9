package broker

import (
	"errors"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/nodeid/nodeid/cmd/internal/envflag"
	"github.com/nodeid/nodeid/cmd/internal/gcsflag"
)

func TestParseServeFlagsGCS(t *testing.T) {
	c, err := parseServeFlags("nodeid-broker", []string{"--store", "gcs", "--gossip-addr", "127.0.0.1:0", "--gcs-bucket", "leases"},
		env("NODEID_GCS_REQUEST_TIMEOUT", "2s"), io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	gc := c.gcs.Config(c.prefix)
	if c.store != gcsflag.Store || gc.Bucket != "leases" || gc.Prefix != "nodeid/" || gc.Endpoint != "" || gc.NoAuth || gc.RequestTimeout != 2*time.Second {
		t.Errorf("%+v", gc)
	}
	if got := c.node.Gossip.Cluster; got != "gs://leases/nodeid/" {
		t.Errorf("gossip cluster %q", got)
	}
	c, err = parseServeFlags("nodeid-broker", []string{"--store", "gcs", "--gcs-bucket", "leases", "--gcs-endpoint", "http://127.0.0.1:4443/storage/v1/", "--gcs-no-auth"}, env(), io.Discard)
	if err != nil || !c.gcs.NoAuth || c.gcs.Endpoint != "http://127.0.0.1:4443/storage/v1/" {
		t.Errorf("an emulator: %v, %+v", err, c.gcs)
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--store", "gcs"}, "--gcs-bucket is required"},
		{[]string{"--store", "gcs", "--gcs-bucket", "leases", "--gcs-no-auth"}, "--gcs-no-auth is for an emulator: set --gcs-endpoint too"},
		{[]string{"--store", "gcs", "--gcs-bucket", "leases", "--bucket", "b"}, "the S3 flags (--bucket, --s3-endpoint, --embedded-s3) need --store s3"},
		{[]string{"--store", "gcs", "--gcs-bucket", "leases", "--azblob-container", "c"}, "the --azblob-* flags need --store azblob"},
		{[]string{"--bucket", "b", "--gcs-bucket", "leases"}, "the --gcs-* flags need --store gcs"},
	} {
		_, err := parseServeFlags("nodeid-broker", tc.args, env(), io.Discard)
		if !errors.Is(err, envflag.ErrUsage) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v: %v, want a usage error with %q", tc.args, err, tc.want)
		}
	}
}
