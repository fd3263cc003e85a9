// Package bench compares nodeid's snowflake generator with
// github.com/bwmarrin/snowflake and github.com/sony/sonyflake/v2. It is a
// separate module so that the main module does not depend on them. See
// README.md for the command and the results.
package bench

import (
	"context"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	bw "github.com/bwmarrin/snowflake"
	"github.com/nodeid/nodeid/lease/storetest"
	"github.com/nodeid/nodeid/nodeid"
	"github.com/nodeid/nodeid/snowflake"
	"github.com/sony/sonyflake/v2"
)

// The two layouts: the default 41/10/12, throttled at 4096 IDs per
// millisecond, and a wide-sequence 41/1/21 (2,097,152 per millisecond) that no
// generator here reaches, to measure the cost of one ID.
var (
	defaultLayout = snowflake.DefaultLayout()
	wideLayout    = snowflake.Layout{TimestampBits: 41, NodeBits: 1, SequenceBits: 21, EpochMs: snowflake.DefaultEpochMs}
)

// sink keeps the compiler from discarding IDs.
var sink atomic.Int64

// cpuTime returns the process's user+system CPU time (all threads).
func cpuTime(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// measure runs loop (serial, or under b.RunParallel) and reports IDs/s and
// the cores the process used meanwhile.
func measure(b *testing.B, parallel bool, next func() int64) {
	b.ReportAllocs()
	cpu0 := cpuTime(b)
	b.ResetTimer()
	if parallel {
		b.RunParallel(func(pb *testing.PB) {
			var x int64
			for pb.Next() {
				x ^= next()
			}
			sink.Add(x)
		})
	} else {
		var x int64
		for i := 0; i < b.N; i++ {
			x ^= next()
		}
		sink.Add(x)
	}
	b.StopTimer()
	cpu := cpuTime(b) - cpu0
	el := b.Elapsed()
	b.ReportMetric(float64(b.N)/el.Seconds(), "ids/s")
	b.ReportMetric(float64(cpu)/float64(el), "cores")
}

// bwNode returns a bwmarrin node for l. bwmarrin takes its layout from the
// package variables NodeBits and StepBits when a node is created (the node
// keeps a copy); they are restored at once, so no other node sees them.
func bwNode(b *testing.B, l snowflake.Layout) *bw.Node {
	defer func(nb, sb uint8, ep int64) { bw.NodeBits, bw.StepBits, bw.Epoch = nb, sb, ep }(bw.NodeBits, bw.StepBits, bw.Epoch)
	bw.NodeBits, bw.StepBits, bw.Epoch = uint8(l.NodeBits), uint8(l.SequenceBits), l.EpochMs
	n, err := bw.NewNode(1)
	if err != nil {
		b.Fatal(err)
	}
	return n
}

// sonyGen returns a sonyflake with l's split and millisecond time units.
func sonyGen(b *testing.B, l snowflake.Layout) *sonyflake.Sonyflake {
	sf, err := sonyflake.New(sonyflake.Settings{
		BitsSequence:  l.SequenceBits,
		BitsMachineID: l.NodeBits,
		TimeUnit:      time.Millisecond,
		StartTime:     time.UnixMilli(l.EpochMs),
		MachineID:     func() (int, error) { return 1, nil },
	})
	if err != nil {
		b.Fatal(err)
	}
	return sf
}

// heldClaim returns a Claim as node holds one: taken by a nodeid.Provider
// (on its default, system Clock) from an in-memory store, with a lease long
// enough (60 s, renewed every 20 s) that no benchmark sees it fall. It is
// closed when b ends. It returns the claim and its Provider's Clock.
func heldClaim(b *testing.B) (*nodeid.Claim, nodeid.Clock) {
	cfg := nodeid.DefaultConfig()
	cfg.TaskID, cfg.ClusterSize, cfg.LeaseDuration = "bench", 8, 60*time.Second
	p, err := nodeid.New(storetest.NewMemStore(), cfg)
	if err != nil {
		b.Fatal(err)
	}
	c, err := p.Acquire(context.Background())
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = c.Close(context.Background()) })
	return c, p.Config().Clock
}

// claimFence is node's fence of a claim's generator (node.claimFence): the
// claim's Valid behind the node's stop flag, and ValidNow, which hands the
// generator the claim's clock reading (snowflake.ClockedFence).
type claimFence struct {
	stopping atomic.Bool
	claim    *nodeid.Claim
}

func (f *claimFence) Valid() bool { return !f.stopping.Load() && f.claim.Valid() }

func (f *claimFence) ValidNow() (int64, bool) {
	if f.stopping.Load() {
		return 0, false
	}
	return f.claim.ValidNow()
}

// nodeidGen returns a generator for l; with lease set, it has a fence and a
// reservation as it would under a lease (both far in the future).
func nodeidGen(b *testing.B, l snowflake.Layout, lease bool) *snowflake.Generator {
	return nodeidGenClock(b, l, lease, nil)
}

// nodeidCoarseGen returns a generator for l on a CoarseClock of 1 ms, which
// is stopped when b ends.
func nodeidCoarseGen(b *testing.B, l snowflake.Layout) *snowflake.Generator {
	clk := snowflake.NewCoarseClock(time.Millisecond)
	b.Cleanup(clk.Stop)
	return nodeidGenClock(b, l, false, clk)
}

// nodeidValidGen returns a generator for l fenced on a held claim's Valid
// alone (snowflake.FenceFunc, as cmd/nodeid-bench's failover wires it): the
// fence reads the clock and the generator reads it again.
func nodeidValidGen(b *testing.B, l snowflake.Layout) *snowflake.Generator {
	cfg := snowflake.DefaultConfig()
	cfg.Layout, cfg.NodeID = l, 1
	c, clock := heldClaim(b)
	cfg.Fence, cfg.Reservation, cfg.Clock = snowflake.FenceFunc(c.Valid), c.Reservation, nodeid.SnowflakeClock(clock)
	g, err := snowflake.New(cfg)
	if err != nil {
		b.Fatal(err)
	}
	return g
}

func nodeidGenClock(b *testing.B, l snowflake.Layout, lease bool, clk snowflake.Clock) *snowflake.Generator {
	cfg := snowflake.DefaultConfig()
	cfg.Layout = l
	cfg.NodeID = 1
	cfg.Clock = clk
	if lease {
		// As node wires a claim (node.activate): its fence and the node's
		// own stop flag, its reservation, the clock its reservations are
		// stamped with.
		c, clock := heldClaim(b)
		cfg.Fence = &claimFence{claim: c}
		cfg.Reservation = c.Reservation
		cfg.Clock = nodeid.SnowflakeClock(clock)
	}
	g, err := snowflake.New(cfg)
	if err != nil {
		b.Fatal(err)
	}
	return g
}

func nodeidNext(b *testing.B, g *snowflake.Generator) func() int64 {
	return func() int64 {
		id, err := g.Next()
		if err != nil {
			b.Fatal(err)
		}
		return int64(id)
	}
}

func sonyNext(b *testing.B, sf *sonyflake.Sonyflake) func() int64 {
	return func() int64 {
		id, err := sf.NextID()
		if err != nil {
			b.Fatal(err)
		}
		return id
	}
}

// impls lists the generators in the order of the benchstat columns:
// bwmarrin first, the base of every ratio.
func impls(b *testing.B, l snowflake.Layout) []struct {
	name string
	next func() int64
} {
	n := bwNode(b, l)
	return []struct {
		name string
		next func() int64
	}{
		{"bwmarrin", func() int64 { return int64(n.Generate()) }},
		{"sonyflake", sonyNext(b, sonyGen(b, l))},
		{"nodeid", nodeidNext(b, nodeidGen(b, l, false))},
		{"nodeid-coarse", nodeidNext(b, nodeidCoarseGen(b, l))},
		{"nodeid-lease", nodeidNext(b, nodeidGen(b, l, true))},
		{"nodeid-lease-valid", nodeidNext(b, nodeidValidGen(b, l))},
	}
}

// BenchmarkSaturated calls Next as fast as possible on the default layout:
// every generator is throttled at 4096 IDs per millisecond, so this measures
// how close each gets to 4,096,000 IDs/s and how much CPU it burns waiting.
func BenchmarkSaturated(b *testing.B) {
	for _, mode := range []string{"serial", "parallel"} {
		for _, im := range impls(b, defaultLayout) {
			b.Run("mode="+mode+"/impl="+im.name, func(b *testing.B) {
				measure(b, mode == "parallel", im.next)
			})
		}
	}
}

// BenchmarkUnthrottled calls Next on the wide layout, which none reaches the
// limit of: ns/op is the cost of one ID.
func BenchmarkUnthrottled(b *testing.B) {
	for _, mode := range []string{"serial", "parallel"} {
		for _, im := range impls(b, wideLayout) {
			b.Run("mode="+mode+"/impl="+im.name, func(b *testing.B) {
				measure(b, mode == "parallel", im.next)
			})
		}
	}
}

// BenchmarkClock reads the clock as bwmarrin and nodeid's generator do
// (time.Since: the monotonic reading, one vDSO call) and as a claim's fence
// does (time.Now: the real-time and the monotonic readings, two calls): the
// floor under each generator's per-ID cost.
func BenchmarkClock(b *testing.B) {
	start := time.Now()
	b.Run("impl=clock-since", func(b *testing.B) {
		var x int64
		for i := 0; i < b.N; i++ {
			x ^= int64(time.Since(start))
		}
		sink.Add(x)
	})
	b.Run("impl=clock-now", func(b *testing.B) {
		var x int64
		for i := 0; i < b.N; i++ {
			x ^= time.Now().UnixNano()
		}
		sink.Add(x)
	})
}

// BenchmarkBatch takes 4096 IDs per op on the wide layout: with NextN (and
// copies them out, as a server answering a batch request would), and with
// 4096 calls of bwmarrin's Generate for comparison. ns/id is per ID.
func BenchmarkBatch(b *testing.B) {
	const n = 4096
	buf := make([]snowflake.ID, 0, n)
	b.Run("n=4096/impl=bwmarrin", func(b *testing.B) {
		node := bwNode(b, wideLayout)
		ids := 0
		for i := 0; i < b.N; i++ {
			buf = buf[:0]
			for range n {
				buf = append(buf, snowflake.ID(node.Generate()))
			}
			ids += len(buf)
		}
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(ids), "ns/id")
	})
	b.Run("n=4096/impl=nodeid", func(b *testing.B) {
		g := nodeidGen(b, wideLayout, true)
		ids := 0
		for i := 0; i < b.N; i++ {
			buf = buf[:0]
			for len(buf) < n {
				r, err := g.NextN(n - len(buf))
				if err != nil {
					b.Fatal(err)
				}
				buf = r.AppendTo(buf)
			}
			ids += len(buf)
		}
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(ids), "ns/id")
	})
}
