package spool

import (
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// faultFS is the operating system's file system with faults injected on
// segment files (*.seg), and counts of their writes and syncs.
type faultFS struct {
	FS
	mu     sync.Mutex
	writes int // writes to segment files
	syncs  int // syncs of segment files
	// failWrite, if set, is asked before the n-th write (from 1) to a
	// segment: an error to return, and whether half of the bytes are
	// written first.
	failWrite func(n int) (err error, half bool)
	failSync  error // while set, every sync of a segment fails
	failRead  error // while set, every read of a segment fails
	failOpen  error // while set, every file created fails
}

func newFaultFS() *faultFS { return &faultFS{FS: osFS{}} }

func (f *faultFS) OpenFile(name string, flag int, perm fs.FileMode) (File, error) {
	f.mu.Lock()
	failOpen := f.failOpen
	f.mu.Unlock()
	if failOpen != nil && flag&os.O_CREATE != 0 {
		return nil, &fs.PathError{Op: "open", Path: name, Err: failOpen}
	}
	file, err := f.FS.OpenFile(name, flag, perm)
	if err != nil || !strings.HasSuffix(name, segExt) {
		return file, err
	}
	return &faultFile{File: file, fs: f, name: name}, nil
}

func (f *faultFS) set(fn func(f *faultFS)) {
	f.mu.Lock()
	defer f.mu.Unlock()
	fn(f)
}

func (f *faultFS) counts() (writes, syncs int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.writes, f.syncs
}

type faultFile struct {
	File
	fs   *faultFS
	name string
}

func (f *faultFile) Write(p []byte) (int, error) {
	f.fs.mu.Lock()
	f.fs.writes++
	var err error
	var half bool
	if f.fs.failWrite != nil {
		err, half = f.fs.failWrite(f.fs.writes)
	}
	f.fs.mu.Unlock()
	if err == nil {
		return f.File.Write(p)
	}
	n := 0
	if half {
		n, _ = f.File.Write(p[:len(p)/2])
	}
	return n, &fs.PathError{Op: "write", Path: f.name, Err: err}
}

func (f *faultFile) Sync() error {
	f.fs.mu.Lock()
	f.fs.syncs++
	err := f.fs.failSync
	f.fs.mu.Unlock()
	if err != nil {
		return &fs.PathError{Op: "sync", Path: f.name, Err: err}
	}
	return f.File.Sync()
}

func (f *faultFile) ReadAt(p []byte, off int64) (int, error) {
	f.fs.mu.Lock()
	err := f.fs.failRead
	f.fs.mu.Unlock()
	if err != nil {
		return 0, &fs.PathError{Op: "read", Path: f.name, Err: err}
	}
	return f.File.ReadAt(p, off)
}

// A write that fails, whole or half way: Append says why and where,
// nothing written before is lost, and once the disk has room again
// Appends work and everything is recovered after a reopen.
func TestWriteFaults(t *testing.T) {
	for _, half := range []bool{false, true} {
		for _, sync := range []Options{{Sync: 1e9}, {}} {
			name := map[bool]string{false: "whole", true: "half"}[half] + map[bool]string{false: "/sync1s", true: "/sync0"}[sync.Sync == 0]
			t.Run(name, func(t *testing.T) {
				dir := t.TempDir()
				ffs := newFaultFS()
				o := sync
				o.FS, o.MaxBytes, o.SegmentBytes = ffs, 1<<20, 4<<10
				s, err := Open(dir, o)
				require.NoError(t, err)
				before := appendN(t, s, 0, 30)
				w, _ := ffs.counts()
				// The next three writes fail: the record's, and those of
				// the next two Appends (one of them creating a segment).
				ffs.set(func(f *faultFS) {
					f.failWrite = func(n int) (error, bool) {
						if n > w && n <= w+3 {
							return syscall.ENOSPC, half
						}
						return nil, false
					}
				})
				for i := range 3 {
					_, err = s.Append(event(100+i), leave)
					require.Error(t, err)
					assert.ErrorIs(t, err, syscall.ENOSPC)
					assert.Contains(t, err.Error(), "spool: write "+dir+string(filepath.Separator))
					assert.Contains(t, err.Error(), ".seg: no space left on device")
				}
				assert.Equal(t, dirBytes(t, dir), s.Stats().Bytes, "bytes right after failed writes")
				ffs.set(func(f *faultFS) { f.failWrite = nil })
				after := appendN(t, s, 30, 40)
				assert.Equal(t, dirBytes(t, dir), s.Stats().Bytes)
				g := loadAll(t, s)
				assert.Equal(t, append(before, after...), ids(g))
				assert.Equal(t, events(0, 40), datas(g))
				require.NoError(t, s.Close())

				s = openT(t, dir, Options{})
				g = loadAll(t, s)
				assert.Equal(t, events(0, 40), datas(g))
				assert.Zero(t, s.Stats().Corrupt)
			})
		}
	}
}

// A failed sync with Sync 0: Append returns the error; the record is in
// the file but not accepted, so it is neither handed nor recovered.
func TestSyncFaultSync0(t *testing.T) {
	dir := t.TempDir()
	ffs := newFaultFS()
	s, err := Open(dir, Options{FS: ffs, MaxBytes: 1 << 20})
	require.NoError(t, err)
	appendN(t, s, 0, 5)
	ffs.set(func(f *faultFS) { f.failSync = syscall.EIO })
	_, err = s.Append(event(5), leave)
	require.Error(t, err)
	assert.ErrorIs(t, err, syscall.EIO)
	assert.Contains(t, err.Error(), "spool: sync "+dir)
	assert.EqualValues(t, 5, s.Stats().Backlog, "not in the backlog")
	assert.EqualValues(t, 5, s.Stats().Records)
	ffs.set(func(f *faultFS) { f.failSync = nil })
	appendN(t, s, 6, 8)
	assert.Equal(t, append(events(0, 5), events(6, 8)...), datas(loadAll(t, s)))
	require.NoError(t, s.Close())

	s = openT(t, dir, Options{})
	assert.Equal(t, append(events(0, 5), events(6, 8)...), datas(loadAll(t, s)))
}

// A failed final sync is Close's error; the records stay.
func TestSyncFaultAtClose(t *testing.T) {
	dir := t.TempDir()
	ffs := newFaultFS()
	s, err := Open(dir, Options{FS: ffs, MaxBytes: 1 << 20, Sync: time.Hour})
	require.NoError(t, err)
	ffs.set(func(f *faultFS) { f.failSync = syscall.EIO })
	appendN(t, s, 0, 5)
	err = s.Close()
	assert.ErrorIs(t, err, syscall.EIO, "Close's final sync")
	s = openT(t, dir, Options{})
	assert.Equal(t, events(0, 5), datas(loadAll(t, s)))
}

// A read that fails: Load returns it, and the record stays first.
func TestReadFault(t *testing.T) {
	dir := t.TempDir()
	ffs := newFaultFS()
	s := openT(t, dir, Options{FS: ffs, Sync: 1e9})
	appendN(t, s, 0, 10)
	ffs.set(func(f *faultFS) { f.failRead = syscall.EIO })
	n, err := s.Load(func(ID, []byte, bool) bool { return true }, nil)
	assert.Zero(t, n)
	assert.ErrorIs(t, err, syscall.EIO)
	assert.Contains(t, err.Error(), "spool: read "+dir)
	assert.EqualValues(t, 10, s.Stats().Backlog)
	ffs.set(func(f *faultFS) { f.failRead = nil })
	assert.Equal(t, events(0, 10), datas(loadAll(t, s)))
}

// A file system that cannot create a segment: Append fails, names the
// file, and works again when it can.
func TestCreateFault(t *testing.T) {
	dir := t.TempDir()
	ffs := newFaultFS()
	s := openT(t, dir, Options{FS: ffs, Sync: 1e9, SegmentBytes: 1 << 10})
	appendN(t, s, 0, 3)
	ffs.set(func(f *faultFS) { f.failOpen = syscall.EROFS })
	var err error
	for i := 3; err == nil; i++ { // until a new segment is needed
		_, err = s.Append(event(i), leave)
	}
	assert.ErrorIs(t, err, syscall.EROFS)
	assert.Contains(t, err.Error(), "spool: create "+dir)
	assert.Contains(t, err.Error(), ".seg: read-only file system")
	n := int(s.Stats().Backlog)
	ffs.set(func(f *faultFS) { f.failOpen = nil })
	appendN(t, s, 1000, 1001)
	g := loadAll(t, s)
	assert.Len(t, g, n+1)
	assert.Equal(t, string(event(1000)), g[len(g)-1].Data)
}

func TestSyncCountSync0(t *testing.T) {
	ffs := newFaultFS()
	s := openT(t, t.TempDir(), Options{FS: ffs, SegmentBytes: 1 << 20})
	for i := range 20 {
		_, err := s.Append(event(i), take)
		require.NoError(t, err)
		writes, syncs := ffs.counts()
		assert.Equal(t, writes-1, syncs, "a sync after each record's write (the header's write is the extra one)")
	}
}
