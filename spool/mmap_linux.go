//go:build linux

package spool

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"os"
	"runtime/debug"
	"syscall"
)

// On Linux the active segment is appended to through a shared mapping of
// its file rather than by a write(2) per record, which was most of an
// Append's cost: measured A/B on a loaded 2-core machine (issue 19), a
// write(2) per record took 4.9-5.9 us per Append against 2.1-2.9 us, and
// 2.6 to 3.8 times the CPU time, nearly all of it in the kernel; an
// Enqueue with the spool, 7.8-8.4 us against 4.5-5.2 us. (Issue 13 had
// measured the spool's end-to-end rate at 0.48-0.53 of the memory-only
// one with writes, 0.61-0.68 mapped, against a bound of half.) The
// contract is the same (SPEC §11.1): a store into a MAP_SHARED
// mapping is in the page cache once made, as a write's bytes are (a
// SIGKILL after it loses nothing), and File.Sync, fsync, writes back the
// pages dirtied through the mapping too. The file's blocks are reserved
// (fallocate) before it is mapped, so that a full disk is the error of the
// Append that creates the segment, never a SIGBUS at a later store; a
// segment no longer appended to is cut back to its records (unmap in
// segment.go), so a closed spool's files are the write path's, byte for
// byte. Open reads a segment a crash left reserved as records then zeros
// (scan.go), and Load reads with ReadAt as on every system, never through
// the mapping, so a read error stays an error.

// mapWindow is how much of a segment is mapped at a time: the pages
// touched through a mapping count in the process's RSS until it is
// unmapped, so mapping a window, not a whole segment of up to 16 MiB,
// keeps what the spool adds to the RSS small. Sliding it costs two system
// calls per ~3,000 typical records.
const mapWindow = 1 << 20

// errFault is a fault storing a record through the mapping: the kernel
// could not page the file in (an I/O error), or someone else cut the file
// short. Append returns it, wrapped, and the segment is abandoned.
var errFault = errors.New("memory fault storing through the file's mapping (an I/O error, or the file cut short)")

// mapped is the active segment's file, reserved to size bytes and mapped
// a window at a time. Spool.mu guards it, as it does the segment.
type mapped struct {
	conn   syscall.RawConn // the file's, for its descriptor
	size   int64           // bytes reserved: the file's size while mapped
	win    []byte          // the file from winOff, MAP_SHARED; nil when none
	winOff int64
}

// mapSegment reserves size bytes for a new segment's file f (its header
// written) and maps it. It returns nil, and no error, when appends must be
// writes: f is not an *os.File (a test's FS, whose writes are what the
// test is about), or its file system cannot reserve or map. A disk too
// full for size bytes gets a smaller reserve: half, and half again, down
// to need, what the segment's first record needs, so that a nearly full
// disk holds smaller segments rather than none (SPEC §11.9). A reserve refused at need
// too (no space, a quota, an I/O error) is an error naming path.
func (s *Spool) mapSegment(f File, path string, size, need int64) (*mapped, error) {
	of, ok := f.(*os.File)
	if !ok {
		return nil, nil
	}
	conn, err := of.SyscallConn()
	if err != nil {
		return nil, nil
	}
	allocate := s.allocate
	if allocate == nil {
		allocate = fallocate
	}
	var aerr error
	for {
		if err := conn.Control(func(fd uintptr) { aerr = allocate(int(fd), size) }); err != nil {
			return nil, nil
		}
		if aerr == nil || !noSpace(aerr) || size <= need {
			break
		}
		// A refused reserve may have grown the file part way: back to
		// its header, so that the next try's size is the file's.
		if terr := f.Truncate(int64(headerSize)); terr != nil {
			return nil, ioErr("truncate", path, terr)
		}
		size = max(size/2, need)
	}
	switch {
	case aerr == nil:
	case unsupported(aerr):
		return nil, nil // nothing reserved: the file is its header still
	default:
		return nil, ioErr("reserve", path, aerr)
	}
	m := &mapped{conn: conn, size: size}
	if err := m.slide(int64(headerSize), int64(headerSize)); err != nil {
		// A file system that reserves but cannot map: back to its
		// header, for the write path, which appends at the end.
		if terr := f.Truncate(int64(headerSize)); terr != nil {
			return nil, ioErr("truncate", path, terr)
		}
		return nil, nil
	}
	return m, nil
}

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

// put stores data at off, framed as a record, through the mapping. The
// frame's head goes first: a process killed before the payload is whole
// leaves a head whose checksum fails, followed by zeros, which Open cuts
// as a torn tail. A fault is returned as errFault, not a crash.
func (m *mapped) put(off int64, data []byte) (err error) {
	end := off + frameSize + int64(len(data))
	if off < m.winOff || end > m.winOff+int64(len(m.win)) {
		if err := m.slide(off, end); err != nil {
			return err
		}
	}
	b := m.win[off-m.winOff : end-m.winOff]
	head := uint64(len(data)) | uint64(crc32.Checksum(data, castagnoli))<<32
	old := debug.SetPanicOnFault(true)
	defer func() {
		debug.SetPanicOnFault(old)
		if r := recover(); r != nil {
			if _, ok := r.(interface{ Addr() uintptr }); !ok {
				panic(r) // not a fault: a bug, to be seen
			}
			err = fmt.Errorf("%w: %v", errFault, r)
		}
	}()
	binary.LittleEndian.PutUint64(b, head) // one store
	copy(b[frameSize:], data)
	return nil
}

// slide maps the window that holds off to end: from the page of off, at
// least mapWindow bytes, within the reserve.
func (m *mapped) slide(off, end int64) error {
	if err := m.unmap(); err != nil {
		return err
	}
	from := off &^ int64(os.Getpagesize()-1)
	n := min(max(mapWindow, end-from), m.size-from)
	var win []byte
	var merr error
	err := m.conn.Control(func(fd uintptr) {
		win, merr = syscall.Mmap(int(fd), from, int(n), syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_SHARED)
	})
	if err == nil {
		err = merr
	}
	if err != nil {
		return fmt.Errorf("map: %w", err)
	}
	m.win, m.winOff = win, from
	return nil
}

// unmap ends the window's mapping. Its dirty pages stay in the page
// cache, for the next fsync.
func (m *mapped) unmap() error {
	if m.win == nil {
		return nil
	}
	err := syscall.Munmap(m.win)
	m.win = nil
	return err
}
