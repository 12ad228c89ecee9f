package spool

import (
	"math/rand/v2"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Close and Open again: exactly the records not acked come back, in
// order, recovered; segments whose records were all acked are gone.
func TestRecoveryAfterClose(t *testing.T) {
	dir := t.TempDir()
	o := Options{Sync: 1e9, SegmentBytes: 1 << 10, MaxBytes: 1 << 30}
	s, err := Open(dir, o)
	require.NoError(t, err)
	all := appendN(t, s, 0, 300)
	require.Len(t, loadAll(t, s), 300)
	segsBefore := len(withExt(t, dir, segExt))
	require.Greater(t, segsBefore, 5)

	// Ack, out of order and across segments: every third record, and
	// then the whole of the second segment's records and the third's.
	var acked []ID
	keep := map[ID]bool{}
	for i, id := range all {
		if i%3 == 0 || id.Seg == all[0].Seg+1 || id.Seg == all[0].Seg+2 {
			acked = append(acked, id)
		} else {
			keep[id] = true
		}
	}
	rand.New(rand.NewPCG(1, 2)).Shuffle(len(acked), func(i, j int) { acked[i], acked[j] = acked[j], acked[i] })
	bytesBefore := s.Stats().Bytes
	require.NoError(t, s.Ack(acked))
	st := s.Stats()
	assert.Less(t, st.Bytes, bytesBefore, "segments 2 and 3 reclaimed")
	assert.Equal(t, dirBytes(t, dir), st.Bytes)
	assert.EqualValues(t, len(keep), st.Records)
	assert.NotContains(t, files(t, dir), fileName(all[0].Seg+1, segExt))
	require.NoError(t, s.Close())
	require.NoError(t, s.Close(), "twice")

	s = openT(t, dir, o)
	st = s.Stats()
	assert.EqualValues(t, len(keep), st.Recovered)
	assert.EqualValues(t, len(keep), st.Backlog)
	assert.Equal(t, dirBytes(t, dir), st.Bytes)
	g := loadAll(t, s)
	var want []ID
	var wantData []string
	for i, id := range all {
		if keep[id] {
			want = append(want, id)
			wantData = append(wantData, string(event(i)))
		}
	}
	assert.Equal(t, want, ids(g))
	assert.Equal(t, wantData, datas(g))
	for _, r := range g {
		assert.True(t, r.Recovered)
	}

	// New records go to a new segment, after the recovered ones.
	id, err := s.Append(event(1000), leave)
	require.NoError(t, err)
	assert.Greater(t, id.Seg, all[len(all)-1].Seg)
	assert.Zero(t, id.N)
	g = loadAll(t, s)
	require.Len(t, g, 1)
	assert.False(t, g[0].Recovered)

	// Everything acked: Close leaves only the lock file.
	require.NoError(t, s.Ack(append(want, id)))
	require.NoError(t, s.Close())
	assert.Equal(t, []string{lockName}, files(t, dir))
}

// Eight batches end out of order, each acking its records in one call:
// segments are reclaimed whichever batch ends last, and what a reopen
// finds is exactly the batches not acked.
func TestConcurrentBatchesAckOutOfOrder(t *testing.T) {
	dir := t.TempDir()
	o := Options{Sync: 1e9, SegmentBytes: 2 << 10}
	s := openT(t, dir, o)
	all := appendN(t, s, 0, 800)
	require.Len(t, loadAll(t, s), 800)
	batches := make([][]ID, 16)
	for i, id := range all {
		batches[i/50] = append(batches[i/50], id)
	}
	// Batches 0 to 7 end, concurrently and in any order; 8 to 15 are in
	// flight at the "crash".
	var wg sync.WaitGroup
	for _, b := range rand.New(rand.NewPCG(3, 4)).Perm(8) {
		wg.Go(func() { assert.NoError(t, s.Ack(batches[b])) })
	}
	wg.Wait()
	st := s.Stats()
	assert.EqualValues(t, 400, st.Records)
	assert.Equal(t, dirBytes(t, dir), st.Bytes)
	assert.NotContains(t, files(t, dir), fileName(all[0].Seg, segExt), "the first segment is reclaimed")

	crashed := snapshot(t, dir)
	s2 := openT(t, crashed, o)
	assert.EqualValues(t, 400, s2.Stats().Recovered)
	g := loadAll(t, s2)
	assert.Equal(t, all[400:], ids(g))
	assert.Equal(t, events(400, 800), datas(g))

	// The later batches end too, the last first: every segment goes.
	for b := 15; b >= 8; b-- {
		require.NoError(t, s2.Ack(batches[b]))
	}
	assert.EqualValues(t, 0, s2.Stats().Records)
	require.NoError(t, s2.Close())
	assert.Equal(t, []string{lockName}, files(t, crashed))
}

// A segment in the middle is reclaimed while older ones still wait.
func TestReclaimOutOfOrder(t *testing.T) {
	dir := t.TempDir()
	s := openT(t, dir, Options{Sync: 1e9, SegmentBytes: 1 << 10})
	all := appendN(t, s, 0, 100)
	loadAll(t, s)
	bySeg := map[uint64][]ID{}
	for _, id := range all {
		bySeg[id.Seg] = append(bySeg[id.Seg], id)
	}
	first := all[0].Seg
	require.GreaterOrEqual(t, len(bySeg), 4)
	before := s.Stats().Bytes
	require.NoError(t, s.Ack(bySeg[first+2]))
	assert.NotContains(t, files(t, dir), fileName(first+2, segExt))
	assert.Contains(t, files(t, dir), fileName(first, segExt))
	assert.Less(t, s.Stats().Bytes, before)
	assert.Equal(t, dirBytes(t, dir), s.Stats().Bytes)
}

// Unknown ids, ids acked twice and ids never handed change nothing.
func TestAckIgnoresUnknownAndDuplicateIDs(t *testing.T) {
	dir := t.TempDir()
	s := openT(t, dir, Options{Sync: 1e9})
	all := appendN(t, s, 0, 10)
	n := 0
	_, err := s.Load(func(ID, []byte, bool) bool { n++; return n <= 4 }, nil)
	require.NoError(t, err)
	require.NoError(t, s.Ack([]ID{all[0], all[0], all[1], {Seg: 999, N: 1}, {Seg: all[0].Seg, N: 1 << 30}}))
	require.NoError(t, s.Ack([]ID{all[1], all[0]}))
	require.NoError(t, s.Ack([]ID{all[7]}), "not handed yet: ignored")
	st := s.Stats()
	assert.EqualValues(t, 8, st.Records)
	assert.EqualValues(t, 6, st.Backlog)
	g := loadAll(t, s)
	assert.Equal(t, all[4:], ids(g))
}

// The records acked are not handed after a restart; DONE holds runs, so a
// big batch costs a few bytes.
func TestDoneHoldsRuns(t *testing.T) {
	dir := t.TempDir()
	s, err := Open(dir, Options{Sync: 1e9, MaxBytes: 1 << 30})
	require.NoError(t, err)
	all := appendN(t, s, 0, 1000)
	loadAll(t, s)
	require.NoError(t, s.Ack(all[:999]))
	st, err := os.Stat(filepath.Join(dir, doneName))
	require.NoError(t, err)
	assert.Less(t, st.Size(), int64(40), "one run")
	require.NoError(t, s.Close())
	s = openT(t, dir, Options{})
	g := loadAll(t, s)
	assert.Equal(t, all[999:], ids(g))
}
