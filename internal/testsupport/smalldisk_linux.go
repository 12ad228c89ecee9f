package testsupport

import (
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
)

// SmallDisk is a small disk that only the directory dir uses: capacity
// bytes, of which the files in dir take what is used, with those removed
// from it that this process still holds open (their space comes back once
// they are closed, as on a real disk). A write past what is free writes
// what fits and fails with ENOSPC (Write); so does a reserve (Allocate, in
// place of fallocate). Its methods are safe for concurrent use.
//
// A file system under test hands out files whose Write calls the disk's,
// and has an Allocate method that calls the disk's: the spool asks its FS
// for that method by its signature.
type SmallDisk struct {
	dir string

	mu       sync.Mutex
	capacity int64
	refused  int // writes and reserves refused for want of space
}

// NewSmallDisk returns a disk of capacity bytes for dir (an empty
// directory, so that capacity is what is free).
func NewSmallDisk(dir string, capacity int64) *SmallDisk {
	if real, err := filepath.EvalSymlinks(dir); err == nil {
		dir = real // as /proc/self/fd names it
	}
	return &SmallDisk{dir: dir, capacity: capacity}
}

// SetFree makes the disk's capacity what is used now plus free.
func (d *SmallDisk) SetFree(free int64) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.capacity = d.usedLocked() + free
}

// Used returns how many bytes the files take.
func (d *SmallDisk) Used() int64 {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.usedLocked()
}

// Held returns the size of the files removed from the directory that this
// process still holds open: space the disk does not have back yet.
func (d *SmallDisk) Held() int64 {
	d.mu.Lock()
	defer d.mu.Unlock()
	var n int64
	for _, size := range d.removedOpen() {
		n += size
	}
	return n
}

// Refusals returns how many writes and reserves the disk refused for want
// of space.
func (d *SmallDisk) Refusals() int {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.refused
}

func (d *SmallDisk) usedLocked() int64 {
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
	for _, size := range d.removedOpen() {
		n += size
	}
	return n
}

// removedOpen returns the sizes of the files removed from the directory
// that a descriptor of this process still holds, by inode.
func (d *SmallDisk) removedOpen() map[uint64]int64 {
	out := map[uint64]int64{}
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
			out[st.Ino] = st.Size
		}
	}
	return out
}

// Allocate reserves the first size bytes of the file fd (fallocate), if
// they fit; else it fails with ENOSPC.
func (d *SmallDisk) Allocate(fd int, size int64) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	var st syscall.Stat_t
	if err := syscall.Fstat(fd, &st); err != nil {
		return err
	}
	if size-st.Size > d.capacity-d.usedLocked() {
		d.refused++
		return syscall.ENOSPC
	}
	for {
		if err := syscall.Fallocate(fd, 0, 0, size); err != syscall.EINTR {
			return err
		}
	}
}

// Write appends p to w, the file name of the directory (every file of the
// spool is written at its end): all of it if it fits, else what fits, and
// then it fails with ENOSPC.
func (d *SmallDisk) Write(w io.Writer, name string, p []byte) (int, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	free := max(d.capacity-d.usedLocked(), 0)
	if int64(len(p)) <= free {
		return w.Write(p)
	}
	d.refused++
	n, _ := w.Write(p[:free])
	return n, &fs.PathError{Op: "write", Path: name, Err: syscall.ENOSPC}
}
