package lease_test

import (
	"errors"
	"reflect"
	"testing"

	"github.com/nodeid/nodeid/lease"
)

// FuzzDecodeRecord checks that any bytes give a record or ErrCorrupt, never a
// panic, and that every record that decodes encodes back to an equal record.
func FuzzDecodeRecord(f *testing.F) {
	r := validRecord()
	body, _ := r.Encode()
	f.Add(body, 7)
	f.Add([]byte(`{"schema":1,"nodeId":0,"version":0,"writeId":"0000000000000000"}`), 0)
	f.Add([]byte(`{"schema":1,"nodeId":3,"version":2,"holder":"x","leaseMillis":1,"knownNodes":{"1":2},"writeId":"0000000000000000"}`), 3)
	f.Add([]byte(`{"schema":1,"nodeId":0,"version":4,"holder":"x","value":"http://a:1","leaseMillis":1,"writeId":"0000000000000000"}`), 0)
	f.Add([]byte(`{"schema":1,"nodeId":-3}`), -3)
	f.Add([]byte(`null`), 0)
	f.Add([]byte{0xff, 0xfe}, 1)
	f.Fuzz(func(t *testing.T, data []byte, id int) {
		rec, err := lease.DecodeRecord(data, id)
		if err != nil {
			if !errors.Is(err, lease.ErrCorrupt) {
				t.Fatalf("DecodeRecord error %v does not wrap ErrCorrupt", err)
			}
			return
		}
		again, err := rec.Encode()
		if err != nil {
			t.Fatalf("a decoded record does not encode: %v", err)
		}
		back, err := lease.DecodeRecord(again, id)
		if err != nil {
			t.Fatalf("re-encoded record does not decode: %v\n%s", err, again)
		}
		if !reflect.DeepEqual(normalize(rec), normalize(back)) {
			t.Fatalf("round trip changed the record:\n%+v\n%+v", rec, back)
		}
	})
}

// FuzzDecodeManifest checks the manifest codec the same way.
func FuzzDecodeManifest(f *testing.F) {
	m := validManifest()
	body, _ := m.Encode()
	f.Add(body)
	f.Add([]byte(`{"schema":1}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		got, err := lease.DecodeManifest(data)
		if err != nil {
			if !errors.Is(err, lease.ErrCorrupt) {
				t.Fatalf("DecodeManifest error %v does not wrap ErrCorrupt", err)
			}
			return
		}
		again, err := got.Encode()
		if err != nil {
			t.Fatalf("a decoded manifest does not encode: %v", err)
		}
		if _, err := lease.DecodeManifest(again); err != nil {
			t.Fatalf("re-encoded manifest does not decode: %v", err)
		}
	})
}

// normalize makes equal records DeepEqual: {} and an absent map are the same
// knownNodes, and times compare by instant, not by zone.
func normalize(r lease.Record) lease.Record {
	if len(r.KnownNodes) == 0 {
		r.KnownNodes = nil
	}
	r.RenewedAt, r.ExpiresAt = r.RenewedAt.UTC(), r.ExpiresAt.UTC()
	return r
}
