package gcsflag

import (
	"strings"
	"testing"
	"time"
)

func TestConfigFromFlags(t *testing.T) {
	f := Flags{Bucket: "leases", Endpoint: "http://127.0.0.1:4443/storage/v1/", NoAuth: true, RequestTimeout: 3 * time.Second}
	c := f.Config("ids/")
	if c.Bucket != "leases" || c.Prefix != "ids/" || c.Endpoint != f.Endpoint || !c.NoAuth || c.RequestTimeout != 3*time.Second {
		t.Fatalf("Config = %+v, want the flags' values under prefix ids/", c)
	}
	if err := f.Check("ids/"); err != nil {
		t.Fatalf("Check of valid flags: %v", err)
	}
	if got, want := f.Name("ids/"), "http://127.0.0.1:4443/storage/v1/b/leases/ids/"; got != want {
		t.Errorf("Name = %q, want %q", got, want)
	}
	if got, want := (&Flags{Bucket: "leases"}).Name("ids/"), "gs://leases/ids/"; got != want {
		t.Errorf("Name = %q, want %q", got, want)
	}
}

// TestCheckNamesTheFlags: the store's Config errors come back with the
// flags' names, never the Config's fields.
func TestCheckNamesTheFlags(t *testing.T) {
	for _, tc := range []struct {
		flags Flags
		want  string
	}{
		{Flags{}, "--gcs-bucket is required"},
		{Flags{Bucket: "My_Bucket!"}, `--gcs-bucket "My_Bucket!" is not a bucket name`},
		{Flags{Bucket: "leases", NoAuth: true}, "--gcs-no-auth is for an emulator: set --gcs-endpoint too"},
		{Flags{Bucket: "leases", Endpoint: "127.0.0.1:4443"}, `--gcs-endpoint "127.0.0.1:4443" is not an http:// or https:// URL`},
	} {
		err := tc.flags.Check("nodeid/")
		if err == nil || !strings.Contains(err.Error(), tc.want) || strings.Contains(err.Error(), "gcsstore") {
			t.Errorf("Check(%+v) = %v, want a usage error containing %q", tc.flags, err, tc.want)
		}
	}
}
