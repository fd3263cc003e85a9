package lease_test

import (
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/nodeid/nodeid/lease"
	"github.com/nodeid/nodeid/snowflake"
)

func validManifest() lease.Manifest {
	return lease.Manifest{ClusterSize: 1024,
		Layout:    snowflake.Layout{TimestampBits: 41, NodeBits: 10, SequenceBits: 12, EpochMs: 1_288_834_974_657},
		CreatedAt: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC), Filled: true,
		WriteID: "abcdefabcdefabcd"}
}

func TestManifestRoundTrip(t *testing.T) {
	m := validManifest()
	body, err := m.Encode()
	if err != nil {
		t.Fatal(err)
	}
	got, err := lease.DecodeManifest(body)
	if err != nil {
		t.Fatalf("DecodeManifest(%s): %v", body, err)
	}
	if !reflect.DeepEqual(got, m) {
		t.Fatalf("round trip: got %+v want %+v", got, m)
	}
}

// The layout is one field of Manifest but flat keys on the wire: the body of
// cluster.json must not change with the Go type.
func TestManifestWireFormat(t *testing.T) {
	m := validManifest()
	body, err := m.Encode()
	if err != nil {
		t.Fatal(err)
	}
	const want = `{"schema":1,"clusterSize":1024,"timestampBits":41,"nodeBits":10,"sequenceBits":12,` +
		`"epochMs":1288834974657,"createdAt":"2026-01-02T03:04:05Z","filled":true,"writeId":"abcdefabcdefabcd"}`
	if string(body) != want {
		t.Fatalf("Encode =\n%s\nwant\n%s", body, want)
	}
}

// A range of its own is a key on the wire, left out when it starts at 0 so
// that the manifests of clusters without one stay as they were.
func TestManifestRange(t *testing.T) {
	m := validManifest()
	m.ClusterSize, m.FirstNodeID = 512, 512
	body, err := m.Encode()
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(body), `"clusterSize":512,"firstNodeId":512,`) {
		t.Fatalf("Encode = %s, want firstNodeId after clusterSize", body)
	}
	got, err := lease.DecodeManifest(body)
	if err != nil || got.FirstNodeID != 512 || got.RangeString() != "512..1023" {
		t.Fatalf("DecodeManifest(%s) = %+v, %v", body, got, err)
	}
	for id, owns := range map[int]bool{511: false, 512: true, 1023: true, 1024: false} {
		if got.Owns(id) != owns {
			t.Errorf("Owns(%d) = %v, want %v", id, !owns, owns)
		}
	}
}

func TestManifestInvalid(t *testing.T) {
	tests := []struct {
		name   string
		edit   func(*lease.Manifest)
		reason string
	}{
		{"sum", func(m *lease.Manifest) { m.Layout.SequenceBits = 13 }, "sum to 63"},
		{"zero width", func(m *lease.Manifest) { m.Layout.NodeBits, m.Layout.SequenceBits = 0, 22 }, "out of range"},
		{"too big", func(m *lease.Manifest) { m.ClusterSize = 1025 }, "clusterSize 1025"},
		{"empty", func(m *lease.Manifest) { m.ClusterSize = 0 }, "clusterSize 0"},
		{"epoch", func(m *lease.Manifest) { m.Layout.EpochMs = -1 }, "epochMs"},
		{"writeId", func(m *lease.Manifest) { m.WriteID = "x" }, "writeId"},
		{"first negative", func(m *lease.Manifest) { m.ClusterSize, m.FirstNodeID = 4, -1 }, "node IDs -1..2 leave 0..1023"},
		{"range past the node bits", func(m *lease.Manifest) { m.ClusterSize, m.FirstNodeID = 512, 513 }, "node IDs 513..1024 leave 0..1023"},
		{"unknown mode", func(m *lease.Manifest) { m.KeepAlive = "gossip" }, `keepAlive "gossip"`},
		{"window in write mode", func(m *lease.Manifest) { m.WindowMillis = 1000 }, "only read mode"},
		{"read without window", func(m *lease.Manifest) { m.KeepAlive, m.BackstopMillis = lease.KeepAliveRead, 60000 }, "0 < windowMillis < backstopMillis"},
		{"backstop not above window", func(m *lease.Manifest) {
			m.KeepAlive, m.WindowMillis, m.BackstopMillis = lease.KeepAliveRead, 15000, 15000
		}, "not 15000 and 15000"},
		{"backstop above a day", func(m *lease.Manifest) {
			m.KeepAlive, m.WindowMillis, m.BackstopMillis = lease.KeepAliveRead, 15000, 86400001
		}, "backstopMillis <= 86400000"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			m := validManifest()
			tc.edit(&m)
			_, err := m.Encode()
			if !errors.Is(err, lease.ErrCorrupt) || !strings.Contains(err.Error(), tc.reason) {
				t.Fatalf("Encode error = %v, want ErrCorrupt mentioning %q", err, tc.reason)
			}
		})
	}
	for _, body := range []string{`{}`, `{"schema":2}`, `{"schema":1,"clusterSize":3,"extra":1}`, `[]`} {
		if _, err := lease.DecodeManifest([]byte(body)); !errors.Is(err, lease.ErrCorrupt) {
			t.Errorf("DecodeManifest(%s) error = %v, want ErrCorrupt", body, err)
		}
	}
}

func TestManifestSameLayout(t *testing.T) {
	a, b := validManifest(), validManifest()
	b.ClusterSize = 10
	if !a.SameLayout(&b) {
		t.Fatalf("cluster size must not change the layout")
	}
	b.Layout.EpochMs++
	if a.SameLayout(&b) {
		t.Fatalf("a different epoch is a different layout")
	}
	if s := a.LayoutString(); s != "layout 41/10/12 epoch 1288834974657" {
		t.Fatalf("LayoutString = %q", s)
	}
}

// Read mode is three keys on the wire, after filled; write mode (explicit or
// the zero value) leaves them out, so the manifests of existing clusters keep
// their bytes, and decodes to the zero value.
func TestManifestKeepAlive(t *testing.T) {
	m := validManifest()
	m.KeepAlive, m.WindowMillis, m.BackstopMillis = lease.KeepAliveRead, 15000, 60000
	body, err := m.Encode()
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(body), `"filled":true,"keepAlive":"read","windowMillis":15000,"backstopMillis":60000,"writeId"`) {
		t.Fatalf("Encode = %s, want keepAlive, windowMillis and backstopMillis after filled", body)
	}
	got, err := lease.DecodeManifest(body)
	if err != nil || !reflect.DeepEqual(got, m) {
		t.Fatalf("DecodeManifest(%s) = %+v, %v; want %+v", body, got, err, m)
	}
	if s := got.KeepAliveString(); s != "keep-alive read, window 15s, backstop 1m0s" {
		t.Fatalf("KeepAliveString = %q", s)
	}
	w := validManifest()
	w.KeepAlive = lease.KeepAliveWrite
	wb, err := w.Encode()
	if err != nil || strings.Contains(string(wb), "keepAlive") {
		t.Fatalf("Encode in write mode = %s, %v: want no keepAlive", wb, err)
	}
	explicit := strings.Replace(string(wb), `"writeId"`, `"keepAlive":"write","writeId"`, 1)
	got, err = lease.DecodeManifest([]byte(explicit))
	if err != nil || got.KeepAlive != "" || !got.SameKeepAlive(&w) || got.SameKeepAlive(&m) {
		t.Fatalf("DecodeManifest(%s) = %+v, %v: want write mode, the zero value", explicit, got, err)
	}
	if s := got.KeepAliveString(); s != "keep-alive write" {
		t.Fatalf("KeepAliveString = %q", s)
	}
	other := m
	other.BackstopMillis++
	if m.SameKeepAlive(&other) {
		t.Fatalf("another backstop is another keep-alive")
	}
}
