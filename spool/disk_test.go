//go:build linux

package spool

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/dualpath/analytics-go/internal/testsupport"
)

// diskFS is the operating system's file system on a small disk that only
// the spool's directory uses (testsupport.SmallDisk). With mapped, segment
// files are handed out as the *os.File itself, so that the spool maps
// them, reserving their blocks through the disk's Allocate (promoted from
// SmallDisk); otherwise they are written.
type diskFS struct {
	osFS
	*testsupport.SmallDisk
	mapped bool
}

func newDiskFS(dir string, capacity int64, mapped bool) *diskFS {
	return &diskFS{SmallDisk: testsupport.NewSmallDisk(dir, capacity), mapped: mapped}
}

func (d *diskFS) OpenFile(name string, flag int, perm fs.FileMode) (File, error) {
	f, err := d.osFS.OpenFile(name, flag, perm)
	if err != nil || d.mapped && strings.HasSuffix(name, segExt) {
		return f, err
	}
	return &diskFile{File: f, disk: d.SmallDisk, name: name}, nil
}

type diskFile struct {
	File
	disk *testsupport.SmallDisk
	name string
}

// Write appends what fits.
func (f *diskFile) Write(p []byte) (int, error) { return f.disk.Write(f.File, f.name, p) }

// record is the i-th record of the disk tests: about 300 bytes, what a
// typical event takes.
func record(i int) []byte {
	return fmt.Appendf(nil, `{"type":"track","n":%d,"pad":%q}`, i, strings.Repeat("x", 260+i%37))
}

// deliver acks ids, as the client does when their batch ends. The .ack
// write may find the disk full: the records are done all the same.
func deliver(t *testing.T, s *Spool, ids []ID) {
	t.Helper()
	if err := s.Ack(ids); err != nil {
		require.ErrorIs(t, err, syscall.ENOSPC)
	}
}

// The spool on a disk with 400 KiB free (100 KiB with 64 KiB segments),
// every record delivered soon after its Append: every Append succeeds,
// through twice what the disk holds and more, when segments are mapped (a
// reserve of 16 MiB asked for first). Written segments, which cannot ask,
// find the disk full once, and that Append fails; once the records in
// flight are delivered the next succeeds, and later segments are cut
// smaller, so that it does not happen again. The spool's files never take
// more than the disk has.
func TestNearlyFullDisk(t *testing.T) {
	for _, tt := range []struct {
		name     string
		mapped   bool
		free     int64
		maxBytes int64 // its segments: a 16th of it, 16 MiB at most
		sync     time.Duration
	}{
		{"mapped", true, 400 << 10, 1 << 30, time.Hour},
		{"mapped/64KiB segments", true, 100 << 10, 1 << 20, time.Hour},
		{"mapped/64KiB segments/sync0", true, 100 << 10, 1 << 20, 0},
		{"written", false, 400 << 10, 1 << 30, time.Hour},
		{"written/64KiB segments", false, 100 << 10, 1 << 20, time.Hour},
	} {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			disk := newDiskFS(dir, tt.free, tt.mapped)
			s := openT(t, dir, Options{FS: disk, MaxBytes: tt.maxBytes, Sync: tt.sync})
			var inFlight []ID
			failures := 0
			const n = 3000 // 900 KB of records
			for i := range n {
				id, err := s.Append(record(i), take)
				if err != nil {
					require.False(t, tt.mapped, "Append %d: %v (disk: %d of %d bytes used)", i, err, disk.Used(), tt.free)
					require.ErrorIs(t, err, syscall.ENOSPC)
					failures++
					deliver(t, s, inFlight) // the batch ends
					inFlight = nil
					id, err = s.Append(record(i), take)
					require.NoError(t, err, "Append %d once the records in flight are delivered", i)
				}
				if inFlight = append(inFlight, id); len(inFlight) == 50 { // a batch
					deliver(t, s, inFlight)
					inFlight = nil
					require.LessOrEqual(t, disk.Used(), tt.free)
				}
			}
			deliver(t, s, inFlight)
			assert.Zero(t, s.Stats().Records)
			assert.Equal(t, dirBytes(t, dir), s.Stats().Bytes)
			if tt.mapped {
				assert.Positive(t, disk.Refusals(), "the disk refused reserves: the test is of a nearly full disk")
			} else {
				assert.LessOrEqual(t, failures, 1, "the disk found full once at most")
			}
			require.NoError(t, s.Close())
			assert.Equal(t, []string{lockName}, files(t, dir), "everything delivered: only the LOCK file stays")
		})
	}
}

// A true shortage: records not delivered yet fill the disk, and Append
// fails with ENOSPC. Once they are delivered, the next Append succeeds,
// though the segment they filled was the one being appended to; and no
// segment number was used up by the failed tries.
func TestFullDiskShortageEnds(t *testing.T) {
	for _, mapped := range []bool{true, false} {
		t.Run(map[bool]string{true: "mapped", false: "written"}[mapped], func(t *testing.T) {
			dir := t.TempDir()
			disk := newDiskFS(dir, 100<<10, mapped)
			s := openT(t, dir, Options{FS: disk, MaxBytes: 1 << 20, Sync: time.Hour})
			var handed []ID
			var err error
			i := 0
			for ; err == nil; i++ {
				var id ID
				if id, err = s.Append(record(i), take); err == nil {
					handed = append(handed, id)
				}
			}
			require.ErrorIs(t, err, syscall.ENOSPC, "the disk is full of records not delivered")
			for range 3 {
				_, err = s.Append(record(i), take)
				require.ErrorIs(t, err, syscall.ENOSPC, "still full")
			}
			last := handed[len(handed)-1].Seg
			deliver(t, s, handed)
			for k := range 1000 {
				id, err := s.Append(record(i+k), take)
				require.NoError(t, err, "Append %d after the shortage ended", k)
				if k == 0 {
					assert.Equal(t, last+1, id.Seg, "the next segment's number: none used up by the failed tries")
				}
				deliver(t, s, []ID{id})
			}
			require.NoError(t, s.Close())
			assert.Equal(t, []string{lockName}, files(t, dir))
		})
	}
}

// A segment removed while it waits for the syncer (Sync > 0) to close it
// gives its space back at once, not at the next sync.
func TestRemovedSegmentClosed(t *testing.T) {
	for _, mapped := range []bool{true, false} {
		t.Run(map[bool]string{true: "mapped", false: "written"}[mapped], func(t *testing.T) {
			dir := t.TempDir()
			disk := newDiskFS(dir, 1<<30, mapped)
			s := openT(t, dir, Options{FS: disk, Sync: time.Hour, SegmentBytes: 4 << 10})
			var handed []ID
			for i := range 100 {
				id, err := s.Append(record(i), take)
				require.NoError(t, err)
				handed = append(handed, id)
			}
			require.Greater(t, handed[len(handed)-1].Seg, handed[0].Seg+3, "several segments")
			deliver(t, s, handed)
			assert.Zero(t, disk.Held(), "bytes of removed segments still held open")
		})
	}
}

// An acknowledgement that a full disk refuses leaves no empty .ack file:
// not after Close with everything done, nor with records left.
func TestFullDiskLeavesNoEmptyAck(t *testing.T) {
	for _, all := range []bool{true, false} {
		t.Run(map[bool]string{true: "all done", false: "some left"}[all], func(t *testing.T) {
			dir := t.TempDir()
			disk := newDiskFS(dir, 1<<30, false)
			s, err := Open(dir, Options{FS: disk, MaxBytes: 1 << 20, Sync: time.Hour})
			require.NoError(t, err)
			var handed []ID
			for i := range 10 {
				id, err := s.Append(record(i), take)
				require.NoError(t, err)
				handed = append(handed, id)
			}
			disk.SetFree(4)
			require.ErrorIs(t, s.Ack(handed[:5]), syscall.ENOSPC)
			if all {
				assert.Error(t, s.Ack(handed[5:]), "DONE cannot be written either")
			}
			assert.Empty(t, emptyFiles(t, dir), "right after the failed write")
			assert.Equal(t, dirBytes(t, dir), s.Stats().Bytes)
			s.Close()
			assert.Empty(t, emptyFiles(t, dir), "after Close")
			if all {
				assert.Equal(t, []string{lockName}, files(t, dir))
			}
		})
	}
}

// emptyFiles lists dir's DONE if it has no bytes.
func emptyFiles(t *testing.T, dir string) []string {
	var out []string
	for _, name := range withExt(t, dir, doneName) {
		st, err := os.Stat(filepath.Join(dir, name))
		if err == nil && st.Size() == 0 {
			out = append(out, name)
		}
	}
	return out
}

// A segment set aside as .corrupt stays on disk, so it counts against
// MaxBytes, in this process and after a reopen.
func TestCorruptFilesCounted(t *testing.T) {
	dir := t.TempDir()
	offs := writeSegment(t, dir, 1, event(0), event(1), event(2))
	b, err := os.ReadFile(segFile(dir, 1))
	require.NoError(t, err)
	b[offs[1]] = 0xFF // a length that cannot be framed: the rest is damage
	b[offs[1]+3] = 0xFF
	require.NoError(t, os.WriteFile(segFile(dir, 1), b, 0o600))
	s := openT(t, dir, Options{})
	require.NoError(t, s.Ack(ids(loadAll(t, s))))
	require.Contains(t, files(t, dir), fileName(1, corruptExt))
	assert.EqualValues(t, len(b), s.Stats().Bytes, "the .corrupt file's bytes")
	require.NoError(t, s.Close())
	s = openT(t, dir, Options{})
	assert.EqualValues(t, len(b), s.Stats().Bytes, "counted after a reopen")
}
