package snowflake

import (
	"errors"
	"testing"
	"time"
)

// t0 is an arbitrary instant after the default epoch, in Unix ms.
const t0 = DefaultEpochMs + 1_000_000

func mustDecode(t *testing.T, l Layout, id ID) Parts {
	t.Helper()
	p, err := l.Decode(id)
	if err != nil {
		t.Fatalf("Decode(%d): %v", id, err)
	}
	return p
}

func TestLayoutValidate(t *testing.T) {
	for _, tc := range []struct {
		name string
		l    Layout
		ok   bool
	}{
		{"default", DefaultLayout(), true},
		{"wide sequence", Layout{41, 1, 21, DefaultEpochMs}, true},
		{"single node", Layout{41, 0, 22, DefaultEpochMs}, true},
		{"shortest timestamp", Layout{32, 10, 21, 0}, true},
		{"zero", Layout{}, false},
		{"sum 64", Layout{42, 10, 12, DefaultEpochMs}, false},
		{"sum 62", Layout{40, 10, 12, DefaultEpochMs}, false},
		{"timestamp too short", Layout{31, 10, 22, DefaultEpochMs}, false},
		{"no sequence", Layout{43, 20, 0, DefaultEpochMs}, false},
		{"negative node bits", Layout{52, -1, 12, DefaultEpochMs}, false},
		{"negative epoch", Layout{41, 10, 12, -1}, false},
		{"epoch past 2262", Layout{41, 10, 12, maxUnixMs + 1}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.l.Validate()
			if tc.ok != (err == nil) {
				t.Fatalf("Validate(%+v) = %v, want ok=%v", tc.l, err, tc.ok)
			}
			if err != nil && !errors.Is(err, ErrInvalidLayout) {
				t.Fatalf("error %v does not match ErrInvalidLayout", err)
			}
		})
	}
}

func TestLayoutLimits(t *testing.T) {
	l := DefaultLayout()
	if l.MaxNodeID() != 1023 || l.MaxSequence() != 4095 {
		t.Fatalf("MaxNodeID %d, MaxSequence %d", l.MaxNodeID(), l.MaxSequence())
	}
	if got := time.UnixMilli(l.MaxTimeMs()).UTC().Year(); got != 2094 {
		t.Fatalf("default layout ends in %d, want 2094", got)
	}
	if got, want := l.String(), "41/10/12 epoch 2025-01-01T00:00:00.000Z"; got != want {
		t.Fatalf("String() = %q, want %q", got, want)
	}
	long := Layout{62, 0, 1, 0}
	if long.MaxTimeMs() != maxUnixMs {
		t.Fatalf("a 62-bit timestamp is capped at %d, got %d", maxUnixMs, long.MaxTimeMs())
	}
}

func TestComposeDecode(t *testing.T) {
	l := DefaultLayout()
	p := Parts{TimeMs: t0, NodeID: 1023, Seq: 4095}
	id, err := l.Compose(p)
	if err != nil {
		t.Fatal(err)
	}
	if want := ID((t0-DefaultEpochMs)<<22 | 1023<<12 | 4095); id != want {
		t.Fatalf("Compose = %d, want %d", id, want)
	}
	if got := mustDecode(t, l, id); got != p {
		t.Fatalf("Decode = %+v, want %+v", got, p)
	}
	if got, _ := Decode(id); got != p {
		t.Fatalf("package Decode = %+v, want %+v", got, p)
	}
	if id.Time() != p.Time() || id.NodeID() != 1023 || id.Seq() != 4095 {
		t.Fatalf("ID methods: %v %d %d", id.Time(), id.NodeID(), id.Seq())
	}
	got, err := l.Parse(id.String())
	if err != nil || got != p {
		t.Fatalf("Layout.Parse = %+v, %v", got, err)
	}

	for _, bad := range []Parts{
		{TimeMs: DefaultEpochMs - 1},
		{TimeMs: l.MaxTimeMs() + 1},
		{TimeMs: t0, NodeID: 1024},
		{TimeMs: t0, NodeID: -1},
		{TimeMs: t0, Seq: 4096},
		{TimeMs: t0, Seq: -1},
	} {
		if _, err := l.Compose(bad); !errors.Is(err, ErrInvalidID) {
			t.Errorf("Compose(%+v) = %v, want ErrInvalidID", bad, err)
		}
	}
	if _, err := l.Decode(-1); !errors.Is(err, ErrInvalidID) {
		t.Errorf("Decode(-1) = %v, want ErrInvalidID", err)
	}
	if _, err := (Layout{}).Decode(1); !errors.Is(err, ErrInvalidLayout) {
		t.Errorf("Decode on the zero layout = %v, want ErrInvalidLayout", err)
	}
	if _, err := (Layout{}).Compose(p); !errors.Is(err, ErrInvalidLayout) {
		t.Errorf("Compose on the zero layout = %v, want ErrInvalidLayout", err)
	}
	if _, err := l.Parse("x"); !errors.Is(err, ErrInvalidID) {
		t.Errorf("Layout.Parse(x) = %v, want ErrInvalidID", err)
	}
}
