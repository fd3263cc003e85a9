package snowflake

import (
	"testing"
	"time"
)

// Quick in-package benchmarks for the hot path; the comparison with other
// generators lives in the bench module (../bench).

func benchGen(b *testing.B) *Generator {
	cfg := DefaultConfig()
	cfg.Layout = Layout{TimestampBits: 41, NodeBits: 1, SequenceBits: 21, EpochMs: DefaultEpochMs}
	g, err := New(cfg)
	if err != nil {
		b.Fatal(err)
	}
	return g
}

func BenchmarkNext(b *testing.B) {
	g := benchGen(b)
	for b.Loop() {
		if _, err := g.Next(); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkNextN4096(b *testing.B) {
	g := benchGen(b)
	for b.Loop() {
		if _, err := g.NextN(4096); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkNextCoarseClock(b *testing.B) {
	clk := NewCoarseClock(time.Millisecond)
	defer clk.Stop()
	cfg := DefaultConfig()
	cfg.Layout = Layout{TimestampBits: 41, NodeBits: 1, SequenceBits: 21, EpochMs: DefaultEpochMs}
	cfg.Clock = clk
	g, err := New(cfg)
	if err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		if _, err := g.Next(); err != nil {
			b.Fatal(err)
		}
	}
}
