package storeflag

import (
	"errors"
	"strings"
	"testing"
)

func TestCheck(t *testing.T) {
	failed := errors.New("gcs flags wrong")
	fams := func(s3, etcd, gcs bool) []Family {
		return []Family{
			{Store: "s3", Flags: "the S3 flags (--bucket)", Given: s3},
			{Store: "etcd", Flags: "the --etcd-* flags", Given: etcd},
			{Store: "gcs", Flags: "the --gcs-* flags", Given: gcs, Check: func() error { return failed }},
		}
	}
	for _, tc := range []struct {
		store          string
		s3, etcd, gcs  bool
		want           string
		wantFamilyFail bool
	}{
		{store: "s3", s3: true},
		{store: "etcd", etcd: true},
		{store: "zk", want: `--store "zk": want s3, etcd or gcs`},
		{store: "s3", s3: true, etcd: true, want: "the --etcd-* flags need --store etcd (--store is s3, which excludes them)"},
		{store: "etcd", etcd: true, s3: true, want: "the S3 flags (--bucket) need --store s3"},
		{store: "gcs", gcs: true, wantFamilyFail: true},
		{store: "gcs", gcs: true, etcd: true, want: "the --etcd-* flags need --store etcd"},
	} {
		err := Check("--store", tc.store, fams(tc.s3, tc.etcd, tc.gcs)...)
		switch {
		case tc.wantFamilyFail:
			if !errors.Is(err, failed) {
				t.Errorf("--store %s: %v, want the family's own check's error", tc.store, err)
			}
		case tc.want == "" && err != nil:
			t.Errorf("--store %s (s3 %v, etcd %v, gcs %v): %v, want nil", tc.store, tc.s3, tc.etcd, tc.gcs, err)
		case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
			t.Errorf("--store %s (s3 %v, etcd %v, gcs %v): %v, want %q", tc.store, tc.s3, tc.etcd, tc.gcs, err, tc.want)
		}
	}
}
