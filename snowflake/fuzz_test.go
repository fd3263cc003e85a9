package snowflake

import (
	"encoding/json"
	"errors"
	"testing"
)

// FuzzParse: Parse never panics, fails only with ErrInvalidID, and whatever
// it accepts it gives back exactly (the decimal form is canonical).
func FuzzParse(f *testing.F) {
	for _, s := range []string{"0", "1", "4096", "9223372036854775807", "9223372036854775808",
		"18446744073709551616", "-1", "+1", "01", "", " 1", "1e3", "0x1f", "１"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		id, err := Parse(s)
		if err != nil {
			if !errors.Is(err, ErrInvalidID) {
				t.Fatalf("Parse(%q): %v does not match ErrInvalidID", s, err)
			}
			return
		}
		if id < 0 {
			t.Fatalf("Parse(%q) = %d, negative", s, id)
		}
		if id.String() != s {
			t.Fatalf("Parse(%q).String() = %q", s, id.String())
		}
		if b, err := id.MarshalText(); err != nil || string(b) != s {
			t.Fatalf("MarshalText = %q, %v", b, err)
		}
		p, err := DefaultLayout().Parse(s)
		if err != nil || p.TimeMs != id.Time().UnixMilli() || p.NodeID != id.NodeID() || p.Seq != id.Seq() {
			t.Fatalf("Layout.Parse(%q) = %+v, %v; the ID methods say %v/%d/%d", s, p, err, id.Time(), id.NodeID(), id.Seq())
		}
	})
}

// FuzzDecode: under any layout, Decode never panics, and Compose gives back
// exactly the ID that Decode split.
func FuzzDecode(f *testing.F) {
	f.Add(int64(0), uint8(41), uint8(10), int64(DefaultEpochMs))
	f.Add(int64(1)<<62, uint8(41), uint8(10), int64(0))
	f.Add(int64(-1), uint8(41), uint8(10), int64(DefaultEpochMs))
	f.Add(int64(1<<63-1), uint8(62), uint8(0), int64(0))
	f.Add(int64(1<<63-1), uint8(62), uint8(0), int64(maxUnixMs))
	f.Add(int64(123456789), uint8(32), uint8(30), int64(1))
	f.Add(int64(123456789), uint8(30), uint8(30), int64(1))
	f.Fuzz(func(t *testing.T, v int64, tb, nb uint8, epoch int64) {
		l := Layout{TimestampBits: int(tb), NodeBits: int(nb), SequenceBits: 63 - int(tb) - int(nb), EpochMs: epoch}
		p, err := l.Decode(ID(v))
		if err != nil {
			if !errors.Is(err, ErrInvalidID) && !errors.Is(err, ErrInvalidLayout) {
				t.Fatalf("Decode(%d) under %+v: unexpected error %v", v, l, err)
			}
			if l.Validate() == nil && v >= 0 && int64(v)>>(l.NodeBits+l.SequenceBits) <= maxUnixMs-epoch {
				t.Fatalf("Decode(%d) under valid %+v failed: %v", v, l, err)
			}
			return
		}
		id, err := l.Compose(p)
		if err != nil || id != ID(v) {
			t.Fatalf("Compose(Decode(%d)) under %+v = %d, %v (parts %+v)", v, l, id, err, p)
		}
		if l == DefaultLayout() && (p.Time() != ID(v).Time() || p.NodeID != ID(v).NodeID() || p.Seq != ID(v).Seq()) {
			t.Fatalf("ID methods disagree with Decode for %d", v)
		}
	})
}

// FuzzJSON: unmarshalling never panics, and an ID that unmarshals marshals
// to the canonical string and back to the same ID.
func FuzzJSON(f *testing.F) {
	for _, s := range []string{`"123"`, `123`, `0`, `"0"`, `null`, `"null"`, `"-1"`, `-1`, `1.0`, `1e3`,
		`"9223372036854775807"`, `9223372036854775808`, `""`, `"`, `"\u0031"`, `[1]`, `{"id":"1"}`, ` "7" `} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		var id ID
		if err := json.Unmarshal(data, &id); err != nil {
			return
		}
		b, err := json.Marshal(id)
		if err != nil {
			t.Fatalf("Marshal(%d) after Unmarshal(%q): %v", id, data, err)
		}
		if want := `"` + id.String() + `"`; string(b) != want {
			t.Fatalf("Marshal(%d) = %s, want %s", id, b, want)
		}
		var back ID
		if err := json.Unmarshal(b, &back); err != nil || back != id {
			t.Fatalf("round trip of %d: %d, %v", id, back, err)
		}
	})
}
