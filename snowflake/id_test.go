package snowflake

import (
	"encoding/json"
	"errors"
	"math"
	"slices"
	"strconv"
	"testing"
)

func TestParse(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want ID
		ok   bool
	}{
		{"0", 0, true},
		{"1", 1, true},
		{"1234567890123456789", 1234567890123456789, true},
		{strconv.FormatInt(math.MaxInt64, 10), math.MaxInt64, true},
		{"9223372036854775808", 0, false}, // MaxInt64+1
		{"99999999999999999999", 0, false},
		{"", 0, false},
		{"-1", 0, false},
		{"+1", 0, false},
		{"01", 0, false},
		{"00", 0, false},
		{" 1", 0, false},
		{"1 ", 0, false},
		{"1_000", 0, false},
		{"0x10", 0, false},
		{"1e3", 0, false},
		{"١", 0, false}, // a non-ASCII digit
	} {
		got, err := Parse(tc.in)
		if tc.ok != (err == nil) || got != tc.want {
			t.Errorf("Parse(%q) = %d, %v; want %d, ok=%v", tc.in, got, err, tc.want, tc.ok)
		}
		if err != nil && !errors.Is(err, ErrInvalidID) {
			t.Errorf("Parse(%q) error %v does not match ErrInvalidID", tc.in, err)
		}
		if err == nil && got.String() != tc.in {
			t.Errorf("Parse(%q).String() = %q", tc.in, got.String())
		}
	}
}

func TestJSON(t *testing.T) {
	type msg struct {
		ID  ID   `json:"id"`
		IDs []ID `json:"ids"`
	}
	in := msg{ID: 1<<53 + 1, IDs: []ID{0, math.MaxInt64}}
	b, err := json.Marshal(in)
	if err != nil {
		t.Fatal(err)
	}
	if want := `{"id":"9007199254740993","ids":["0","9223372036854775807"]}`; string(b) != want {
		t.Fatalf("Marshal = %s, want %s", b, want)
	}
	var out msg
	if err := json.Unmarshal(b, &out); err != nil || out.ID != in.ID || !slices.Equal(out.IDs, in.IDs) {
		t.Fatalf("round trip = %+v, %v", out, err)
	}

	// Numbers are accepted too (from clients that never had the problem).
	if err := json.Unmarshal([]byte(`{"id":9007199254740993,"ids":[1,"2"]}`), &out); err != nil ||
		out.ID != 1<<53+1 || !slices.Equal(out.IDs, []ID{1, 2}) {
		t.Fatalf("numbers: %+v, %v", out, err)
	}
	// null leaves the value alone.
	out.ID = 42
	if err := json.Unmarshal([]byte(`{"id":null}`), &out); err != nil || out.ID != 42 {
		t.Fatalf("null: %+v, %v", out, err)
	}
	for _, bad := range []string{`"-1"`, `-1`, `1.5`, `1e3`, `""`, `"x"`, `true`, `"1`, `"01"`, `{}`, `"null"`} {
		var id ID
		err := json.Unmarshal([]byte(bad), &id)
		if err == nil {
			t.Errorf("Unmarshal(%s) succeeded: %d", bad, id)
		}
	}
	if _, err := json.Marshal(ID(-1)); err == nil {
		t.Error("Marshal(-1) succeeded")
	}

	// As a map key, the text form.
	m := map[ID]int{12: 1}
	b, err = json.Marshal(m)
	if err != nil || string(b) != `{"12":1}` {
		t.Fatalf("map: %s, %v", b, err)
	}
	var m2 map[ID]int
	if err := json.Unmarshal(b, &m2); err != nil || m2[12] != 1 {
		t.Fatalf("map round trip: %v, %v", m2, err)
	}
	if _, err := ID(-1).MarshalText(); err == nil {
		t.Error("MarshalText(-1) succeeded")
	}
}

func TestRange(t *testing.T) {
	r := Range{First: 100, N: 3}
	if r.Last() != 102 || r.At(0) != 100 || r.At(2) != 102 {
		t.Fatalf("Last %d At(0) %d At(2) %d", r.Last(), r.At(0), r.At(2))
	}
	if !r.Contains(101) || r.Contains(99) || r.Contains(103) {
		t.Fatal("Contains")
	}
	if got := slices.Collect(r.All()); !slices.Equal(got, []ID{100, 101, 102}) {
		t.Fatalf("All = %v", got)
	}
	for id := range r.All() {
		if id == 101 {
			break // stopping early must be fine
		}
	}
	if got := r.AppendTo([]ID{1}); !slices.Equal(got, []ID{1, 100, 101, 102}) {
		t.Fatalf("AppendTo = %v", got)
	}
	if got := (Range{}).AppendTo(nil); len(got) != 0 {
		t.Fatalf("empty AppendTo = %v", got)
	}
	// A range ending at the largest ID (the last millisecond of a layout, the
	// highest node, the last sequence number): First+N overflows.
	top := Range{First: math.MaxInt64 - 2, N: 3}
	want := []ID{math.MaxInt64 - 2, math.MaxInt64 - 1, math.MaxInt64}
	if got := slices.Collect(top.All()); !slices.Equal(got, want) {
		t.Fatalf("All up to MaxInt64 = %v", got)
	}
	if got := top.AppendTo(nil); !slices.Equal(got, want) {
		t.Fatalf("AppendTo up to MaxInt64 = %v", got)
	}
	if top.Last() != math.MaxInt64 || !top.Contains(math.MaxInt64) {
		t.Fatalf("Last %d, Contains(MaxInt64) %v", top.Last(), top.Contains(math.MaxInt64))
	}
	defer func() {
		if recover() == nil {
			t.Fatal("At(3) did not panic")
		}
	}()
	r.At(3)
}
