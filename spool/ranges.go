package spool

import (
	"cmp"
	"slices"
)

// ranges is a set of a segment's ordinals, kept as sorted, disjoint spans
// that do not touch: batches end mostly as consecutive runs, so a segment
// of tens of thousands of done records is a span or a few, not a record
// each.
type ranges []span

// span is the ordinals lo to hi-1.
type span struct{ lo, hi uint32 }

// first returns the index of the first span whose hi is at least n: the
// span holding n, the one n touches from below, or the one after n.
func (r ranges) first(n uint32) int {
	i, _ := slices.BinarySearchFunc(r, n, func(sp span, n uint32) int { return cmp.Compare(sp.hi, n) })
	return i
}

// has reports whether n is in the set.
func (r ranges) has(n uint32) bool {
	i := r.first(n)
	// r[i].hi == n touches n without holding it; the next span starts
	// after n, since spans do not touch.
	if i < len(r) && r[i].hi == n {
		i++
	}
	return i < len(r) && r[i].lo <= n
}

// add puts lo to hi-1 in the set and returns how many of them were not in
// it before.
func (r *ranges) add(lo, hi uint32) uint32 {
	if lo >= hi {
		return 0
	}
	i := r.first(lo)
	j := i // spans i to j-1 overlap or touch [lo, hi): one span replaces them
	merged, covered := span{lo, hi}, uint32(0)
	for ; j < len(*r) && (*r)[j].lo <= hi; j++ {
		sp := (*r)[j]
		merged = span{min(merged.lo, sp.lo), max(merged.hi, sp.hi)}
		covered += sp.hi - sp.lo
	}
	*r = slices.Replace(*r, i, j, merged)
	return merged.hi - merged.lo - covered
}
