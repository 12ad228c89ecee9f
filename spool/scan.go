package spool

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
)

// scanBuffer is the buffer Open reads each file through, sequentially.
const scanBuffer = 256 << 10

// scanner is Open's state while it reads the directory: one buffer for
// every file, nothing kept of the records but counts.
type scanner struct {
	s       *Spool
	br      *bufio.Reader
	payload []byte
}

// recover reads the directory at Open: every segment, in order, then
// DONE. The backlog it leaves is every valid record not done, oldest first
// (SPEC §11.2); torn tails are cut, damaged records skipped and counted
// (SPEC §11.8). A file of a newer version than this package's ends it with
// an error; a damaged header costs that file only: a segment is set aside,
// its records lost, DONE too, every record handed again.
func (s *Spool) recover() error {
	entries, err := s.fs.ReadDir(s.dir)
	if err != nil {
		return ioErr("read directory", s.dir, err)
	}
	var segs []uint64
	hasDone := false
	for _, e := range entries {
		name := e.Name()
		switch name {
		case doneName:
			hasDone = true
		case doneName + ".tmp": // a rewrite cut short; the DONE it was to replace stands
			s.removeStray(filepath.Join(s.dir, name))
		case doneName + corruptExt:
			s.done.aside = s.countAside(e)
		}
		num, ext, ok := parseName(name)
		if !ok {
			continue
		}
		// Never reuse a number, even of a file set aside.
		s.useNumber(num)
		switch ext {
		case corruptExt:
			s.countAside(e)
		case segExt:
			segs = append(segs, num)
		}
	}
	slices.Sort(segs)
	sc := &scanner{s: s, br: bufio.NewReaderSize(nil, scanBuffer)}
	for _, num := range segs {
		if err := sc.segment(num); err != nil {
			return err
		}
	}
	if hasDone {
		if err := sc.done(); err != nil {
			return err
		}
	}
	for _, seg := range slices.Clone(s.segs) {
		s.stats.Bytes += seg.size
		if seg.live == 0 {
			_ = s.reclaim(seg) // finished before the crash; logged if it stays
			continue
		}
		if s.cur == nil {
			s.cur, s.curOff = seg, int64(headerSize)
		}
	}
	s.stats.Backlog, s.stats.Recovered = s.stats.Records, s.stats.Records
	return nil
}

// countAside counts a file set aside by an earlier Open or client, kept
// for whoever looks into it, against MaxBytes, and returns its size.
func (s *Spool) countAside(e fs.DirEntry) int64 {
	info, err := e.Info()
	if err != nil {
		return 0
	}
	s.stats.Bytes += info.Size()
	return info.Size()
}

// removeStray removes a file the spool no longer needs.
func (s *Spool) removeStray(path string) {
	if err := s.fs.Remove(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
		s.log.Warn("spool: remove a stray file", "file", path, "err", err)
	}
}

// fate is what Open does with a file it read: keep it, remove it (cut
// short at its creation), or set it aside (not one of ours, or damaged
// beyond reading).
type fate int

const (
	keep fate = iota
	remove
	setAside
)

// segment reads segment num: its header, then each record's frame and
// checksum, and adds it to the spool's segments, unless the file is
// removed (shorter than a header) or set aside (a damaged header). It
// returns an error for a newer version.
func (sc *scanner) segment(num uint64) error {
	path := sc.s.segPath(num)
	seg := &segment{num: num, recovered: true}
	return sc.file(path, filepath.Join(sc.s.dir, fileName(num, corruptExt)), 0, segMagic, func(f File, size int64) error {
		end, damaged, err := sc.frames(f, path, size, true, func(off int64, ok bool) bool {
			seg.records++
			seg.live++
			sc.s.stats.Records++
			if !ok {
				sc.s.stats.Corrupt++
				sc.s.log.Warn("spool: damaged record skipped", "file", path, "offset", off, "bad", "checksum")
				sc.s.markDone(seg, seg.records-1, seg.records)
			}
			return seg.records < 1<<32-1 // ordinals are uint32
		})
		if err != nil {
			return err
		}
		seg.end, seg.size, seg.damaged = end, size, damaged
		if !damaged && end < size {
			seg.size = sc.truncate(f, path, end, size)
		}
		sc.s.segs = append(sc.s.segs, seg)
		return nil
	})
}

// done reads DONE and adds the runs it holds to the segments' done sets.
func (sc *scanner) done() error {
	s, d := sc.s, &sc.s.done
	path := s.donePath()
	return sc.file(path, path+corruptExt, d.aside, doneMagic, func(f File, size int64) error {
		end, _, err := sc.frames(f, path, size, false, func(off int64, ok bool) bool {
			if !ok || !s.addRuns(sc.payload) {
				s.stats.Corrupt++
				s.log.Warn("spool: damaged acknowledgement skipped", "file", path, "offset", off)
			}
			return true
		})
		if err != nil {
			return err
		}
		d.size = size
		if end < size {
			// Later runs are appended at the end: nothing unframed may
			// stay ahead of them. What is cut holds no record of an event.
			d.size = sc.truncate(f, path, end, size)
			d.stale = d.size != end // rewritten whole at the next Ack
		}
		s.stats.Bytes += d.size
		return nil
	})
}

// file opens a file of the spool, checks its header, and hands it to read
// when it is one of ours. Otherwise it removes
// the file (cut short at its creation, or zeros) or renames it aside, for
// whoever looks into it, over a file of replaced bytes counted already:
// its bytes then count against MaxBytes while it stays, and if it cannot
// be renamed it stays, uncounted (not one of the spool's names), and Open
// goes on without it. The file is closed first (some systems
// refuse either on an open file).
func (sc *scanner) file(path, aside string, replaced int64, magic string, read func(f File, size int64) error) error {
	s := sc.s
	f, err := s.fs.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		return ioErr("open", path, err)
	}
	what, size, err := sc.header(f, path, magic)
	if err == nil && what == keep {
		err = read(f, size)
	}
	f.Close()
	switch {
	case err != nil || what == keep:
		return err
	case what == remove:
		s.removeStray(path)
	case s.fs.Rename(path, aside) == nil:
		s.stats.Bytes += size - replaced
	default:
		s.log.Warn("spool: cannot set a damaged file aside", "file", path)
	}
	return nil
}

// addRuns marks the runs of a done record's payload done (markDone: the
// counts of live records follow), ordinals beyond a segment's records
// ignored, and marks the
// segment numbers used: a segment removed may have runs left here. It
// reports false for a payload that does not decode.
func (s *Spool) addRuns(p []byte) bool {
	var v [3]uint64 // segment, first ordinal, count
	for len(p) > 0 {
		for i := range v {
			x, n := binary.Uvarint(p)
			if n <= 0 {
				return false
			}
			v[i], p = x, p[n:]
		}
		s.useNumber(v[0])
		seg := s.find(v[0])
		if seg == nil || v[1] >= uint64(seg.records) {
			continue
		}
		hi := v[1] + min(v[2], uint64(seg.records)-v[1])
		s.markDone(seg, uint32(v[1]), uint32(hi))
	}
	return true
}

// header checks a file's header, and returns the file's size. It is the
// spool's (keep), shorter than a header (remove: cut short at its
// creation), damaged (setAside: another magic, or a version older than
// any this package wrote, as a tear inside the header's sector leaves it;
// counted and logged), nothing but zeros (remove: its blocks reserved, or
// its size recorded, and none of its bytes written before a power loss), or
// of a newer version, which this package cannot read: an error naming the
// file and both versions, so that a downgrade never drops what a newer
// version wrote (SPEC §11.8).
func (sc *scanner) header(f File, path, magic string) (fate, int64, error) {
	st, err := f.Stat()
	if err != nil {
		return keep, 0, ioErr("stat", path, err)
	}
	size := st.Size()
	if size < int64(headerSize) {
		sc.s.log.Info("spool: removing a file cut short at its creation", "file", path, "size", size)
		return remove, size, nil
	}
	var b [headerSize]byte
	if _, err := f.ReadAt(b[:], 0); err != nil {
		return keep, size, ioErr("read", path, err)
	}
	// Another magic is damage; the spool's, with the version it holds: a
	// newer one is refused, an older one is damage (SPEC §11.8).
	badMagic, version := string(b[:len(magic)]) != magic, binary.LittleEndian.Uint32(b[len(magic):])
	switch {
	case !badMagic && version == Version:
		return keep, size, nil
	case !badMagic && version > Version:
		return keep, size, fmt.Errorf("spool: %s is of format version %d; this package reads version %d", path, version, Version)
	}
	if zeros, err := sc.zeros(f, path, 0, size); err != nil || zeros {
		if zeros {
			sc.s.log.Info("spool: removing a file of zeros (created, not written, before a crash)", "file", path, "size", size)
		}
		return remove, size, err
	}
	sc.s.stats.Corrupt++
	if badMagic {
		sc.s.log.Warn("spool: file of another kind set aside", "file", path)
	} else {
		sc.s.log.Warn("spool: file with a damaged header set aside", "file", path, "version", version)
	}
	return setAside, size, nil
}

// frames reads the records of a file of size bytes after its header, and
// calls record for each whole one (ok: its checksum holds), with its
// payload in sc.payload, until record returns false. It returns where the
// framed records end, and damaged when what follows cannot be framed (a
// length of 0 or over maxRecord: counted and logged). Otherwise any bytes
// after end are a torn tail: a record cut short by a crash, or, with
// reserved (a segment, which a crash may leave mapped, its reserve in
// place: mmap_linux.go), zeros after the records, maybe after one more
// record whose checksum fails: its head stored and not all its payload;
// or such a record last, ending where the file does, its payload ending
// in a zero (a tear in a reserve it fills). Zeros followed by anything
// else stay damage. DONE is only ever written, never reserved.
func (sc *scanner) frames(f File, path string, size int64, reserved bool, record func(off int64, ok bool) bool) (end int64, damaged bool, err error) {
	sc.br.Reset(io.NewSectionReader(f, int64(headerSize), size-int64(headerSize)))
	var head [frameSize]byte
	off := int64(headerSize)
	for size-off >= frameSize {
		if _, err := io.ReadFull(sc.br, head[:]); err != nil {
			return 0, false, ioErr("read", path, err)
		}
		length, sum := frameHead(head[:])
		if !framable(length) {
			if reserved && length == 0 && sum == 0 {
				zeros, err := sc.zeros(f, path, off+frameSize, size)
				if err != nil || zeros {
					return off, false, err
				}
			}
			sc.s.stats.Corrupt++
			sc.s.log.Warn("spool: unframable stretch skipped", "file", path, "offset", off, "length", length)
			return off, true, nil
		}
		if size-off-frameSize < int64(length) {
			break // cut short
		}
		sc.payload = slices.Grow(sc.payload[:0], int(length))[:length]
		if _, err := io.ReadFull(sc.br, sc.payload); err != nil {
			return 0, false, ioErr("read", path, err)
		}
		ok := crc32.Checksum(sc.payload, castagnoli) == sum
		next := off + frameSize + int64(length)
		if !ok && reserved {
			// Torn, not damaged, when only zeros follow it; or when it
			// is last, ending where the file does, as one that fills its
			// reserve does (a record over SegmentBytes gets a reserve of
			// exactly its size), and its payload ends in a zero: a store
			// cut short, the bytes not stored yet being the reserve's
			// zeros, the same tear with no zero after it to see. (A
			// write cut short by a power loss can leave zeros there
			// too.) Damage that happens to end in a zero is cut the same
			// way, which loses nothing: a record whose checksum fails is
			// never handed, and nothing follows.
			torn := next == size && sc.payload[length-1] == 0
			if next < size {
				if torn, err = sc.zeros(f, path, next, size); err != nil {
					return 0, false, err
				}
			}
			if torn {
				return off, false, nil
			}
		}
		if !record(off, ok) {
			return next, next < size, nil
		}
		off = next
	}
	return off, false, nil
}

// zeros reports whether the bytes of f from off to size are all zero. It
// reads with ReadAt, leaving frames' sequential reader where it is; it
// stops at the first byte that is not, so damage costs little to tell
// from a reserve.
func (sc *scanner) zeros(f File, path string, off, size int64) (bool, error) {
	var buf [8 << 10]byte
	for off < size {
		n := int(min(size-off, int64(len(buf))))
		if _, err := f.ReadAt(buf[:n], off); err != nil {
			return false, ioErr("read", path, err)
		}
		if slices.ContainsFunc(buf[:n], func(c byte) bool { return c != 0 }) {
			return false, nil
		}
		off += int64(n)
	}
	return true, nil
}

// truncate cuts a record cut short by a crash off the end of a file and
// returns the file's size after. A file that cannot be cut (a read-only
// file system, say) keeps its tail, never read.
func (sc *scanner) truncate(f File, path string, end, size int64) int64 {
	if err := f.Truncate(end); err != nil {
		sc.s.log.Warn("spool: cannot cut off a torn record", "file", path, "offset", end, "err", err)
		return size
	}
	sc.s.log.Info("spool: torn record cut off", "file", path, "offset", end, "bytes", size-end)
	return end
}
