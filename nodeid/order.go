package nodeid

import "hash/fnv"

// visitOrder returns 0..n-1 in this task's order. OrderLowestFirst is 0, 1, 2,
// ... OrderSpread starts at an offset derived from the task identity and steps
// by a stride coprime with n (1 when n < 3), so that tasks starting at once
// neither race for the same first ID nor follow each other round the ring.
func (p *Provider) visitOrder(n int) []int {
	order := make([]int, n)
	offset, stride := 0, 1
	if p.cfg.Order == OrderSpread {
		h := fnv.New64a()
		_, _ = h.Write([]byte(p.cfg.TaskID))
		sum := h.Sum64()
		offset = int(sum % uint64(n))
		if n >= 3 {
			stride = 1 + int((sum>>32)%uint64(n-1))
			for gcd(stride, n) != 1 {
				stride = stride%(n-1) + 1
			}
		}
	}
	for i := range order {
		order[i] = (offset + i*stride) % n
	}
	return order
}

// gcd returns the greatest common divisor of a and b.
func gcd(a, b int) int {
	for b != 0 {
		a, b = b, a%b
	}
	return a
}
