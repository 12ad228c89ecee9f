package spool

import (
	"hash/crc32"
	"io"
	"os"
	"slices"
)

// readAhead is how much Load reads from a segment at a time: a backlog of
// ~300-byte records costs one read per ~800 records, not one each.
const readAhead = 256 << 10

// Load hands backlog records to fn, oldest first, until fn returns false
// (that record stays first in the backlog) or the backlog is empty.
// recovered is true for a record found at Open. data is valid only during
// the call. Records that are done are not handed. A record whose checksum
// fails, or that a stretch which cannot be framed holds, is counted and
// logged, and handed to damaged instead, with its bytes as read (nil when
// they cannot be framed; valid only during the call), which returns false
// when it has no room for it (it then stays first); the caller reports and
// acknowledges it like any other. With a nil damaged it is skipped and
// marked done. Load returns the number of records fn took, and an error
// wrapping the file system's when a read failed (the record stays in the
// backlog, to be read again).
func (s *Spool) Load(fn func(id ID, data []byte, recovered bool) bool, damaged func(id ID, data []byte, recovered bool) bool) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return 0, ErrClosed
	}
	return s.load(fn, damaged)
}

// load is Load's loop, s.mu held. It stays apart from Load: merged into
// it, BenchmarkLoad measured 2-3% slower (issue 26, interleaved A/B).
func (s *Spool) load(fn func(id ID, data []byte, recovered bool) bool, damaged func(id ID, data []byte, recovered bool) bool) (int, error) {
	// The backlog is read from the cursor, a frame at a time, each
	// checked before it is handed. A stretch that cannot be framed (a bad
	// length) sets the cursor's offset to the segment's end with ordinals
	// left: those records are damaged, one by one (SPEC §11.8).
	taken := 0
	for s.stats.Backlog > 0 {
		seg := s.cur
		if seg == nil {
			// Cannot be while records wait: a backlog not on disk.
			s.log.Warn("spool: backlog without records", "backlog", s.stats.Backlog)
			s.stats.Backlog = 0
			break
		}
		if s.curN >= seg.records {
			s.next(seg)
			s.reclaimIfDone(seg)
			continue
		}
		n := s.curN
		if s.curOff >= seg.end { // in a stretch that cannot be framed
			if seg.done.has(n) || s.handDamaged(seg, n, nil, damaged) {
				s.curN = n + 1
				continue
			}
			break
		}
		head, err := s.rd.get(s, seg, s.curOff, frameSize)
		if err != nil {
			return taken, err
		}
		length, sum := frameHead(head)
		if !framable(length) || s.curOff+frameSize+int64(length) > seg.end {
			// Damage since Open, or since the write: the rest of the
			// segment cannot be framed.
			s.damage(seg, n, "length", length)
			seg.damaged = true
			if seg == s.active {
				s.rotate = true
			}
			s.curOff = seg.end
			continue
		}
		next := s.curOff + frameSize + int64(length)
		if seg.done.has(n) {
			s.curN, s.curOff = n+1, next
			continue
		}
		rec, err := s.rd.get(s, seg, s.curOff, frameSize+int(length))
		if err != nil {
			return taken, err
		}
		data := rec[frameSize:]
		if crc32.Checksum(data, castagnoli) != sum {
			if seg.reported.add(n, n+1) > 0 { // not counted yet
				s.damage(seg, n, "checksum", sum)
			}
			if !s.handDamaged(seg, n, data, damaged) {
				break
			}
			s.curN, s.curOff = n+1, next
			s.reclaimIfDone(seg)
			continue
		}
		if !fn(ID{Seg: seg.num, N: n}, data, seg.recovered) {
			break
		}
		taken++
		s.stats.Handed++
		s.stats.Backlog--
		s.curN, s.curOff = n+1, next
	}
	return taken, nil
}

// next moves the cursor from seg, its segment, to the start of the one
// after it, and closes what Load read of seg. s.mu is held.
func (s *Spool) next(seg *segment) {
	if i := slices.Index(s.segs, seg) + 1; i > 0 && i < len(s.segs) {
		s.cur, s.curN, s.curOff = s.segs[i], 0, int64(headerSize)
	} else { // the last segment: the next record appended starts the backlog
		s.cur, s.curN, s.curOff = nil, 0, 0
	}
	if s.rd.seg == seg {
		s.rd.drop()
	}
}

// damage counts and logs one damaged record (what is "checksum") or
// stretch ("length"), found by Load at ordinal n of seg (SPEC §11.8).
// s.mu is held.
func (s *Spool) damage(seg *segment, n uint32, what string, value uint32) {
	s.stats.Corrupt++
	s.log.Warn("spool: damaged record skipped", "file", s.segPath(seg.num), "ordinal", n, "bad", what, "value", value)
}

// handDamaged takes the damaged record n of seg out of the backlog: handed
// to damaged with its bytes as read (nil when they cannot be framed),
// which reports it and acknowledges it later, or, without damaged, marked
// done at once. It returns false when damaged has no room for it now: it
// stays first in the backlog. s.mu is held.
func (s *Spool) handDamaged(seg *segment, n uint32, data []byte, damaged func(id ID, data []byte, recovered bool) bool) bool {
	if damaged == nil {
		s.stats.Backlog = max(s.stats.Backlog-int64(s.markDone(seg, n, n+1)), 0)
		return true
	}
	if !damaged(ID{Seg: seg.num, N: n}, data, seg.recovered) {
		return false
	}
	s.stats.Handed++
	s.stats.Backlog--
	return true
}

// reclaimIfDone removes seg if all its records are done and it is not
// the active segment (SPEC §11.6). s.mu is held.
func (s *Spool) reclaimIfDone(seg *segment) {
	if seg.live == 0 && seg != s.active {
		_ = s.reclaim(seg) // logged; tried again at Close
	}
}

// reader is Load's read-ahead: a stretch of one segment, read at once.
// Segments are append-only, so bytes once read stay right.
type reader struct {
	seg *segment
	f   File // its own read-only file, for a segment not active
	buf []byte
	off int64 // the file offset of buf[0]
	n   int   // bytes of buf read
}

// get returns n bytes of seg at off, which the caller checked lie before
// seg.end; they are valid until the next get.
func (r *reader) get(s *Spool, seg *segment, off int64, n int) ([]byte, error) {
	if r.seg == seg && off >= r.off && off+int64(n) <= r.off+int64(r.n) {
		i := int(off - r.off)
		return r.buf[i : i+n], nil
	}
	if r.seg != seg {
		r.drop()
		r.seg = seg
	}
	f := seg.f
	if f == nil {
		if r.f == nil {
			path := s.segPath(seg.num)
			rf, err := s.fs.OpenFile(path, os.O_RDONLY, 0)
			if err != nil {
				r.seg = nil
				return nil, ioErr("open", path, err)
			}
			r.f = rf
		}
		f = r.f
	}
	want := int(min(int64(max(n, readAhead)), seg.end-off))
	if cap(r.buf) < want {
		r.buf = make([]byte, max(want, readAhead))
	}
	got, err := f.ReadAt(r.buf[:want], off)
	if got < n {
		r.n = 0
		if err == nil || err == io.EOF {
			err = io.ErrUnexpectedEOF // the file is shorter than the spool wrote it
		}
		return nil, ioErr("read", s.segPath(seg.num), err)
	}
	r.off, r.n = off, got
	return r.buf[:n], nil
}

// drop forgets what was read, and closes the segment's file.
func (r *reader) drop() {
	if r.f != nil {
		r.f.Close()
	}
	r.seg, r.f, r.n = nil, nil, 0
}
