package snowflake

import (
	"slices"
	"sync"
	"testing"
	"time"
)

// Quick in-package benchmarks for the hot path; the comparison with other
// generators lives in the bench module (../bench).

// wide is a layout whose 2^21 IDs per millisecond no benchmark reaches.
var wide = Layout{TimestampBits: 41, NodeBits: 1, SequenceBits: 21, EpochMs: DefaultEpochMs}

// benchGen returns a generator on the wide layout and clk (nil: the default).
func benchGen(b *testing.B, clk Clock) *Generator {
	cfg := DefaultConfig()
	cfg.Layout = wide
	cfg.Clock = clk
	g, err := New(cfg)
	if err != nil {
		b.Fatal(err)
	}
	return g
}

// coarseClock returns a 1 ms CoarseClock that is stopped when b ends.
func coarseClock(b *testing.B) *CoarseClock {
	clk := NewCoarseClock(time.Millisecond)
	b.Cleanup(clk.Stop)
	return clk
}

func benchNext(b *testing.B, g *Generator) {
	for b.Loop() {
		if _, err := g.Next(); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkNext(b *testing.B) { benchNext(b, benchGen(b, nil)) }

func BenchmarkNextCoarseClock(b *testing.B) { benchNext(b, benchGen(b, coarseClock(b))) }

func BenchmarkNextN4096(b *testing.B) {
	g := benchGen(b, nil)
	for b.Loop() {
		if _, err := g.NextN(4096); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkNextCoarseClockLag issues IDs from GOMAXPROCS goroutines on a
// CoarseClock, so that every processor is busy and the clock's goroutine
// must wait for one, and reports how far the IDs' timestamps are behind the
// precise clock read right after the call (every 256th call), in ms.
func BenchmarkNextCoarseClockLag(b *testing.B) {
	clk := coarseClock(b)
	g := benchGen(b, clk)
	var mu sync.Mutex
	var lags []int64
	b.RunParallel(func(pb *testing.PB) {
		var local []int64
		for i := 0; pb.Next(); i++ {
			id, err := g.Next()
			if err != nil {
				b.Error(err)
				return
			}
			if i%256 == 0 {
				p, _ := wide.Decode(id)
				local = append(local, clk.base.Now().UnixMilli()-p.TimeMs)
			}
		}
		mu.Lock()
		lags = append(lags, local...)
		mu.Unlock()
	})
	slices.Sort(lags)
	if n := len(lags); n > 0 {
		b.ReportMetric(float64(lags[n*99/100]), "lag-p99-ms")
		b.ReportMetric(float64(lags[n-1]), "lag-max-ms")
	}
}
