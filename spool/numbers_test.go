package spool

import (
	"math"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The segment numbered math.MaxUint64 - 1 is followed by the last one;
// after it no segment can be created, and Append says so, naming the
// directory, instead of wrapping to a number that sorts first. The records
// already there are loaded and acknowledged as ever.
func TestSegmentNumbersRunOut(t *testing.T) {
	dir := t.TempDir()
	writeSegment(t, dir, math.MaxUint64-1, event(0))
	s := openT(t, dir, Options{Sync: 1e9, SegmentBytes: 1 << 10})
	id, err := s.Append(event(1), leave)
	require.NoError(t, err)
	assert.Equal(t, uint64(math.MaxUint64), id.Seg)
	_, err = s.Append([]byte(strings.Repeat("b", 2<<10)), leave) // a segment of its own
	require.Error(t, err)
	assert.Contains(t, err.Error(), dir)
	g := loadAll(t, s)
	assert.Equal(t, events(0, 2), datas(g))
	require.NoError(t, s.Ack(ids(g)))
	assert.Zero(t, s.Stats().Records)
}
