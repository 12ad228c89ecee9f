package spool

import (
	"bytes"
	"context"
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// MaxBytes exactly a header and one record's frame: that record fits,
// alone, on both paths; a byte less and it never fits (AppendWait does
// not wait); records of 1 byte and of exactly maxRecord bytes.
func TestAttackBoundsExact(t *testing.T) {
	for _, size := range []int{1, 300, maxRecord} {
		for _, written := range []bool{false, true} {
			t.Run(fmt.Sprintf("%d,written=%v", size, written), func(t *testing.T) {
				data := bytes.Repeat([]byte{'k'}, size)
				frame := int64(frameSize + size)
				o := Options{Sync: 1e9, MaxBytes: int64(headerSize) + frame}
				if written {
					o.FS = newFaultFS()
				}
				dir := t.TempDir()
				s := openT(t, dir, o)
				id, err := s.Append(data, take)
				require.NoError(t, err)
				assert.Equal(t, o.MaxBytes, s.Stats().Bytes)
				assert.Equal(t, dirBytes(t, dir), s.Stats().Bytes)
				_, err = s.Append([]byte{'x'}, take)
				assert.ErrorIs(t, err, ErrFull)
				require.NoError(t, s.Ack([]ID{id}))
				id2, err := s.Append(data, leave) // the done active segment makes room
				require.NoError(t, err)
				assert.Greater(t, id2.Seg, id.Seg)
				assert.LessOrEqual(t, s.Stats().Bytes, o.MaxBytes)
				require.NoError(t, s.Close())

				s = openT(t, dir, Options{MaxBytes: o.MaxBytes - 1})
				g := loadAll(t, s)
				require.Len(t, g, 1)
				assert.Equal(t, string(data), g[0].Data)
				_, err = s.AppendWait(context.Background(), data, take)
				assert.ErrorIs(t, err, ErrFull, "one byte short: never fits, no wait")
			})
		}
	}
	s := openT(t, t.TempDir(), Options{})
	_, err := s.Append(make([]byte, maxRecord+1), take)
	assert.Error(t, err)
	_, err = s.Append(nil, take)
	assert.Error(t, err)
}

// IDs from an earlier Open, acked before this Open handed the records
// again: ignored (they would take records out of the backlog unseen);
// acked after, they count; acked twice, once.
func TestAttackAckAcrossOpens(t *testing.T) {
	dir := t.TempDir()
	s, err := Open(dir, Options{Sync: 1e9, MaxBytes: 1 << 20})
	require.NoError(t, err)
	old := appendN(t, s, 0, 5)
	loadAll(t, s)
	require.NoError(t, s.Close())

	s = openT(t, dir, Options{})
	require.NoError(t, s.Ack(old[:3]))
	assert.EqualValues(t, 5, s.Stats().Records, "not handed in this Open: ignored")
	assert.EqualValues(t, 5, s.Stats().Backlog)
	g := loadAll(t, s)
	assert.Equal(t, old, ids(g), "the same IDs again")
	require.NoError(t, s.Ack(old[:3]))
	require.NoError(t, s.Ack(old[:3]))
	require.NoError(t, s.Ack([]ID{{Seg: 99, N: 0}, {Seg: old[0].Seg, N: 1000}}))
	assert.EqualValues(t, 2, s.Stats().Records)
	require.NoError(t, s.Close())
	s = openT(t, dir, Options{})
	assert.Equal(t, old[3:], ids(loadAll(t, s)))
}
