package spool

import (
	"encoding/binary"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// writeSegment writes segment num of the given records into dir, as the
// spool would, and returns each record's offset.
func writeSegment(t testing.TB, dir string, num uint64, recs ...[]byte) []int {
	t.Helper()
	b := appendHeader(nil, segMagic)
	var offs []int
	for _, r := range recs {
		offs = append(offs, len(b))
		b = appendFrame(b, r)
	}
	require.NoError(t, os.WriteFile(filepath.Join(dir, fileName(num, segExt)), b, 0o600))
	return offs
}

func segFile(dir string, num uint64) string { return filepath.Join(dir, fileName(num, segExt)) }

// A crash mid-write leaves the last record cut short at any byte: Open
// keeps every whole record, cuts the rest off, and counts no damage.
func TestTornTailAtEveryOffset(t *testing.T) {
	src := t.TempDir()
	offs := writeSegment(t, src, 1, event(0), event(1), event(2))
	full, err := os.ReadFile(segFile(src, 1))
	require.NoError(t, err)
	last := offs[2]
	for cut := last; cut < len(full); cut++ {
		t.Run(fmt.Sprint(cut), func(t *testing.T) {
			dir := t.TempDir()
			require.NoError(t, os.WriteFile(segFile(dir, 1), full[:cut], 0o600))
			var l logs
			s := openT(t, dir, Options{Logger: l.logger()})
			g := loadAll(t, s)
			assert.Equal(t, events(0, 2), datas(g))
			assert.Zero(t, s.Stats().Corrupt)
			st, err := os.Stat(segFile(dir, 1))
			require.NoError(t, err)
			assert.EqualValues(t, last, st.Size(), "cut back to the torn record's start")
			if cut > last {
				assert.Contains(t, l.String(), "torn record cut off")
			}
		})
	}
}

// A file shorter than a header (a crash at its creation) is removed.
func TestShortSegmentRemoved(t *testing.T) {
	for cut := range headerSize {
		dir := t.TempDir()
		writeSegment(t, dir, 1, event(0))
		writeSegment(t, dir, 2, event(1))
		full, _ := os.ReadFile(segFile(dir, 2))
		require.NoError(t, os.WriteFile(segFile(dir, 2), full[:cut], 0o600))
		s, err := Open(dir, Options{MaxBytes: 1 << 20})
		require.NoError(t, err)
		assert.Equal(t, events(0, 1), datas(loadAll(t, s)))
		assert.NotContains(t, files(t, dir), fileName(2, segExt))
		id, err := s.Append(event(2), take)
		require.NoError(t, err)
		assert.EqualValues(t, 3, id.Seg, "never a number used before")
		require.NoError(t, s.Close())
	}
}

func TestFlippedByteSkipped(t *testing.T) {
	dir := t.TempDir()
	offs := writeSegment(t, dir, 1, event(0), event(1), event(2), event(3))
	b, _ := os.ReadFile(segFile(dir, 1))
	b[offs[1]+frameSize+3] ^= 0x20
	require.NoError(t, os.WriteFile(segFile(dir, 1), b, 0o600))
	var l logs
	s := openT(t, dir, Options{Logger: l.logger()})
	st := s.Stats()
	assert.EqualValues(t, 1, st.Corrupt)
	assert.EqualValues(t, 3, st.Recovered)
	g := loadAll(t, s)
	assert.Equal(t, []string{string(event(0)), string(event(2)), string(event(3))}, datas(g))
	assert.Equal(t, []uint32{0, 2, 3}, []uint32{g[0].ID.N, g[1].ID.N, g[2].ID.N}, "ordinals as written")
	assert.EqualValues(t, 1, s.Stats().Corrupt, "counted once, not again by Load")
	assert.Contains(t, l.String(), "level=WARN")
	assert.Contains(t, l.String(), fmt.Sprintf("offset=%d", offs[1]))
	assert.Contains(t, l.String(), segFile(dir, 1))

	// All the good ones acked: the segment goes, the damaged record with it.
	require.NoError(t, s.Ack(ids(g)))
	assert.NotContains(t, files(t, dir), fileName(1, segExt))
}

// A length over the limit in the middle: the rest of the segment cannot
// be framed. What comes before is delivered, the file is not cut, and
// once done it is set aside, not deleted.
func TestHugeLengthInTheMiddle(t *testing.T) {
	for _, length := range []uint32{0, maxRecord + 1, 0xFFFFFFF0} {
		t.Run(fmt.Sprint(length), func(t *testing.T) {
			dir := t.TempDir()
			offs := writeSegment(t, dir, 1, event(0), event(1), event(2), event(3))
			writeSegment(t, dir, 2, event(4))
			b, _ := os.ReadFile(segFile(dir, 1))
			binary.LittleEndian.PutUint32(b[offs[2]:], length)
			require.NoError(t, os.WriteFile(segFile(dir, 1), b, 0o600))
			s := openT(t, dir, Options{})
			assert.EqualValues(t, 1, s.Stats().Corrupt)
			g := loadAll(t, s)
			assert.Equal(t, []string{string(event(0)), string(event(1)), string(event(4))}, datas(g))
			st, _ := os.Stat(segFile(dir, 1))
			assert.EqualValues(t, len(b), st.Size(), "not cut")
			require.NoError(t, s.Ack(ids(g)))
			assert.Contains(t, files(t, dir), fileName(1, corruptExt))
			assert.NotContains(t, files(t, dir), fileName(1, segExt))
		})
	}
}

func TestWrongMagicSetAside(t *testing.T) {
	dir := t.TempDir()
	writeSegment(t, dir, 1, event(0))
	writeSegment(t, dir, 2, event(1))
	writeSegment(t, dir, 3, event(2))
	b, _ := os.ReadFile(segFile(dir, 2))
	copy(b, "NOTSPOOL")
	require.NoError(t, os.WriteFile(segFile(dir, 2), b, 0o600))
	var l logs
	s := openT(t, dir, Options{Logger: l.logger()})
	assert.EqualValues(t, 1, s.Stats().Corrupt)
	assert.Equal(t, []string{string(event(0)), string(event(2))}, datas(loadAll(t, s)))
	assert.Contains(t, files(t, dir), fileName(2, corruptExt))
	assert.Contains(t, l.String(), "level=WARN")
	assert.Equal(t, dirBytes(t, dir), s.Stats().Bytes, "a .corrupt file counts, as it stays on disk")
}

// A file of a newer version is refused, a segment or DONE, naming the
// file and both versions, and nothing is changed: a downgrade never drops
// what a newer version wrote.
func TestFutureVersionRefused(t *testing.T) {
	for _, ext := range []string{segExt, doneName} {
		t.Run(ext, func(t *testing.T) {
			dir := t.TempDir()
			writeSegment(t, dir, 1, event(0))
			writeSegment(t, dir, 2, event(1))
			path := segFile(dir, 2)
			if ext == doneName {
				path = filepath.Join(dir, doneName)
				require.NoError(t, os.WriteFile(path, appendHeader(nil, doneMagic), 0o600))
			}
			b, _ := os.ReadFile(path)
			binary.LittleEndian.PutUint32(b[len(segMagic):], Version+1)
			require.NoError(t, os.WriteFile(path, b, 0o600))
			before := files(t, dir)
			_, err := Open(dir, Options{})
			require.Error(t, err)
			assert.Contains(t, err.Error(), path)
			assert.Contains(t, err.Error(), fmt.Sprintf("version %d", Version+1))
			assert.Contains(t, err.Error(), fmt.Sprintf("version %d", Version))
			// The lock was given back: the same error again, not "in use".
			_, err = Open(dir, Options{})
			assert.ErrorContains(t, err, fmt.Sprintf("version %d", Version+1))
			// Nothing was changed.
			after, _ := os.ReadFile(path)
			assert.Equal(t, b, after)
			assert.Equal(t, append(before, lockName), files(t, dir), "no file removed or set aside")
		})
	}
}

// A header torn inside its sector (a power loss while it was being
// written back) keeps its magic and reads version 0, or any version older
// than this package's: that file is damaged, not of a format to refuse. A
// segment's is set aside (*.corrupt), counted and logged, and costs its own
// records only; DONE's is set aside too, and every record is handed
// again. Open never fails for it. Before, Open refused the
// whole spool: "… is of format version 0; this package reads version 1".
func TestTornHeader(t *testing.T) {
	tear := func(t *testing.T, path string) {
		b, err := os.ReadFile(path)
		require.NoError(t, err)
		clear(b[len(segMagic):headerSize]) // bytes 8–11, the version
		require.NoError(t, os.WriteFile(path, b, 0o600))
	}
	t.Run("segment", func(t *testing.T) {
		dir := t.TempDir()
		writeSegment(t, dir, 1, event(0), event(1))
		writeSegment(t, dir, 2, event(2), event(3))
		writeSegment(t, dir, 3, event(4))
		tear(t, segFile(dir, 2))
		var l logs
		s, err := Open(dir, Options{Logger: l.logger(), MaxBytes: 1 << 30})
		require.NoError(t, err)
		defer s.Close()
		assert.EqualValues(t, 1, s.Stats().Corrupt)
		assert.Equal(t, []string{string(event(0)), string(event(1)), string(event(4))}, datas(loadAll(t, s)))
		assert.Contains(t, files(t, dir), fileName(2, corruptExt))
		assert.NotContains(t, files(t, dir), fileName(2, segExt))
		assert.Contains(t, l.String(), "level=WARN")
		assert.Contains(t, l.String(), "damaged header")
		assert.Contains(t, l.String(), segFile(dir, 2))
		assert.Equal(t, dirBytes(t, dir), s.Stats().Bytes, "the .corrupt file counts")
		id, err := s.Append(event(5), leave)
		require.NoError(t, err)
		assert.EqualValues(t, 4, id.Seg, "never a number used before")
	})
	t.Run("ack", func(t *testing.T) {
		dir := t.TempDir()
		s, err := Open(dir, Options{Sync: time.Hour, MaxBytes: 1 << 30})
		require.NoError(t, err)
		all := appendN(t, s, 0, 6)
		loadAll(t, s)
		require.NoError(t, s.Ack(all[:4]))
		require.NoError(t, s.Close())
		ack := filepath.Join(dir, doneName)
		tear(t, ack)
		var l logs
		s, err = Open(dir, Options{Logger: l.logger(), MaxBytes: 1 << 30})
		require.NoError(t, err)
		assert.EqualValues(t, 1, s.Stats().Corrupt)
		g := loadAll(t, s)
		assert.Equal(t, events(0, 6), datas(g), "every record handed again: acks lost cost re-sends, never records")
		assert.Contains(t, l.String(), "damaged header")
		assert.Contains(t, l.String(), ack)
		assert.Contains(t, files(t, dir), doneName+corruptExt)
		assert.Equal(t, dirBytes(t, dir), s.Stats().Bytes)
		// The marks are written anew, and hold.
		require.NoError(t, s.Ack(ids(g)[:5]))
		require.NoError(t, s.Close())
		s = openT(t, dir, Options{})
		assert.Equal(t, events(5, 6), datas(loadAll(t, s)))
	})
	t.Run("zeros", func(t *testing.T) {
		// A file created, its size recorded and none of its bytes: it held
		// nothing, and goes, uncounted.
		dir := t.TempDir()
		writeSegment(t, dir, 1, event(0))
		require.NoError(t, os.WriteFile(segFile(dir, 2), make([]byte, 8<<10), 0o600))
		s := openT(t, dir, Options{})
		assert.Zero(t, s.Stats().Corrupt)
		assert.Equal(t, events(0, 1), datas(loadAll(t, s)))
		assert.NotContains(t, files(t, dir), fileName(2, segExt))
		assert.NotContains(t, files(t, dir), fileName(2, corruptExt))
	})
}

// DONE: a torn tail is cut off (those acks are lost, so the
// records come again), a damaged record is skipped and counted.
func TestAckFileDamage(t *testing.T) {
	mk := func(t *testing.T) (string, []ID) {
		dir := t.TempDir()
		s, err := Open(dir, Options{Sync: 1e9, MaxBytes: 1 << 30})
		require.NoError(t, err)
		all := appendN(t, s, 0, 10)
		loadAll(t, s)
		require.NoError(t, s.Ack(all[0:2]))
		require.NoError(t, s.Ack(all[4:6]))
		require.NoError(t, s.Ack(all[8:9]))
		require.NoError(t, s.Close())
		return dir, all
	}
	ackFile := func(dir string, _ ID) string { return filepath.Join(dir, doneName) }

	t.Run("torn", func(t *testing.T) {
		dir, all := mk(t)
		b, _ := os.ReadFile(ackFile(dir, all[0]))
		for cut := len(b) - 1; cut > headerSize; cut-- {
			d := t.TempDir()
			copyFile(t, filepath.Join(dir, fileName(all[0].Seg, segExt)), filepath.Join(d, fileName(all[0].Seg, segExt)))
			require.NoError(t, os.WriteFile(ackFile(d, all[0]), b[:cut], 0o600))
			s := openT(t, d, Options{})
			g := loadAll(t, s)
			assert.Zero(t, s.Stats().Corrupt)
			assert.Subset(t, ids(g), []ID{all[2], all[3], all[6], all[7], all[9]})
			assert.Contains(t, ids(g), all[8], "the last ack was torn")
			// The file was cut to its whole records: later acks append
			// cleanly and a reopen reads them.
			require.NoError(t, s.Ack(ids(g)))
		}
	})
	t.Run("flipped", func(t *testing.T) {
		dir, all := mk(t)
		b, _ := os.ReadFile(ackFile(dir, all[0]))
		b[len(b)-1] ^= 1 // the last ack record's payload
		require.NoError(t, os.WriteFile(ackFile(dir, all[0]), b, 0o600))
		s := openT(t, dir, Options{})
		assert.EqualValues(t, 1, s.Stats().Corrupt)
		assert.Equal(t, []ID{all[2], all[3], all[6], all[7], all[8], all[9]}, ids(loadAll(t, s)))
	})
	t.Run("stray", func(t *testing.T) {
		// Runs of a segment that is gone: nothing handed, and the
		// segment's number is never used again, since DONE's runs would
		// mark the records of a new segment of that number done; once
		// DONE is compacted, and once the spool closes empty, too.
		dir, all := mk(t)
		require.NoError(t, os.Remove(filepath.Join(dir, fileName(all[0].Seg, segExt))))
		s := openT(t, dir, Options{})
		assert.Empty(t, loadAll(t, s))
		id, err := s.Append(event(0), leave)
		require.NoError(t, err)
		assert.Greater(t, id.Seg, all[0].Seg, "a number DONE names, used again")
		require.NoError(t, s.compactDone())
		require.NoError(t, s.Close())
		s = openT(t, dir, Options{})
		g := loadAll(t, s)
		assert.Equal(t, []ID{id}, ids(g), "not marked done by the old runs")
		next, err := s.Append(event(1), take)
		require.NoError(t, err)
		assert.Greater(t, next.Seg, id.Seg)
		require.NoError(t, s.Ack([]ID{id, next}))
		require.NoError(t, s.Close())
		assert.Equal(t, []string{lockName}, files(t, dir), "a spool closed with everything done leaves only its LOCK")
	})
}

func copyFile(t testing.TB, from, to string) {
	t.Helper()
	b, err := os.ReadFile(from)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(to, b, 0o600))
}
