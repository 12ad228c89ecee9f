//go:build linux

package spool

import (
	"errors"
	"os"
	"syscall"
)

// On Linux the operating system's files are appended to through a shared
// mapping (map.go) rather than by a write(2) per record, which was most of
// an Append's cost: measured A/B on a loaded 2-core machine (issue 19), a
// write(2) per record took 4.9-5.9 us per Append against 2.1-2.9 us, and
// 2.6 to 3.8 times the CPU time, nearly all of it in the kernel; an
// Enqueue with the spool, 7.8-8.4 us against 4.5-5.2 us. (Issue 13 had
// measured the spool's end-to-end rate at 0.48-0.53 of the memory-only
// one with writes, 0.61-0.68 mapped, against a bound of half.)

// osMapped is an *os.File as a mapper: fallocate (or the FS's Allocate),
// mmap and munmap on its descriptor.
type osMapped struct {
	conn    syscall.RawConn
	allocFd func(fd int, size int64) error
}

// osMapper returns f as a mapper if it is an *os.File, reserving its
// blocks with allocate (fallocate when nil); nil otherwise.
func osMapper(f File, allocate func(fd int, size int64) error) mapper {
	of, ok := f.(*os.File)
	if !ok {
		return nil
	}
	conn, err := of.SyscallConn()
	if err != nil {
		return nil
	}
	if allocate == nil {
		allocate = fallocate
	}
	return &osMapped{conn: conn, allocFd: allocate}
}

func (o *osMapped) allocate(size int64) error {
	var aerr error
	if err := o.conn.Control(func(fd uintptr) { aerr = o.allocFd(int(fd), size) }); err != nil {
		return errors.Join(errors.ErrUnsupported, err)
	}
	return aerr
}

func (o *osMapped) mmap(off int64, n int) ([]byte, error) {
	var win []byte
	var merr error
	if err := o.conn.Control(func(fd uintptr) {
		win, merr = syscall.Mmap(int(fd), off, n, syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_SHARED)
	}); err != nil {
		return nil, err
	}
	return win, merr
}

func (o *osMapped) munmap(b []byte) error { return syscall.Munmap(b) }

// unsupported reports whether fallocate failed for want of support (the
// file system, the kernel, a sandbox) rather than of space: the segment
// is then written, not mapped.
func unsupported(err error) bool {
	for _, e := range []syscall.Errno{syscall.EOPNOTSUPP, syscall.ENOSYS, syscall.ENODEV, syscall.EPERM} {
		if errors.Is(err, e) {
			return true
		}
	}
	return false
}

// fallocate reserves the blocks of the file's first size bytes, and makes
// size its size: the stores through the mapping then need no block
// allocation, which could fail (SIGBUS) or stall.
func fallocate(fd int, size int64) error {
	for {
		err := syscall.Fallocate(fd, 0, 0, size)
		if err != syscall.EINTR {
			return err
		}
	}
}
