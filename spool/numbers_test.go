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

// A directory holding a segment numbered math.MaxUint64 (the largest
// name the format allows: 20 digits): the next segment's number wraps to
// a small one (recover: nextNum = max(nextNum, num+1) overflows), which
// sorts before it. Then the records appended after Open come back BEFORE
// the older recovered ones at the next Open, and an Ack of them is
// silently dropped (find's binary search over s.segs, no longer sorted),
// so an acked record comes back. A fix may refuse the Open (naming the
// file) or the Appends (an error); it may not reorder or resurrect.
func TestSegmentNumberAtMaxUint64(t *testing.T) {
	dir := t.TempDir()
	writeSegment(t, dir, math.MaxUint64, event(0), event(1))
	s, err := Open(dir, Options{MaxBytes: 1 << 20})
	if err != nil {
		assert.Contains(t, err.Error(), fileName(math.MaxUint64, segExt))
		return
	}
	g := loadAll(t, s)
	require.Equal(t, events(0, 2), datas(g))
	want := events(0, 2)
	// Two new records; the first handed (and acked), the second left.
	var handed []ID
	_, err2 := s.Append(event(2), func(id ID) bool { handed = append(handed, id); return true })
	_, err3 := s.Append(event(3), leave)
	if err3 == nil {
		want = append(want, string(event(3)))
	}
	if err2 == nil {
		require.NoError(t, s.Ack(handed))
		assert.EqualValues(t, len(want), s.Stats().Records, "the ack of record 2 counted")
	}
	require.NoError(t, s.Close())

	s = openT(t, dir, Options{})
	assert.Equal(t, want, datas(loadAll(t, s)),
		"order kept across the reopen (0, 1, then 3), and record 2, acked, not back")
}
