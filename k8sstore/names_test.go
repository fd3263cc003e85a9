package k8sstore

import (
	"strings"
	"testing"
)

func TestNames(t *testing.T) {
	for _, tc := range []struct{ path, name string }{
		{"nodeid.7.json", "nodeid.7.json"},
		{"nodeid/7.json", "nodeid-2f7.json"},
		{"x/elections/My-Job/cluster.json", "x-2felections-2f-4dy-2d-4aob-2fcluster.json"},
	} {
		got, err := nameOf(tc.path)
		if err != nil || got != tc.name {
			t.Errorf("nameOf(%q) = %q, %v; want %q", tc.path, got, err, tc.name)
		}
		if back, ok := decode(got); !ok || back != tc.path {
			t.Errorf("decode(%q) = %q, %v; want %q", got, back, ok, tc.path)
		}
	}
	for _, path := range []string{"", "/a", "a.", "a./b", strings.Repeat("x", 254), "a..b"} {
		if n, err := nameOf(path); err == nil {
			t.Errorf("nameOf(%q) = %q, want a refusal", path, n)
		}
	}
	for _, name := range []string{"a-61", "a-2", "a-zz", "a-2F", "A"} {
		if p, ok := decode(name); ok {
			t.Errorf("decode(%q) = %q, want false (encode never gives it)", name, p)
		}
	}
}

// FuzzNames checks the mapping is injective: every name decodes back to the
// one path it came from.
func FuzzNames(f *testing.F) {
	for _, s := range []string{"nodeid/7.json", "a-b", "A/B", "..", "\x00\xff"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, path string) {
		n := encode(path)
		back, ok := decode(n)
		if !ok || back != path {
			t.Fatalf("decode(encode(%q)) = %q, %v", path, back, ok)
		}
		if p2, ok := decode(path); ok && encode(p2) != path {
			t.Fatalf("decode(%q) = %q, which encodes to %q", path, p2, encode(p2))
		}
	})
}
