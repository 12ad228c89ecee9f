package spool

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"math"

	"github.com/dualpath/analytics-go/internal/waitline"
)

// errEmpty and errTooLarge refuse records the format cannot hold.
var (
	errEmpty    = fmt.Errorf("spool: a record of no bytes")
	errTooLarge = fmt.Errorf("spool: a record over %d bytes", maxRecord)
)

// appendLocked is Append once the spool is known not sealed: one write of
// the framed record to the active segment (a new one if needed), the
// group commit when Sync is 0, then the record handed or put in the
// backlog. s.mu is held (and released during a group commit's fsync).
func (s *Spool) appendLocked(data []byte, direct func(ID) bool) (ID, error) {
	switch {
	case len(data) == 0:
		return ID{}, errEmpty
	case len(data) > maxRecord:
		return ID{}, errTooLarge
	}
	frame := int64(frameSize + len(data))
	if !s.makeRoom(frame) {
		return ID{}, ErrFull
	}
	seg, off, err := s.store(data, frame)
	if err != nil && noSpace(err) && seg != nil && seg.records > 0 && seg.live == 0 {
		// The disk is full, and the segment's records, all done, hold
		// space no Ack gives back while it is active: the next segment
		// is begun without it (rotateSegment), and the record goes there.
		seg, off, err = s.store(data, frame)
	}
	if err != nil {
		return ID{}, err
	}
	id := ID{Seg: seg.num, N: seg.records}
	seg.end += frame
	seg.records++
	seg.live++
	s.stats.Records++
	s.written++
	seq := s.written
	if s.syncEvery > 0 {
		s.markDirty()
	} else {
		err = s.commit(seq)
	}
	s.decided = seq
	s.cond.Broadcast() // the next record's Append may decide
	if err != nil {
		// The record is in the file, but not known to be on the disk:
		// it is not accepted. It is done rather than handed, and
		// acknowledged, so that a restart does not send it either.
		s.done.begin(s.done.buf[:0])
		s.ackRuns(seg, []ID{id}, seg.records)
		if aerr := s.flushDone(); aerr != nil {
			s.log.Warn("spool: acknowledge a record whose sync failed", "err", aerr)
		}
		return ID{}, err
	}
	// Handed to direct if the backlog is empty and direct takes it;
	// otherwise it joins the backlog.
	switch {
	case s.stats.Backlog > 0:
		s.stats.Backlog++
	case direct != nil && direct(id):
		s.stats.Handed++
		s.cur, s.curN, s.curOff = seg, id.N+1, off+frame
	default:
		s.stats.Backlog = 1
		s.cur, s.curN, s.curOff = seg, id.N, off
	}
	return id, nil
}

// store writes data, framed in frame bytes, at the end of the active
// segment (a new one if needed), and returns the segment and the offset
// written at. The segment is nil when none could be created. s.mu is held.
func (s *Spool) store(data []byte, frame int64) (*segment, int64, error) {
	if s.mustRotate(frame) {
		if err := s.rotateSegment(frame); err != nil {
			return nil, 0, err
		}
	}
	seg := s.active
	off := seg.end
	if seg.m != nil {
		// Stored in the page cache through the mapping, straight from
		// data: no write, and no copy into wbuf first.
		if err := seg.m.put(off, data); err != nil {
			s.rotate = true // the mapping may fault again: abandon it
			return seg, off, ioErr("write", s.segPath(seg.num), err)
		}
		return seg, off, nil
	}
	// One buffer, one write: a record never reaches the file in pieces
	// that another write could come between.
	s.wbuf = appendFrame(s.wbuf[:0], data)
	n, err := writeAll(seg.f, s.wbuf)
	if err == nil {
		seg.size += frame
		s.stats.Bytes += frame
		return seg, off, nil
	}
	// A failed write, of which n bytes reached the file: the bytes are
	// cut off again; and appends go on in a new segment, so that bytes
	// that could not be cut off never sit ahead of a record (the next
	// Open sees them as a torn tail), and so that a segment of done
	// records does not hold a full disk's space: a segment holding none
	// (its header only) stays active if its bytes were cut off, so that
	// no segment number goes to a try. A disk found full cuts later
	// written segments at half this one's size (cutAt): one that held
	// the disk's free space would fill it again (SPEC §11.9).
	if seg.records > 0 {
		s.rotate = true
		if noSpace(err) {
			s.cutAt = min(s.cutAt, max(off/2, minCutAt))
		}
	}
	path := s.segPath(seg.num)
	if n > 0 {
		if terr := seg.f.Truncate(off); terr != nil {
			seg.size = off + int64(n) // on disk, counted; not framed: end stays
			s.stats.Bytes += int64(n)
			s.rotate = true
			s.log.Warn("spool: cut off a failed write", "file", path, "offset", off, "err", terr)
		}
	}
	return seg, off, ioErr("write", path, err)
}

// minCutAt is the least size at which a written segment is closed after a
// disk was found full: any smaller would be mostly headers and files.
const minCutAt = 4 << 10

// rotateSegment starts a new active segment, for a first record of frame
// bytes, and retires the old one. An old one whose records are all done
// goes first, so that its space is there for the new one's reserve (a
// nearly full disk, SPEC §11.9). If the new one cannot be created, the old one, if
// it stays, stays active (and s.rotate set, so that the next Append
// tries again); its number is tried again too, unless a file of it is
// left. s.mu is held.
func (s *Spool) rotateSegment(frame int64) error {
	if s.nextNum == 0 {
		s.rotate = true
		return fmt.Errorf("spool: %s holds segment number %d, the largest there is: no segment can follow it (the records there are still delivered; move the directory's files away to append again)", s.dir, uint64(math.MaxUint64))
	}
	for i := len(s.segs) - 1; i >= 0; i-- {
		if seg := s.segs[i]; seg.records == 0 && seg != s.active {
			_ = s.reclaim(seg) // a file an earlier try left: room back, if the disk lets us now
		}
	}
	if a := s.active; a != nil {
		// No record goes to it again, even if the new segment cannot be
		// created (s.rotate stays set): cut its reserve back first, so
		// that the new reserve is sized with the room it gave back.
		s.unmap(a)
		if a.live == 0 {
			s.active = nil
			s.retire(a) // and removed
		}
	}
	num := s.nextNum
	seg, err := s.createSegment(num, s.reserve(frame), int64(headerSize)+frame)
	if err != nil {
		s.rotate = true
		if errors.Is(err, fs.ErrExist) {
			s.useNumber(num) // a file of that name is there: never tried again
		}
		return err
	}
	old := s.active
	s.active, s.rotate = seg, false
	if old != nil {
		s.retire(old)
	}
	return nil
}

// useNumber marks segment number num used: the next segment gets the one
// after it, or none (nextNum 0) if it is the last. s.mu is held.
func (s *Spool) useNumber(num uint64) {
	if s.nextNum != 0 && num >= s.nextNum {
		s.nextNum = num + 1 // 0 after math.MaxUint64
	}
}

// makeRoom reports whether a record of frame bytes fits under MaxBytes.
// An active segment whose records are all done holds room that no Ack
// will give back, so it is retired (and removed) to make room. s.mu is
// held.
func (s *Spool) makeRoom(frame int64) bool {
	if s.fits(frame) {
		return true
	}
	if a := s.active; a != nil && a.live == 0 && a.records > 0 {
		s.active = nil
		s.retire(a)
		return s.fits(frame)
	}
	return false
}

// fits reports whether a record of frame bytes, and the header of a new
// segment if it needs one, fit under MaxBytes now, ackRoom left to DONE
// (ack.go; SPEC §11.5). A mapped active segment's room is counted
// already: a record that goes there fits. s.mu is held.
func (s *Spool) fits(frame int64) bool {
	if s.maxBytes <= 0 {
		return true
	}
	need := frame
	switch {
	case s.mustRotate(frame):
		need += int64(headerSize)
	case s.active.m != nil:
		return true
	}
	return s.stats.Bytes+need <= s.maxBytes-s.ackRoom()
}

// reserve is the size of a new segment mapped for a first record of
// frame bytes: SegmentBytes (or the record's own, if larger), but no more
// than MaxBytes leaves, ackRoom kept for DONE, since the whole
// reserve is on disk and counted; fits made sure that the header and the
// record fit. s.mu is held.
func (s *Spool) reserve(frame int64) int64 {
	size := max(s.segBytes, int64(headerSize)+frame)
	if s.maxBytes > 0 {
		size = min(size, s.maxBytes-s.ackRoom()-s.stats.Bytes)
	}
	return max(size, int64(headerSize)+frame)
}

// waiter is an AppendWait waiting for room for a record of Value bytes,
// framed. It is woken when it should look again: it is first in line and
// its record fits, or the spool was sealed.
type waiter = waitline.Waiter[int64]

// AppendWait is Append that, when the record would take the files over
// MaxBytes, waits for room (a segment removed) until ctx ends, in line
// with other waiting calls, first come first served. When ctx ends first
// it returns an error matching both ErrFull and ctx.Err(). Seal and Close
// end every wait with ErrClosed.
// It waits in the same line as queue.PushWait's.
func (s *Spool) AppendWait(ctx context.Context, data []byte, direct func(ID) bool) (ID, error) {
	frame := int64(frameSize + len(data))
	// A record that exceeds MaxBytes even in an empty spool is refused at
	// once: waiting for room is pointless.
	neverFits := s.maxBytes > 0 && frame+int64(headerSize) > s.maxBytes
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.sealed {
		return ID{}, ErrClosed
	}
	if s.line.First() == nil || neverFits || len(data) == 0 || len(data) > maxRecord {
		id, err := s.appendLocked(data, direct)
		if err != ErrFull || neverFits {
			return id, err
		}
	}
	if ctx.Err() != nil {
		return ID{}, fullError(ctx.Err())
	}
	w := &waiter{Value: frame}
	s.line.Join(w)
	for {
		s.mu.Unlock()
		woken := w.Wait(ctx)
		s.mu.Lock()
		switch {
		case !woken || s.sealed:
			s.leave(w)
			if s.sealed {
				return ID{}, ErrClosed
			}
			return ID{}, fullError(ctx.Err())
		case s.line.First() == w && s.makeRoom(frame):
			id, err := s.appendLocked(data, direct)
			if err != ErrFull { // ErrFull: an Append took the room first
				s.leave(w) // wakes the next in line if its record fits too
				return id, err
			}
		}
		// not its turn yet, or no room: keep the place
	}
}

// fullError is AppendWait's error when ctx ended first: it matches
// ErrFull and ctx's error.
func fullError(ctxErr error) error {
	return fmt.Errorf("%w: %w", ErrFull, ctxErr)
}

// leave takes w out of the line, wherever it is; if it was first, the new
// first is woken when its record fits. s.mu is held.
func (s *Spool) leave(w *waiter) {
	if s.line.Leave(w) {
		s.wakeFirst()
	}
}

// wakeFirst wakes the first waiter in line if its record fits now (after
// the room made by retiring a done active segment). s.mu is held.
func (s *Spool) wakeFirst() {
	if w := s.line.First(); w != nil && s.makeRoom(w.Value) {
		w.Wake()
	}
}
