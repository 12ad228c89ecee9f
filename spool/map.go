package spool

import (
	"errors"
	"fmt"
	"os"
	"runtime/debug"
)

// The active segment is appended to through a shared mapping of its file
// where its File can be mapped (a mapper): on Linux the operating system's
// files (mmap_linux.go, which says why and what it costs), and the crash
// tests' files, which model a mapping as what it is, the page cache itself.
// The contract is the same as a write's (SPEC §11.1): a store into a
// MAP_SHARED mapping is in the page cache once made (a SIGKILL after it
// loses nothing), and File.Sync writes back the pages dirtied through the
// mapping too. The file's blocks are reserved (allocate) before it is
// mapped, so that a full disk is the error of the Append that creates the
// segment, never a fault at a later store; a segment no longer appended to
// is cut back to its records (unmap in segment.go), so a closed spool's
// files are the write path's, byte for byte. Open reads a segment a crash
// left reserved as records then zeros (scan.go), and Load reads with
// ReadAt, never through the mapping, so a read error stays an error.

// mapper is a File that can be appended to through a shared mapping.
type mapper interface {
	// allocate reserves the blocks of the file's first size bytes and
	// makes size its size (fallocate(2)); its error is the file system's,
	// matching errors.ErrUnsupported (or, on Linux, the errno) when it
	// cannot reserve at all.
	allocate(size int64) error
	// mmap maps the n bytes of the file from off, a multiple of the page
	// size, shared and writable (mmap(2), MAP_SHARED).
	mmap(off int64, n int) ([]byte, error)
	// munmap ends a mapping mmap returned; the pages dirtied through it
	// stay in the page cache, for the next Sync.
	munmap(b []byte) error
}

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
	f      mapper
	size   int64  // bytes reserved: the file's size while mapped
	win    []byte // the file from winOff, MAP_SHARED; nil when none
	winOff int64
}

// mapSegment reserves size bytes for a new segment's file f (its header
// written) and maps it. It returns nil, and no error, when appends must be
// writes: f cannot be mapped (a test's FS, whose writes are what the test
// is about), or its file system cannot reserve or map. A disk too full for
// size bytes gets a smaller reserve: half, and half again, down to need,
// what the segment's first record needs, so that a nearly full disk holds
// smaller segments rather than none (SPEC §11.9). A reserve refused at need
// too (no space, a quota, an I/O error) is an error naming path.
func (s *Spool) mapSegment(f File, path string, size, need int64) (*mapped, error) {
	// f as a mapper: itself if it is one, the operating system's mapping
	// of it if it is an *os.File that this system maps (mmap_linux.go),
	// reserving through s.allocate.
	mf, ok := f.(mapper)
	if !ok {
		mf = osMapper(f, s.allocate)
	}
	if mf == nil {
		return nil, nil
	}
	for {
		err := mf.allocate(size)
		switch {
		case err == nil:
			m := &mapped{f: mf, size: size}
			if m.slide(int64(headerSize), int64(headerSize)) == nil {
				return m, nil
			}
			// A file system that reserves but cannot map: back to its
			// header, for the write path, which appends at the end.
		case noSpace(err) && size > need:
			// A refused reserve may have grown the file part way: back
			// to its header, so that the next try's size is the file's.
		case errors.Is(err, errors.ErrUnsupported) || unsupported(err):
			return nil, nil // nothing reserved: the file is its header still
		default:
			return nil, ioErr("reserve", path, err)
		}
		if terr := f.Truncate(int64(headerSize)); terr != nil {
			return nil, ioErr("truncate", path, terr)
		}
		if err == nil {
			return nil, nil
		}
		size = max(size/2, need)
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
	appendFrame(b[:0], data) // in place: b holds the frame exactly
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
	win, err := m.f.mmap(from, int(n))
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
	err := m.f.munmap(m.win)
	m.win = nil
	return err
}
