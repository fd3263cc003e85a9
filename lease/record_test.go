package lease_test

import (
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/nodeid/nodeid/lease"
)

func validRecord() lease.Record {
	return lease.Record{
		NodeID: 7, Holder: "arn:aws:ecs:eu-west-1:1:task/c/abc", Version: 3, LeaseMillis: 15000,
		RenewedAt:       time.Date(2026, 11, 21, 10, 0, 0, 123e6, time.UTC),
		ExpiresAt:       time.Date(2026, 11, 21, 10, 0, 15, 123e6, time.UTC),
		ReservedUntilMs: 1_795_000_000_000, KnownNodes: map[int]int64{0: 1, 7: 3, 12: 9},
		WriteID: "0123456789abcdef",
	}
}

func TestRecordRoundTrip(t *testing.T) {
	for name, r := range map[string]lease.Record{
		"held": validRecord(),
		"free": {NodeID: 0, Version: 0, WriteID: "ffffffffffffffff"},
		"elected": {NodeID: 0, Holder: "task-a", Value: "http://10.0.0.7:8080", Version: 9, LeaseMillis: 15000,
			WriteID: "00000000000000bb"},
		"gossiping": {NodeID: 2, Holder: "task-a", Gossip: "10.0.0.7:7946", Version: 4, LeaseMillis: 15000,
			WriteID: "00000000000000dd"},
		"released": {NodeID: 1023, Version: 41, LeaseMillis: 15000, ReservedUntilMs: 5,
			WriteID: "00000000000000aa"},
		"confirm": {NodeID: 3, Holder: "task-a", Version: 2, LeaseMillis: 600000, ReservedUntilMs: 9,
			WriteID: "00000000000000cc", Challenge: &lease.Challenge{Of: "00000000000000bb", By: "task-b", Confirmed: true, WindowMillis: 15000}},
	} {
		t.Run(name, func(t *testing.T) {
			body, err := r.Encode()
			if err != nil {
				t.Fatalf("Encode: %v", err)
			}
			got, err := lease.DecodeRecord(body, r.NodeID)
			if err != nil {
				t.Fatalf("DecodeRecord(%s): %v", body, err)
			}
			if !reflect.DeepEqual(got, r) {
				t.Fatalf("round trip:\n got %+v\nwant %+v", got, r)
			}
		})
	}
}

func TestRecordWireFormat(t *testing.T) {
	r := validRecord()
	body, err := r.Encode()
	if err != nil {
		t.Fatal(err)
	}
	want := `{"schema":1,"nodeId":7,"holder":"arn:aws:ecs:eu-west-1:1:task/c/abc","version":3,` +
		`"leaseMillis":15000,"renewedAt":"2026-11-21T10:00:00.123Z","expiresAt":"2026-11-21T10:00:15.123Z",` +
		`"reservedUntilMs":1795000000000,"knownNodes":{"0":1,"12":9,"7":3},"writeId":"0123456789abcdef"}`
	if string(body) != want {
		t.Fatalf("wire format changed:\n got %s\nwant %s", body, want)
	}
}

// TestRecordWireFormatValue pins where a value and a gossip address go, and
// that a record without them has no "value" or "gossip" key (see
// TestRecordWireFormat): older readers, whose codec refuses unknown fields,
// still read every node-ID record of a task that publishes neither.
func TestRecordWireFormatValue(t *testing.T) {
	for _, tc := range []struct {
		r    lease.Record
		want string
	}{
		{lease.Record{NodeID: 0, Holder: "a", Value: "v", Version: 2, LeaseMillis: 5000, WriteID: "0123456789abcdef"},
			`{"schema":1,"nodeId":0,"holder":"a","value":"v","version":2,"leaseMillis":5000,"reservedUntilMs":0,"writeId":"0123456789abcdef"}`},
		{lease.Record{NodeID: 0, Holder: "a", Gossip: "10.0.0.7:7946", Version: 2, LeaseMillis: 5000, WriteID: "0123456789abcdef"},
			`{"schema":1,"nodeId":0,"holder":"a","gossip":"10.0.0.7:7946","version":2,"leaseMillis":5000,"reservedUntilMs":0,"writeId":"0123456789abcdef"}`},
	} {
		body, err := tc.r.Encode()
		if err != nil {
			t.Fatal(err)
		}
		if string(body) != tc.want {
			t.Errorf("wire format:\n got %s\nwant %s", body, tc.want)
		}
	}
}

// TestRecordWireFormatChallenge pins a challenge's and a confirm's form.
func TestRecordWireFormatChallenge(t *testing.T) {
	r := lease.Record{NodeID: 0, Holder: "a", Version: 2, LeaseMillis: 60000, WriteID: "0123456789abcdef",
		Challenge: &lease.Challenge{Of: "00000000000000aa", By: "b", WindowMillis: 15000}}
	for _, confirmed := range []bool{false, true} {
		r.Challenge.Confirmed = confirmed
		body, err := r.Encode()
		if err != nil {
			t.Fatal(err)
		}
		flag := map[bool]string{true: `"confirmed":true,`}[confirmed]
		want := `{"schema":1,"nodeId":0,"holder":"a","version":2,"leaseMillis":60000,"reservedUntilMs":0,"writeId":"0123456789abcdef",` +
			`"challenge":{"of":"00000000000000aa","by":"b",` + flag + `"windowMillis":15000}}`
		if string(body) != want {
			t.Fatalf("wire format:\n got %s\nwant %s", body, want)
		}
	}
	if got := r.TakeableAfter(); got != 15*time.Second {
		t.Fatalf("a confirm's TakeableAfter = %v, want its window", got)
	}
	r.Challenge.Confirmed = false
	if got := r.TakeableAfter(); got != time.Minute {
		t.Fatalf("a challenge's TakeableAfter = %v, want its lease", got)
	}
}

func TestDecodeRecordCorrupt(t *testing.T) {
	const ok = `"schema":1,"nodeId":7,"version":3,"writeId":"0123456789abcdef"`
	tests := []struct {
		name, body, reason string
	}{
		{"empty", ``, "bad JSON"},
		{"not JSON", `hello`, "bad JSON"},
		{"array", `[1,2]`, "bad JSON"},
		{"null", `null`, "schema missing"},
		{"truncated", `{"schema":1,"nodeId":7`, "bad JSON"},
		{"trailing", `{` + ok + `}{}`, "trailing data"},
		{"unknown field", `{` + ok + `,"owner":"x"}`, "unknown field"},
		{"no schema", `{"nodeId":7,"version":3,"writeId":"0123456789abcdef"}`, "schema missing"},
		{"schema 2", `{"schema":2,"nodeId":7,"version":3,"writeId":"0123456789abcdef"}`, "unknown schema 2"},
		{"no nodeId", `{"schema":1,"version":3,"writeId":"0123456789abcdef"}`, "nodeId missing"},
		{"other nodeId", `{"schema":1,"nodeId":8,"version":3,"writeId":"0123456789abcdef"}`, "does not match"},
		{"no version", `{"schema":1,"nodeId":7,"writeId":"0123456789abcdef"}`, "version missing"},
		{"negative version", `{"schema":1,"nodeId":7,"version":-1,"writeId":"0123456789abcdef"}`, "negative version"},
		{"string version", `{"schema":1,"nodeId":7,"version":"3","writeId":"0123456789abcdef"}`, "bad JSON"},
		{"float version", `{"schema":1,"nodeId":7,"version":3.5,"writeId":"0123456789abcdef"}`, "bad JSON"},
		{"huge version", `{"schema":1,"nodeId":7,"version":99999999999999999999,"writeId":"0123456789abcdef"}`, "bad JSON"},
		{"no writeId", `{"schema":1,"nodeId":7,"version":3}`, "writeId missing"},
		{"short writeId", `{"schema":1,"nodeId":7,"version":3,"writeId":"abc"}`, "writeId"},
		{"upper writeId", `{"schema":1,"nodeId":7,"version":3,"writeId":"0123456789ABCDEF"}`, "writeId"},
		{"held no lease", `{` + ok + `,"holder":"t"}`, "leaseMillis 0"},
		{"absurd lease", `{` + ok + `,"holder":"t","leaseMillis":86400001}`, "leaseMillis"},
		{"negative lease", `{` + ok + `,"leaseMillis":-5}`, "leaseMillis"},
		{"negative reservation", `{` + ok + `,"reservedUntilMs":-1}`, "reservedUntilMs"},
		{"absurd reservation", `{` + ok + `,"reservedUntilMs":9007199254740993}`, "reservedUntilMs"},
		{"bad knownNodes key", `{` + ok + `,"knownNodes":{"x":1}}`, "bad JSON"},
		{"negative knownNodes", `{` + ok + `,"knownNodes":{"-1":1}}`, "knownNodes"},
		{"negative known version", `{` + ok + `,"knownNodes":{"1":-1}}`, "knownNodes"},
		{"long holder", `{` + ok + `,"leaseMillis":1,"holder":"` + strings.Repeat("h", 1025) + `"}`, "holder"},
		{"long value", `{` + ok + `,"leaseMillis":1,"holder":"t","value":"` + strings.Repeat("v", lease.MaxValueLen+1) + `"}`, "value of 4097 bytes"},
		{"value when free", `{` + ok + `,"value":"v"}`, "value without a holder"},
		{"gossip when free", `{` + ok + `,"gossip":"10.0.0.1:7946"}`, "gossip address without a holder"},
		{"gossip without a port", `{` + ok + `,"leaseMillis":1,"holder":"t","gossip":"10.0.0.1"}`, "not host:port"},
		{"gossip port zero", `{` + ok + `,"leaseMillis":1,"holder":"t","gossip":"10.0.0.1:0"}`, "not host:port"},
		{"gossip without a host", `{` + ok + `,"leaseMillis":1,"holder":"t","gossip":":7946"}`, "not host:port"},
		{"long gossip", `{` + ok + `,"leaseMillis":1,"holder":"t","gossip":"` + strings.Repeat("h", lease.MaxGossipLen) + `:1"}`, "not host:port"},
		{"bad time", `{` + ok + `,"renewedAt":"yesterday"}`, "bad JSON"},
		{"challenge of a free record", `{` + ok + `,"challenge":{"of":"00000000000000aa","by":"b","windowMillis":1}}`, "challenge of a free record"},
		{"challenge of no writeId", `{` + ok + `,"holder":"t","leaseMillis":60000,"challenge":{"of":"x","by":"b","windowMillis":1}}`, "challenge of writeId"},
		{"challenge of itself", `{` + ok + `,"holder":"t","leaseMillis":60000,"challenge":{"of":"0123456789abcdef","by":"b","windowMillis":1}}`, "the challenge's own"},
		{"challenge by no one", `{` + ok + `,"holder":"t","leaseMillis":60000,"challenge":{"of":"00000000000000aa","by":"","windowMillis":1}}`, "challenger"},
		{"challenge window zero", `{` + ok + `,"holder":"t","leaseMillis":60000,"challenge":{"of":"00000000000000aa","by":"b","windowMillis":0}}`, "windowMillis 0"},
		{"challenge window as long as the lease", `{` + ok + `,"holder":"t","leaseMillis":60000,"challenge":{"of":"00000000000000aa","by":"b","windowMillis":60000}}`, "windowMillis 60000"},
		{"challenge unknown field", `{` + ok + `,"holder":"t","leaseMillis":60000,"challenge":{"of":"00000000000000aa","by":"b","windowMillis":1,"x":1}}`, "unknown field"},
		{"oversized", `{` + ok + `,"holder":"` + strings.Repeat(" ", lease.MaxObjectSize) + `"}`, "exceeds"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := lease.DecodeRecord([]byte(tc.body), 7)
			if !errors.Is(err, lease.ErrCorrupt) {
				t.Fatalf("DecodeRecord error = %v, want ErrCorrupt", err)
			}
			if !strings.Contains(err.Error(), tc.reason) {
				t.Fatalf("error %q does not give the reason %q", err, tc.reason)
			}
		})
	}
}

func TestEncodeRefusesInvalid(t *testing.T) {
	r := validRecord()
	r.WriteID = ""
	if _, err := r.Encode(); !errors.Is(err, lease.ErrCorrupt) {
		t.Fatalf("Encode of a record without writeId: error = %v, want ErrCorrupt", err)
	}
}

func TestNewWriteID(t *testing.T) {
	seen := map[string]bool{}
	for range 1000 {
		id := lease.NewWriteID()
		r := lease.Record{WriteID: id}
		if err := r.Validate(); err != nil {
			t.Fatalf("NewWriteID() = %q: %v", id, err)
		}
		if seen[id] {
			t.Fatalf("NewWriteID repeated %q", id)
		}
		seen[id] = true
	}
}

func TestParseRecordKey(t *testing.T) {
	tests := map[string]int{"0.json": 0, "7.json": 7, "1023.json": 1023, "4194303.json": 4194303}
	for key, want := range tests {
		if got, ok := lease.ParseRecordKey(key); !ok || got != want {
			t.Errorf("ParseRecordKey(%q) = %d, %v; want %d, true", key, got, ok, want)
		}
		if lease.RecordKey(want) != key {
			t.Errorf("RecordKey(%d) = %q, want %q", want, lease.RecordKey(want), key)
		}
	}
	for _, key := range []string{"cluster.json", "07.json", "-1.json", "+1.json", "1.JSON", ".json", "1.json.bak",
		"a/1.json", "1 .json", "99999999.json", "1.jsonx", ""} {
		if id, ok := lease.ParseRecordKey(key); ok {
			t.Errorf("ParseRecordKey(%q) = %d, true; want false", key, id)
		}
	}
}
