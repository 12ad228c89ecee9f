package analytics

import (
	"errors"
	"math/rand/v2"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/dualpath/analytics-go/internal/defaults"
)

// refuseBudget is how many bytes refusing an oversized message may
// allocate: a few times MaxMessageBytes, whatever the size of the input.
const refuseBudget = 8 * MaxMessageBytes

// oversized are messages far over MaxMessageBytes, one for each way the
// encoder could be made to walk them whole: many map members, many slice
// elements, one huge string, each where the encoder meets it.
func oversized() []struct {
	name string
	msg  Message
} {
	// One map of 10^6 members serves every field that takes a map.
	many := make(map[string]any, 1_000_000)
	ints := make(map[string]int, 1_000_000)
	for i := range 1_000_000 {
		many[strconv.Itoa(i)] = i
		ints[strconv.Itoa(i)] = i
	}
	huge := strings.Repeat("x", 50<<20)
	type label string
	// Many values that each fit but together do not: encoding stops at
	// the limit, not at the end.
	medium := make(Properties, 500)
	for i := range 500 {
		medium["k"+strconv.Itoa(i)] = strings.Repeat("v", 2000)
	}
	return []struct {
		name string
		msg  Message
	}{
		{"10^6 properties", Track{UserId: "u", Event: "E", Properties: many}},
		{"10^6 traits", Identify{UserId: "u", Traits: many}},
		{"10^6 integrations", Alias{UserId: "u", PreviousId: "p", Integrations: many}},
		{"10^6 members nested", Track{UserId: "u", Event: "E", Properties: Properties{"m": many}}},
		{"10^6 elements", Track{UserId: "u", Event: "E", Properties: Properties{"l": make([]any, 1_000_000)}}},
		{"10^6 strings", Track{UserId: "u", Event: "E", Properties: Properties{"l": make([]string, 1_000_000)}}},
		{"10^6 context traits", Track{UserId: "u", Event: "E", Context: &Context{Traits: many}}},
		{"10^6 context extra", Track{UserId: "u", Event: "E", Context: &Context{Extra: many}}},
		{"50 MiB property", Track{UserId: "u", Event: "E", Properties: Properties{"s": huge}}},
		{"50 MiB key", Track{UserId: "u", Event: "E", Properties: Properties{huge: 1}}},
		{"50 MiB userId", Track{UserId: huge, Event: "E"}},
		{"50 MiB context extra", Track{UserId: "u", Event: "E", Context: &Context{Extra: map[string]any{"s": huge}}}},
		{"500 values of 2 KB", Page{UserId: "u", Properties: medium}},
		// Types encoding/json writes: refused from their length too.
		{"10^6 map[string]int", Track{UserId: "u", Event: "E", Properties: Properties{"m": ints}}},
		{"10^6 []int", Track{UserId: "u", Event: "E", Properties: Properties{"l": make([]int, 1_000_000)}}},
		{"10 MiB []byte", Track{UserId: "u", Event: "E", Properties: Properties{"b": []byte(huge[:10<<20])}}},
		{"50 MiB named string", Track{UserId: "u", Event: "E", Properties: Properties{"s": label(huge)}}},
	}
}

// TestOversizedRefusedAtTheLimit: refusing a message over MaxMessageBytes
// costs in proportion to the limit, not to the message. It counts the bytes
// one Enqueue allocates; the inputs would take megabytes to encode whole.
func TestOversizedRefusedAtTheLimit(t *testing.T) {
	tests := oversized()
	e := newEnv(t, newAPI())
	for _, tt := range tests {
		var err error
		allocated := allocatedBy(func() { err = e.client.Enqueue(tt.msg) })
		assert.ErrorIs(t, err, ErrMessageTooLarge, "%s: Enqueue", tt.name)
		assert.LessOrEqual(t, allocated, uint64(refuseBudget), "%s: bytes allocated to refuse it", tt.name)
	}
	e.close()
	st := e.client.Stats()
	assert.Equal(t, int64(len(tests)), st.Rejected.TooLarge, "events rejected as too large")
	assert.Zero(t, st.Rejected.Invalid, "events rejected as invalid")
	assert.Zero(t, st.Delivered, "events delivered")
	ok, failed := e.out.Calls()
	assert.Zero(t, ok, "Success callbacks for refused messages")
	assert.Zero(t, failed, "Failure callbacks for refused messages")
}

// allocatedBy returns the bytes the program allocated while f ran.
func allocatedBy(f func()) uint64 {
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	f()
	runtime.ReadMemStats(&after)
	return after.TotalAlloc - before.TotalAlloc
}

// TestLimitBoundsRefuseNothingThatFits: the lower bounds that refuse early
// never refuse a message of exactly MaxMessageBytes, even when the bounded
// value is its last member and only closing braces follow: a slice of
// zeros (2 bytes an element, as the bound counts), a string (its length
// plus quotes), a map, a slice encoding/json writes.
func TestLimitBoundsRefuseNothingThatFits(t *testing.T) {
	zeros := make([]any, 5_000)
	for i := range zeros {
		zeros[i] = 0
	}
	members := make(map[string]any, 1_000)
	for i := range 1_000 {
		members[strconv.Itoa(1000+i)] = 0
	}
	tests := []struct {
		name string
		last any // written last, after the padding
	}{
		{"[]any of zeros", zeros},
		{"string", strings.Repeat("s", 5_000)},
		{"map", members},
		{"[]int", make([]int, 5_000)},
	}
	for _, tt := range tests {
		// "a" sorts before "z": the padding is written first, and the
		// bounded value meets a buffer already close to the limit.
		msg := func(pad int) Message {
			return Track{UserId: "u", Event: "E", MessageId: "m",
				Properties: Properties{"a": strings.Repeat("x", pad), "z": tt.last}}
		}
		base, err := encodeMessage(msg(0), "", fixedTime)
		require.NoError(t, err, tt.name)
		exact := MaxMessageBytes - len(base)
		b, err := encodeMessage(msg(exact), "", fixedTime)
		assert.NoError(t, err, "%s: encoding a message of exactly MaxMessageBytes", tt.name)
		assert.Equal(t, MaxMessageBytes, len(b), "%s: bytes of a message at the limit", tt.name)
		_, err = encodeMessage(msg(exact+1), "", fixedTime)
		assert.ErrorIs(t, err, ErrMessageTooLarge, "%s: encoding a message of MaxMessageBytes+1", tt.name)
	}
}

// count is a long slice that writes itself as its length.
type count []int

func (c count) MarshalJSON() ([]byte, error) { return []byte(strconv.Itoa(len(c))), nil }

// TestMarshalerLengthBoundsNothing: a value whose own method writes its
// JSON is measured by what it writes, never refused for its length.
func TestMarshalerLengthBoundsNothing(t *testing.T) {
	b, err := encodeMessage(Track{UserId: "u", Event: "E", Properties: Properties{"n": make(count, 1_000_000)}}, "id", fixedTime)
	require.NoError(t, err)
	assert.Contains(t, string(b), `"n":1000000`, "the method's output")
}

// BenchmarkRefuseOversized is the cost of refusing each oversized message:
// about the same for all, however large.
func BenchmarkRefuseOversized(b *testing.B) {
	for _, tt := range oversized() {
		b.Run(strings.ReplaceAll(tt.name, " ", "_"), func(b *testing.B) {
			c := quietClient(b)
			defer c.Close()
			b.ReportAllocs()
			for b.Loop() {
				if err := c.Enqueue(tt.msg); !errors.Is(err, ErrMessageTooLarge) {
					b.Fatal(err)
				}
			}
		})
	}
}

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

// keyOrder orders keys as strings compare, whatever they share: empty
// keys, common first bytes, prefixes of each other, bytes above 0x7f and
// zero bytes, keys of every length around the 4 and 8 bytes its prefixes
// take.
func TestKeyOrderOrdersByKey(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	pieces := []string{"", "a", "ab", "b", "ba", "\xff", "é", "A", "~", "\x00", "abcd", "abcdefg", "catego"}
	for range 20_000 {
		n := r.IntN(smallMap + 1)
		seen := map[string]bool{}
		var p []pair
		for len(p) < n {
			k := pieces[r.IntN(len(pieces))] + pieces[r.IntN(len(pieces))]
			if !seen[k] {
				seen[k] = true
				p = append(p, pair{k: k})
			}
		}
		var order [smallMap]uint8
		keyOrder(p, &order)
		for i := 1; i < n; i++ {
			require.Less(t, p[order[i-1]].k, p[order[i]].k, "keys %d and %d of %v in order %v", i-1, i, p, order[:n])
		}
	}
}

// timeCache writes what time's own formatting writes, through runs of
// times in one second, across seconds and zones, and for the years it
// hands to time because they do not fit four digits.
func TestTimeCacheMatchesTheLayout(t *testing.T) {
	var c timeCache
	base := time.Date(2026, 11, 29, 23, 59, 58, 0, time.UTC)
	var times []time.Time
	for ms := 0; ms < 3000; ms += 7 {
		times = append(times, base.Add(time.Duration(ms)*time.Millisecond+123*time.Microsecond))
	}
	times = append(times,
		base.In(time.FixedZone("X", -7200)), // the same second, in another zone
		time.Date(2024, 2, 29, 1, 2, 3, 4_000_000, time.FixedZone("Y", 19800)),
		time.Date(9999, 12, 31, 23, 59, 59, 999_999_999, time.UTC),
		time.Date(10000, 1, 1, 0, 0, 0, 5_000_000, time.UTC),
		time.Date(-5, 1, 1, 0, 0, 0, 0, time.UTC),
		base, base.Add(-time.Second), time.Date(1, 1, 1, 0, 0, 0, 0, time.UTC), time.Now())
	for _, tm := range times {
		require.Equal(t, tm.UTC().Format(defaults.TimeLayout), string(c.append(nil, tm)), "timeCache.append(%v)", tm)
	}
}
