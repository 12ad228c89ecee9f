//go:build linux

package analytics

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/dualpath/analytics-go/spool"
)

// smallDiskFS is the operating system's file system on a small disk that
// only the spool's directory uses: capacity bytes, of which the files in
// dir, and those removed from it that this process still holds open,
// take what is used. A write past what is free writes what fits and fails
// with ENOSPC; so does a segment's reserve (Allocate, which the spool
// calls in place of fallocate). Segment files are handed out as the
// *os.File itself, so that the spool maps them, as it does the operating
// system's.
type smallDiskFS struct {
	osSpoolFS
	dir string

	mu       sync.Mutex
	capacity int64
	refused  int // reserves and writes refused for want of space
}

func (d *smallDiskFS) refusals() int {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.refused
}

// used is what the files take. d.mu is held.
func (d *smallDiskFS) used() int64 {
	var n int64
	entries, err := os.ReadDir(d.dir)
	if err != nil {
		panic(err)
	}
	for _, e := range entries {
		if info, err := e.Info(); err == nil && info.Mode().IsRegular() {
			n += info.Size()
		}
	}
	held := map[uint64]int64{} // removed, still open: by inode
	fds, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		panic(err)
	}
	for _, fd := range fds {
		link := filepath.Join("/proc/self/fd", fd.Name())
		target, err := os.Readlink(link)
		if err != nil || !strings.HasPrefix(target, d.dir+"/") || !strings.HasSuffix(target, " (deleted)") {
			continue
		}
		var st syscall.Stat_t
		if syscall.Stat(link, &st) == nil {
			held[st.Ino] = st.Size
		}
	}
	for _, size := range held {
		n += size
	}
	return n
}

// Allocate reserves the first size bytes of the file fd, if they fit.
func (d *smallDiskFS) Allocate(fd int, size int64) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	var st syscall.Stat_t
	if err := syscall.Fstat(fd, &st); err != nil {
		return err
	}
	if size-st.Size > d.capacity-d.used() {
		d.refused++
		return syscall.ENOSPC
	}
	for {
		if err := syscall.Fallocate(fd, 0, 0, size); err != syscall.EINTR {
			return err
		}
	}
}

func (d *smallDiskFS) OpenFile(name string, flag int, perm fs.FileMode) (spool.File, error) {
	f, err := os.OpenFile(name, flag, perm)
	if err != nil {
		return nil, err
	}
	if strings.HasSuffix(name, ".seg") {
		return f, nil
	}
	return &smallDiskFile{File: f, disk: d}, nil
}

type smallDiskFile struct {
	*os.File
	disk *smallDiskFS
}

// Write appends (every file of the spool is written at its end) what fits.
func (f *smallDiskFile) Write(p []byte) (int, error) {
	d := f.disk
	d.mu.Lock()
	defer d.mu.Unlock()
	free := max(d.capacity-d.used(), 0)
	if int64(len(p)) <= free {
		return f.File.Write(p)
	}
	d.refused++
	n, _ := f.File.Write(p[:free])
	return n, &fs.PathError{Op: "write", Path: f.Name(), Err: syscall.ENOSPC}
}

// The spool on a nearly full disk (400 KiB free; 100 KiB with
// WithSpoolMaxBytes of 1 MiB, whose segments are 64 KiB) and a healthy
// API: every Enqueue succeeds, through several times what the disk holds,
// and every event is delivered once. The disk refuses the spool's first
// choice of reserve, 16 MiB (64 KiB): the spool makes do with less.
func TestSpoolNearlyFullDisk(t *testing.T) {
	for _, tt := range []struct {
		name string
		free int64
		opts []Option
	}{
		{"defaults", 400 << 10, nil},
		{"1MiB bound", 100 << 10, []Option{WithSpoolMaxBytes(1 << 20)}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			real, err := filepath.EvalSymlinks(dir) // as /proc/self/fd names it
			require.NoError(t, err)
			disk := &smallDiskFS{dir: real, capacity: tt.free}
			opts := append([]Option{WithSpool(dir), func(c *config) { c.spoolFS = disk }}, tt.opts...)
			e := newEnv(t, newAPI(), opts...)
			pad := strings.Repeat("p", 100) // about 300 bytes an event, as written
			msgs := make([]Message, 3000)
			for i := range msgs {
				msgs[i] = Track{MessageId: fmt.Sprintf("d-%d", i), UserId: "u", Event: "E", Properties: Properties{"pad": pad}}
				require.NoError(t, e.client.Enqueue(msgs[i]), "Enqueue %d", i)
				if i%100 == 99 {
					e.flush() // the API keeps up: a hundred events at most not delivered
				}
			}
			e.flush()
			assert.Positive(t, disk.refusals(), "the disk refused a reserve: the test is of a nearly full disk")
			e.close()
			e.assertDeliveredOnce(msgs)
			st := e.client.Stats()
			assert.Zero(t, st.Rejected.Spool)
			assert.Zero(t, st.Spool.Left)
			left, err := os.ReadDir(dir)
			require.NoError(t, err)
			assert.Empty(t, left, "every event delivered: no file left")
		})
	}
}
