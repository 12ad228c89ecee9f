package spool

import (
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// ranges against a map of the same ordinals, under random runs.
func TestRanges(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	for round := range 200 {
		var r ranges
		set := map[uint32]bool{}
		for range 30 {
			lo := uint32(rng.IntN(200))
			hi := lo + uint32(rng.IntN(12))
			want := uint32(0)
			for n := lo; n < hi; n++ {
				if !set[n] {
					want++
					set[n] = true
				}
			}
			require.Equal(t, want, r.add(lo, hi), "round %d add(%d, %d) to %v", round, lo, hi, r)
			for i := 1; i < len(r); i++ {
				require.Less(t, r[i-1].hi, r[i].lo, "sorted, disjoint, not touching: %v", r)
			}
		}
		for n := uint32(0); n < 220; n++ {
			assert.Equal(t, set[n], r.has(n), "has(%d) in %v", n, r)
		}
		count := 0
		for _, sp := range r {
			count += int(sp.hi - sp.lo)
		}
		assert.Equal(t, len(set), count)
	}
}
