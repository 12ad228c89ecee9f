package spool

import (
	"cmp"
	"errors"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"slices"
)

// segment is what the spool keeps in memory of one segment file: counts
// and the set of done ordinals, never anything per record, so a backlog of
// millions of records on disk costs a few words per segment.
type segment struct {
	num uint64
	f   File    // the active segment's file, read-write; nil for every other
	m   *mapped // the active segment's file mapped for appends, or nil: appends are writes

	size    int64  // bytes in the file: while mapped, all it reserved
	end     int64  // where its framed records end: size, or where damage begins (or, mapped, the reserve)
	records uint32 // records framed in it, done or not
	live    uint32 // of them, not done
	// done holds the ordinals acknowledged, found damaged, or whose sync
	// failed: none of them is handed (again).
	done ranges
	// reported holds the ordinals Load found damaged and counted, so that
	// one it hands back later (no room then) is not counted twice.
	reported ranges

	recovered bool // found at Open: only read, never written
	damaged   bool // holds a stretch that cannot be framed: kept aside, not removed
}

// mustRotate reports whether an Append of a frame of frame bytes must start a
// new segment rather than go to the active one. A record larger than a
// segment gets one of its own rather than being refused. A mapped segment
// ends where its reserve does: it was sized for its first record.
func (s *Spool) mustRotate(frame int64) bool {
	a := s.active
	switch {
	case a == nil || s.rotate || a.records == math.MaxUint32:
		return true
	case a.m != nil:
		return a.end+frame > a.size
	}
	return a.records > 0 && a.end+frame > s.cutAt
}

// find returns the segment numbered num, or nil.
func (s *Spool) find(num uint64) *segment {
	i, ok := slices.BinarySearchFunc(s.segs, num, func(seg *segment, n uint64) int { return cmp.Compare(seg.num, n) })
	if !ok {
		return nil
	}
	return s.segs[i]
}

// retire ends seg's time as the active segment: its mapping ends, its
// file is closed, and it is removed if all its records are done. A file
// that may hold records not synced is closed by the next sync instead
// (syncActive), which syncs it first with the active file, outside the
// lock: the syncer's with Sync > 0, with Sync 0 the group commit of the
// Appends waiting for those records. So the Append that rotates does not
// wait for a segment's fsync. s.mu is held; seg is no longer s.active.
func (s *Spool) retire(seg *segment) {
	s.unmap(seg)
	if s.synced < s.written {
		s.retired = append(s.retired, retiredFile{seg.f, seg.num, s.written})
		s.markDirty()
	} else {
		s.closeFile(seg.f, s.segPath(seg.num)) // or the sync running outside the lock does
	}
	seg.f = nil
	s.reclaimIfDone(seg)
}

// reclaim removes seg, whose records are all done and which is not the
// active segment (SPEC §11.6): its file goes, and its bytes come back to the bound,
// which may let a waiting AppendWait in. A segment with damage is renamed
// aside instead, for whoever looks into it. Its runs stay in DONE until
// DONE is compacted, after the removal is on the disk. s.mu is held.
func (s *Spool) reclaim(seg *segment) error {
	i := slices.Index(s.segs, seg) // mostly one of the first few
	if i < 0 {
		return nil // removed already
	}
	if s.rd.seg == seg {
		s.rd.drop()
	}
	path := s.segPath(seg.num)
	// Its file, if it waits in s.retired for the syncer, is closed now: all
	// its records are done, so nothing in it needs the disk, and a removed
	// file's space comes back only once it is closed. A file being synced
	// outside the lock is closed as that sync ends.
	if k := slices.IndexFunc(s.retired, func(r retiredFile) bool { return r.num == seg.num }); k >= 0 {
		s.closeFile(s.retired[k].f, path)
		s.retired = slices.Delete(s.retired, k, k+1)
	}
	var err error
	if seg.damaged {
		err = s.fs.Rename(path, filepath.Join(s.dir, fileName(seg.num, corruptExt)))
	} else {
		err = s.fs.Remove(path)
	}
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		s.log.Warn("spool: remove a finished segment", "file", path, "err", err)
		return ioErr("remove", path, err)
	}
	s.dirChanged()
	if !seg.damaged {
		s.stats.Bytes -= seg.size // a .corrupt file stays, counted, till someone removes it
	}
	if s.cur == seg {
		// Every record left in seg is done: the backlog goes on in the
		// next segment.
		s.next(seg)
	}
	s.segs = slices.Delete(s.segs, i, i+1)
	s.wakeFirst()
	return nil
}

// markDone marks seg's ordinals lo to hi-1 done and returns how many were
// not done before; the counts of live records follow. s.mu is held.
func (s *Spool) markDone(seg *segment, lo, hi uint32) uint32 {
	added := seg.done.add(lo, min(hi, seg.records))
	seg.live -= added
	s.stats.Records -= int64(added)
	return added
}

// createSegment creates segment num, header written, for the new active
// segment, mapped for appends, capacity bytes reserved (or less on a
// nearly full disk, need at least), where the system can (mmap_linux.go);
// its m is nil where it cannot. It adds it to the spool's segments, and
// marks num used. A file left half-made is removed again; if it cannot
// be, createSegment returns its error with the segment it leaves, of no
// records, never to be active. s.mu is held.
func (s *Spool) createSegment(num uint64, capacity, need int64) (*segment, error) {
	path := s.segPath(num)
	f, err := s.fs.OpenFile(path, os.O_RDWR|os.O_CREATE|os.O_EXCL|os.O_APPEND, 0o600)
	if err != nil {
		return nil, ioErr("create", path, err)
	}
	seg := &segment{num: num, f: f, size: int64(headerSize), end: int64(headerSize)}
	n, err := writeAll(f, appendHeader(s.wbuf[:0], segMagic))
	if err != nil {
		err = ioErr("write", path, err)
	} else if seg.m, err = s.mapSegment(f, path, capacity, need); seg.m != nil {
		seg.size = seg.m.size // on disk from now, zeros past the records
	}
	if err != nil {
		seg.f, seg.size = nil, int64(n) // what the header write left, if Stat cannot say
		if st, serr := f.Stat(); serr == nil {
			seg.size = st.Size() // a reserve refused may have grown it
		}
		seg.end = min(seg.size, int64(headerSize))
		f.Close()
		// A header at most, and a reserve: nothing of a record. If it
		// cannot be removed, it stays on disk, a segment of no records:
		// its number used, its bytes counted against MaxBytes and in
		// Stats.Bytes until a later try removes it (the next rotation,
		// Close), or the next Open does (a file shorter than a header,
		// or one holding no record).
		rerr := s.fs.Remove(path)
		if rerr == nil || errors.Is(rerr, fs.ErrNotExist) {
			return nil, err
		}
		s.log.Warn("spool: remove a segment whose creation failed", "file", path, "err", rerr)
	} else {
		s.syncDir()
	}
	s.segs = append(s.segs, seg)
	s.stats.Bytes += seg.size
	s.useNumber(num)
	return seg, err
}

// unmap ends seg's mapping, if it has one, and cuts the file back to its
// records, so that a segment no longer appended to is exactly what the
// write path would have left, and gives the rest of its reserve back to
// the bound. A file that cannot be cut keeps its zero tail (which Open
// cuts), counted. s.mu is held.
func (s *Spool) unmap(seg *segment) {
	if seg.m == nil {
		return
	}
	if err := seg.m.unmap(); err != nil {
		s.log.Warn("spool: unmap segment", "file", s.segPath(seg.num), "err", err)
	}
	seg.m = nil
	if seg.size == seg.end {
		return
	}
	if err := seg.f.Truncate(seg.end); err != nil {
		s.log.Warn("spool: cut a segment back to its records", "file", s.segPath(seg.num), "offset", seg.end, "err", err)
		return
	}
	s.stats.Bytes -= seg.size - seg.end
	seg.size = seg.end
}

// syncDir makes the directory's entries durable, so that a file created
// and synced is found after a power loss, and a file removed or renamed
// stays so. s.mu is held.
func (s *Spool) syncDir() {
	s.dirDirty = false
	s.syncDirNow()
}

// syncDirNow syncs the directory. Best effort: some systems cannot open or
// sync a directory.
func (s *Spool) syncDirNow() {
	d, err := s.fs.OpenFile(s.dir, os.O_RDONLY, 0)
	if err != nil {
		return
	}
	d.Sync()
	d.Close()
}
