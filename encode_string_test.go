package analytics

import (
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// naivePlainPrefix is plainPrefix a byte at a time.
func naivePlainPrefix(s string) int {
	i := 0
	for i < len(s) && plain[s[i]] {
		i++
	}
	return i
}

// The word-at-a-time scan finds the same first byte to escape as the byte
// table: every byte value at every place of a word, and random strings
// mixing plain bytes, bytes to escape and UTF-8.
func TestPlainPrefixMatchesTheByteTable(t *testing.T) {
	for pos := range 8 {
		for b := range 256 {
			word := []byte("aaaaaaaaaaaaaaaa")
			word[pos] = byte(b)
			s := string(word)
			require.Equal(t, naivePlainPrefix(s), plainPrefix(s), "byte %#x at %d", b, pos)
		}
	}
	r := rand.New(rand.NewPCG(1, 2))
	alphabet := []string{"a", "Z", "0", " ", "~", "\"", "\\", "\n", "\x00", "\x1f", "\x7f", "é", "\u2028", "\xff"}
	for range 20_000 {
		var sb strings.Builder
		for range r.IntN(40) {
			if r.IntN(8) == 0 {
				sb.WriteString(alphabet[r.IntN(len(alphabet))])
			} else {
				sb.WriteByte(byte('a' + r.IntN(26)))
			}
		}
		s := sb.String()
		require.Equal(t, naivePlainPrefix(s), plainPrefix(s), "%q", s)
	}
}

// sortPairs orders keys as strings compare, whatever they share: empty
// keys, common first bytes, prefixes of each other, bytes above 0x7f.
func TestSortPairsOrdersByKey(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	pieces := []string{"", "a", "ab", "b", "ba", "\xff", "é", "A", "~"}
	for range 5_000 {
		n := r.IntN(20)
		seen := map[string]bool{}
		var p []pair
		for range n {
			k := pieces[r.IntN(len(pieces))] + pieces[r.IntN(len(pieces))]
			if !seen[k] {
				seen[k] = true
				p = append(p, pair{k: k})
			}
		}
		sortPairs(p)
		for i := 1; i < len(p); i++ {
			require.Less(t, p[i-1].k, p[i].k, "keys %d and %d of %v", i-1, i, p)
		}
	}
}
