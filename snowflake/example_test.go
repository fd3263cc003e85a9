package snowflake_test

import (
	"encoding/json"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/nodeid/nodeid/snowflake"
)

func Example() {
	cfg := snowflake.DefaultConfig()
	cfg.NodeID = 42
	g, err := snowflake.New(cfg)
	if err != nil {
		panic(err)
	}
	id, err := g.Next()
	if err != nil {
		panic(err)
	}
	fmt.Println(id.NodeID(), id.Seq())
	// Output: 42 0
}

// lease stands for the lease of a node ID (nodeid's Claim).
type lease struct {
	valid    atomic.Bool
	reserved atomic.Int64 // reservedUntilMs of the last successful write
}

func (l *lease) Valid() bool        { return l.valid.Load() }
func (l *lease) Reservation() int64 { return l.reserved.Load() }

// A generator fed by a lease: the fence, the floor (the reservation of the
// lease taken over) and the reservation, then the release order: stop, and
// release with the last timestamp issued.
func Example_lease() {
	now := time.Now().UnixMilli()
	l := &lease{}
	l.valid.Store(true)
	l.reserved.Store(now + 15_000) // renewals raise it
	floor := now - 2_000           // the predecessor's reservedUntilMs

	cfg := snowflake.DefaultConfig()
	cfg.NodeID = 5
	cfg.Fence = l
	cfg.FloorMs = floor
	cfg.Reservation = l.Reservation
	g, err := snowflake.New(cfg)
	if err != nil {
		panic(err)
	}
	id, _ := g.Next()
	fmt.Println("above the floor:", id.Time().UnixMilli() > floor)

	l.valid.Store(false) // the lease is lost
	_, err = g.Next()
	fmt.Println(err)

	last := g.Stop() // for the release: lower reservedUntilMs to this
	fmt.Println("release with the last timestamp:", last == id.Time().UnixMilli())
	// Output:
	// above the floor: true
	// snowflake: fenced: the node ID is no longer held
	// release with the last timestamp: true
}

func ExampleGenerator_NextN() {
	cfg := snowflake.DefaultConfig()
	cfg.NodeID = 1
	g, err := snowflake.New(cfg)
	if err != nil {
		panic(err)
	}
	r, err := g.NextN(100) // may be shorter when the millisecond runs out
	if err != nil {
		panic(err)
	}
	fmt.Println(r.N, r.Last()-r.First)
	n := 0
	for id := range r.All() {
		_ = id
		n++
	}
	fmt.Println(n)
	// Output:
	// 100 99
	// 100
}

func ExampleParse() {
	id, err := snowflake.Parse("1234567890123456789")
	if err != nil {
		panic(err)
	}
	fmt.Println(id.Time().UTC().Format(time.RFC3339Nano), id.NodeID(), id.Seq())
	_, err = snowflake.Parse("0123")
	fmt.Println(err)
	// Output:
	// 2034-04-30T18:12:02.167Z 664 277
	// snowflake: invalid ID "0123": leading zero
}

func ExampleID_MarshalJSON() {
	b, _ := json.Marshal(map[string]snowflake.ID{"id": 9007199254740993})
	fmt.Println(string(b))

	var v struct{ A, B snowflake.ID }
	_ = json.Unmarshal([]byte(`{"A":"9007199254740993","B":12}`), &v)
	fmt.Println(v.A, v.B)
	// Output:
	// {"id":"9007199254740993"}
	// 9007199254740993 12
}

func ExampleLayout_Decode() {
	l := snowflake.Layout{TimestampBits: 41, NodeBits: 1, SequenceBits: 21, EpochMs: snowflake.DefaultEpochMs}
	id, _ := l.Compose(snowflake.Parts{TimeMs: snowflake.DefaultEpochMs + 1500, NodeID: 1, Seq: 7})
	p, _ := l.Decode(id)
	fmt.Println(id, p.TimeMs-snowflake.DefaultEpochMs, p.NodeID, p.Seq)
	fmt.Println(l)
	// Output:
	// 6293553159 1500 1 7
	// 41/1/21 epoch 2025-01-01T00:00:00.000Z
}

// A CoarseClock makes Next cheaper where reading the clock is slow, for
// timestamps up to a millisecond late. Stop it after the generator's last use.
func ExampleNewCoarseClock() {
	clk := snowflake.NewCoarseClock(time.Millisecond)
	defer clk.Stop()

	cfg := snowflake.DefaultConfig()
	cfg.NodeID = 3
	cfg.Clock = clk
	g, err := snowflake.New(cfg)
	if err != nil {
		panic(err)
	}
	a, _ := g.Next()
	b, _ := g.Next()
	fmt.Println(b > a, b.NodeID())
	// Output: true 3
}
