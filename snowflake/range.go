package snowflake

import (
	"iter"
	"slices"
)

// A Range is a batch of N consecutive IDs, First to First+N-1, as NextN
// returns them. They share one timestamp and node ID and have consecutive
// sequence numbers, so they are consecutive integers: a batch is two numbers,
// whatever its size.
type Range struct {
	// First is the lowest ID of the range.
	First ID
	// N is the number of IDs in the range; at least 1 for a range from NextN.
	N int
}

// Last returns the highest ID of r, First+N-1.
func (r Range) Last() ID { return r.First + ID(r.N) - 1 }

// At returns the i-th ID of r, First+i. It panics unless 0 <= i < N.
func (r Range) At(i int) ID {
	if i < 0 || i >= r.N {
		panic("snowflake: Range.At index out of range")
	}
	return r.First + ID(i)
}

// Contains reports whether id is in r.
func (r Range) Contains(id ID) bool { return id >= r.First && id-r.First < ID(r.N) }

// All returns an iterator over the IDs of r, in increasing order.
func (r Range) All() iter.Seq[ID] {
	return func(yield func(ID) bool) {
		for i := range ID(max(r.N, 0)) { // not id < First+N: it overflows at the last ID
			if !yield(r.First + i) {
				return
			}
		}
	}
}

// AppendTo appends the IDs of r to dst, in increasing order, and returns the
// extended slice.
func (r Range) AppendTo(dst []ID) []ID {
	dst = slices.Grow(dst, max(r.N, 0))
	for i := range ID(max(r.N, 0)) {
		dst = append(dst, r.First+i)
	}
	return dst
}
