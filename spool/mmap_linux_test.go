//go:build linux

package spool

import (
	"bytes"
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The operating system's files are mapped: the active segment holds its
// whole reserve on disk, counted, and a closed one is cut back to exactly
// what the write path (a test FS's file) leaves, byte for byte.
func TestMappedSegmentAsWritten(t *testing.T) {
	mappedDir, writtenDir := t.TempDir(), t.TempDir()
	for _, dir := range []string{mappedDir, writtenDir} {
		o := Options{Sync: 1e9, SegmentBytes: 8 << 10}
		if dir == writtenDir {
			o.FS = newFaultFS() // its files are not *os.File: written
		}
		s := openT(t, dir, o)
		appendN(t, s, 0, 500)
		if dir == mappedDir {
			require.NotNil(t, s.active.m, "mapped")
			st, err := os.Stat(segFile(dir, s.active.num))
			require.NoError(t, err)
			assert.EqualValues(t, 8<<10, st.Size(), "the reserve, on disk")
		} else {
			require.Nil(t, s.active.m, "written")
		}
		assert.Equal(t, dirBytes(t, dir), s.Stats().Bytes)
		require.NoError(t, s.Close())
	}
	names := withExt(t, mappedDir, segExt)
	require.Equal(t, withExt(t, writtenDir, segExt), names)
	require.Greater(t, len(names), 3)
	for _, name := range names {
		m, err := os.ReadFile(filepath.Join(mappedDir, name))
		require.NoError(t, err)
		w, err := os.ReadFile(filepath.Join(writtenDir, name))
		require.NoError(t, err)
		assert.True(t, bytes.Equal(w, m), "%s: the same bytes", name)
	}
}

// A crash leaves the active segment with its reserve: records, then
// zeros. Open reads the records, cuts the zeros, and counts no damage;
// the same with a record whose head was stored and not all of its
// payload (the process killed mid-store). Zeros and then anything else
// stay damage.
func TestMappedCrashLeavesZeroTail(t *testing.T) {
	dir := t.TempDir()
	s := openT(t, dir, Options{Sync: 1e9, SegmentBytes: 64 << 10})
	appendN(t, s, 0, 20)
	require.NotNil(t, s.active.m)
	num, end := s.active.num, s.active.end
	crashed := snapshot(t, dir)
	full, err := os.ReadFile(segFile(crashed, num))
	require.NoError(t, err)
	require.EqualValues(t, 64<<10, len(full))

	torn := bytes.Clone(full) // the head of record 20, and half its payload
	next := appendFrame(nil, event(20))
	copy(torn[end:], next[:len(next)/2])
	headOnly := bytes.Clone(full) // its head, none of its payload
	copy(headOnly[end:], next[:frameSize])
	damaged := bytes.Clone(full) // zeros, then bytes
	damaged[len(damaged)-100] = 1

	for _, tt := range []struct {
		name    string
		b       []byte
		corrupt int64
		size    int64 // after Open
	}{
		{"zeros", full, 0, end},
		{"torn", torn, 0, end},
		{"head only", headOnly, 0, end},
		{"zeros then bytes", damaged, 1, int64(len(full))},
	} {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			require.NoError(t, os.WriteFile(segFile(dir, num), tt.b, 0o600))
			s := openT(t, dir, Options{})
			st, err := os.Stat(segFile(dir, num))
			require.NoError(t, err)
			assert.Equal(t, tt.size, st.Size())
			assert.Equal(t, events(0, 20), datas(loadAll(t, s)))
			assert.Equal(t, tt.corrupt, s.Stats().Corrupt)
			assert.Equal(t, dirBytes(t, dir), s.Stats().Bytes)
		})
	}
}

// A disk too full to reserve a new segment: Append says so, naming the
// file, wrapping ENOSPC, and leaves no file behind; what was appended
// before stays, and Appends work once the disk has room again.
func TestMappedReserveNoSpace(t *testing.T) {
	dir := t.TempDir()
	s := openT(t, dir, Options{Sync: 1e9, SegmentBytes: 4 << 10})
	appendN(t, s, 0, 5)
	first := s.active.num
	s.allocate = func(int, int64) error { return syscall.ENOSPC }
	var err error
	n := 5
	for ; err == nil; n++ { // until a new segment is needed
		_, err = s.Append(event(n), leave)
	}
	assert.ErrorIs(t, err, syscall.ENOSPC)
	assert.Contains(t, err.Error(), "spool: reserve "+dir+string(filepath.Separator))
	assert.Contains(t, err.Error(), ".seg: no space left on device")
	assert.Equal(t, []string{fileName(first, segExt)}, withExt(t, dir, segExt), "nothing left of the new one")
	assert.Equal(t, dirBytes(t, dir), s.Stats().Bytes)
	_, err = s.Append(event(n), leave)
	assert.ErrorIs(t, err, syscall.ENOSPC, "still full")

	s.allocate = nil
	appendN(t, s, 100, 110)
	assert.Equal(t, first+1, s.active.num, "no segment number used up by the failed tries")
	want := append(events(0, n-1), events(100, 110)...)
	assert.Equal(t, want, datas(loadAll(t, s)))
	assert.Equal(t, dirBytes(t, dir), s.Stats().Bytes)
	require.NoError(t, s.Close())
	s = openT(t, dir, Options{})
	assert.Equal(t, want, datas(loadAll(t, s)))
	assert.Zero(t, s.Stats().Corrupt)
}

// A file system that cannot reserve: the segment is written instead.
func TestMappedUnsupportedIsWritten(t *testing.T) {
	dir := t.TempDir()
	s := openT(t, dir, Options{Sync: 1e9})
	s.allocate = func(int, int64) error { return syscall.EOPNOTSUPP }
	appendN(t, s, 0, 10)
	require.NotNil(t, s.active)
	assert.Nil(t, s.active.m, "written")
	assert.Equal(t, dirBytes(t, dir), s.Stats().Bytes)
	assert.Equal(t, s.active.end, s.Stats().Bytes, "no reserve")
	assert.Equal(t, events(0, 10), datas(loadAll(t, s)))
}

// A fault storing through the mapping (an I/O error paging the file in,
// here a window made read-only) is Append's error, not a crash: the
// segment is left, cut back to its records, and Appends go on in a new
// one; nothing appended before is lost.
func TestMappedFault(t *testing.T) {
	for _, sync := range []Options{{Sync: 1e9}, {}} {
		dir := t.TempDir()
		o := sync
		o.SegmentBytes = 64 << 10
		s := openT(t, dir, o)
		appendN(t, s, 0, 10)
		seg := s.active
		require.NotNil(t, seg.m)
		require.NoError(t, syscall.Mprotect(seg.m.win, syscall.PROT_READ))
		_, err := s.Append(event(10), leave)
		require.Error(t, err)
		assert.ErrorIs(t, err, errFault)
		assert.Contains(t, err.Error(), "spool: write "+segFile(dir, seg.num)+": memory fault")
		appendN(t, s, 11, 20)
		assert.NotEqual(t, seg, s.active, "a new segment")
		st, err := os.Stat(segFile(dir, seg.num))
		require.NoError(t, err)
		assert.Equal(t, seg.end, st.Size(), "cut back to its records")
		want := append(events(0, 10), events(11, 20)...)
		assert.Equal(t, want, datas(loadAll(t, s)))
		assert.Equal(t, dirBytes(t, dir), s.Stats().Bytes)
		require.NoError(t, s.Close())
		s = openT(t, dir, Options{})
		assert.Equal(t, want, datas(loadAll(t, s)))
		assert.Zero(t, s.Stats().Corrupt)
	}
}

// Someone else cuts the active segment's file short: the store faults
// (SIGBUS), and that is an error, not a crash; the spool goes on.
func TestMappedFileCutShort(t *testing.T) {
	dir := t.TempDir()
	s := openT(t, dir, Options{Sync: 1e9, SegmentBytes: 64 << 10})
	appendN(t, s, 0, 10)
	require.NotNil(t, s.active.m)
	require.NoError(t, os.Truncate(segFile(dir, s.active.num), 0))
	_, err := s.Append(event(10), leave)
	assert.ErrorIs(t, err, errFault)
	appendN(t, s, 11, 20)
	_, err = s.Load(func(ID, []byte, bool) bool { return true }, nil) // the first ten are gone: damage
	require.NoError(t, err)
	require.NoError(t, s.Close())
	s = openT(t, dir, Options{})
	assert.Equal(t, events(11, 20), datas(loadAll(t, s)))
}

// A record larger than a segment gets a reserve of its own.
func TestMappedLargeRecord(t *testing.T) {
	dir := t.TempDir()
	s := openT(t, dir, Options{Sync: 1e9, SegmentBytes: 64 << 10})
	big := bytes.Repeat([]byte("b"), maxRecord)
	appendN(t, s, 0, 3)
	_, err := s.Append(big, leave)
	require.NoError(t, err)
	require.NotNil(t, s.active.m)
	assert.EqualValues(t, headerSize+frameSize+maxRecord, s.active.size)
	appendN(t, s, 3, 6)
	g := datas(loadAll(t, s))
	require.Len(t, g, 7)
	assert.Equal(t, string(big), g[3])
	require.NoError(t, s.Close())
	s = openT(t, dir, Options{})
	assert.Len(t, loadAll(t, s), 7)
}

// Under MaxBytes the reserve is what the bound leaves, so the spool's
// files never go over it, and the bound is reached as with writes.
func TestMappedReserveWithinBound(t *testing.T) {
	dir := t.TempDir()
	s := openT(t, dir, Options{Sync: 1e9, MaxBytes: 10 << 10, SegmentBytes: 4 << 10})
	all := fill(t, s, fixed)
	st := s.Stats()
	assert.LessOrEqual(t, st.Bytes, int64(10<<10))
	assert.Equal(t, dirBytes(t, dir), st.Bytes)
	require.NoError(t, s.Ack(all))
	_, err := s.Append(fixed, take)
	require.NoError(t, err)
	assert.Equal(t, dirBytes(t, dir), s.Stats().Bytes)
}
