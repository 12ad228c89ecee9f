//go:build linux

package spool

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Sync 0: an Append whose fsync fails returns the error, and the record
// "is done rather than handed, and acknowledged, so that a restart does
// not send it either" (append.go). A failing disk fails the ack write
// too: the record then comes back at the next Open, though its Append
// returned an error: the caller, told it failed, may send it again, and
// it arrives twice.
func TestFailedSyncRecordBackAfterRestart(t *testing.T) {
	dir := t.TempDir()
	f := &opFS{err: syscall.EIO}
	s, err := Open(dir, Options{FS: f, MaxBytes: 1 << 20})
	require.NoError(t, err)
	appendN(t, s, 0, 3)
	f.mu.Lock()
	f.match = func(op string) bool {
		return strings.HasPrefix(op, "sync ") && strings.HasSuffix(op, segExt) ||
			strings.Contains(op, doneName) // its acknowledgement cannot be written either
	}
	f.mu.Unlock()
	_, err = s.Append(event(3), leave)
	require.ErrorIs(t, err, syscall.EIO)
	f.heal()
	appendN(t, s, 4, 5)
	want := append(events(0, 3), events(4, 5)...)
	assert.Equal(t, want, datas(loadAll(t, s)), "in this process, record 3 is not handed")
	require.NoError(t, s.Close())

	s = openT(t, dir, Options{})
	assert.Equal(t, want, datas(loadAll(t, s)), "record 3, whose Append failed, is not sent after a restart")
}

// A segment that cannot be reserved (fallocate: no space) is removed
// again; when that remove fails too (the same sick disk), its file (a
// header) stays on disk, but is not counted: Stats.Bytes no longer
// agrees with the files, for the life of the spool.
func TestFailedSegmentCreateBytesCounted(t *testing.T) {
	dir := t.TempDir()
	f := &opFS{mapped: true, err: syscall.EIO}
	s, err := Open(dir, Options{FS: f, Sync: 1e9, MaxBytes: 1 << 20, SegmentBytes: 4 << 10})
	require.NoError(t, err)
	defer s.Close()
	s.allocate = func(int, int64) error { return syscall.ENOSPC }
	f.mu.Lock()
	f.match = func(op string) bool { return strings.HasPrefix(op, "remove ") }
	f.mu.Unlock()
	_, err = s.Append(event(0), leave)
	require.ErrorIs(t, err, syscall.ENOSPC)
	f.heal()
	s.allocate = nil
	appendN(t, s, 1, 3)
	assert.Equal(t, dirBytes(t, dir), s.Stats().Bytes, "Stats.Bytes and the files: %v", files(t, dir))
}

// A crash while a record is stored through the mapping leaves its head
// and the first part of its payload, zeros after. When the record is
// the last the reserve holds (a record larger than SegmentBytes gets a
// reserve of exactly its size; records can also fill one to the byte),
// no zero follows it, and Open counts and logs it as damage (a WARN, a
// Corrupt count, the file not cut) instead of cutting it as the torn
// tail it is, as it does when a single zero byte follows.
func TestMappedTornLastRecordOfItsReserve(t *testing.T) {
	dir := t.TempDir()
	s := openT(t, dir, Options{Sync: 1e9, SegmentBytes: 4 << 10})
	appendN(t, s, 0, 3)
	big := []byte(strings.Repeat("b", 8<<10)) // over SegmentBytes: a reserve of its own, its exact size
	_, err := s.Append(big, leave)
	require.NoError(t, err)
	num := s.active.num
	require.NotNil(t, s.active.m)
	require.Equal(t, s.active.size, s.active.end, "the record fills its reserve")
	crashed := snapshot(t, dir)
	b, err := os.ReadFile(segFile(crashed, num))
	require.NoError(t, err)
	// The store was cut half way through the payload.
	clear(b[len(b)-len(big)/2:])
	require.NoError(t, os.WriteFile(segFile(crashed, num), b, 0o600))

	var l logs
	s2 := openT(t, crashed, Options{Logger: l.logger()})
	assert.Equal(t, events(0, 3), datas(loadAll(t, s2)))
	assert.Zero(t, s2.Stats().Corrupt, "a torn tail is not damage")
	assert.NotContains(t, l.String(), "level=WARN")
	if st, err := os.Stat(segFile(crashed, num)); err == nil { // or removed: no record in it
		assert.EqualValues(t, headerSize, st.Size(), "the torn record cut off")
	}

	// The control: the same crash with one zero byte after the record
	// (a reserve one byte larger) is a torn tail, as it should be.
	b = append(b, 0)
	ctl := t.TempDir()
	require.NoError(t, os.WriteFile(segFile(ctl, num), b, 0o600))
	for _, name := range withExt(t, crashed, segExt) {
		if name != fileName(num, segExt) {
			copyFile(t, filepath.Join(crashed, name), filepath.Join(ctl, name))
		}
	}
	s3 := openT(t, ctl, Options{})
	assert.Equal(t, events(0, 3), datas(loadAll(t, s3)))
	assert.Zero(t, s3.Stats().Corrupt, "control: a torn tail before a zero")
}
