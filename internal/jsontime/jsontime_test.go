package jsontime

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestAppendMatchesTheLayout(t *testing.T) {
	for _, tm := range []time.Time{
		time.Date(2026, 11, 29, 12, 34, 56, 789_999_999, time.UTC),
		time.Date(1, 1, 1, 0, 0, 0, 0, time.UTC),
		time.Date(9999, 12, 31, 23, 59, 59, 999_000_000, time.FixedZone("X", -7200)),
		time.Date(2024, 2, 29, 1, 2, 3, 4_000_000, time.FixedZone("Y", 19800)),
		time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC),
		time.Date(-5, 1, 1, 0, 0, 0, 0, time.UTC),
		time.Now(),
	} {
		assert.Equal(t, tm.UTC().Format(Layout), string(Append(nil, tm)), "Append(%v)", tm)
	}
}

// Cache writes what Append writes, through runs of times in the same
// second, across seconds, zones and the years Append hands to the time
// package.
func TestCacheMatchesAppend(t *testing.T) {
	var c Cache
	base := time.Date(2026, 11, 29, 23, 59, 58, 0, time.UTC)
	var times []time.Time
	for ms := 0; ms < 3000; ms += 7 {
		times = append(times, base.Add(time.Duration(ms)*time.Millisecond+123*time.Microsecond))
	}
	times = append(times,
		base.In(time.FixedZone("X", -7200)), // the same second, in another zone
		time.Date(10000, 1, 1, 0, 0, 0, 5_000_000, time.UTC),
		time.Date(-5, 1, 1, 0, 0, 0, 0, time.UTC),
		base, base.Add(-time.Second), time.Date(1, 1, 1, 0, 0, 0, 0, time.UTC), time.Now())
	for _, tm := range times {
		require.Equal(t, string(Append(nil, tm)), string(c.Append(nil, tm)), "Cache.Append(%v)", tm)
	}
}
