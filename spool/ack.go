package spool

import (
	"cmp"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"io/fs"
	"os"
	"slices"
)

// ackFiles keeps the acknowledgement files open that Ack wrote last, and
// Ack's buffers. Batches end near the front of the log, so a few files
// serve nearly every Ack. What Ack writes reaches the disk on the
// segments' cadence (SPEC §11.2): with Options.Sync 0 before Ack returns,
// otherwise by the syncer, at most Options.Sync later, so that a power
// loss sends again at most what was acknowledged in the last interval. A
// file evicted with marks not synced is kept open until they are.
type ackFiles struct {
	open    [4]openAck
	next    int       // the slot to evict next
	evicted []openAck // evicted with marks not synced: synced, then closed
	ids     []ID      // Ack's ids, sorted
	buf     []byte    // the ack records of one segment, as written
}

type openAck struct {
	seg   *segment
	f     File
	dirty bool // written since it was last synced
}

// ack is Ack: ids sorted by segment and ordinal, so that each segment
// touched gets one write of its runs.
func (s *Spool) ack(ids []ID) error {
	a := &s.acks
	a.ids = append(a.ids[:0], ids...)
	slices.SortFunc(a.ids, func(x, y ID) int {
		return cmp.Or(cmp.Compare(x.Seg, y.Seg), cmp.Compare(x.N, y.N))
	})
	if s.ackRetry {
		// What an earlier Ack could not write; what this one cannot
		// waits for the next.
		_ = s.rewriteStale() // logged; tried again at the next Ack and at Close
	}
	var first error
	for rest := a.ids; len(rest) > 0; {
		n := 1
		for n < len(rest) && rest[n].Seg == rest[0].Seg {
			n++
		}
		if seg := s.find(rest[0].Seg); seg != nil { // unknown: ignored
			if err := s.ackRuns(seg, rest[:n], s.handedBelow(seg)); err != nil && first == nil {
				first = err
			}
		}
		rest = rest[n:]
	}
	// Acks that finish the active segment free no bytes (it is not
	// removed while it is active), so reclaim wakes nobody; but a
	// waiting AppendWait's record may fit now that makeRoom can retire
	// it. Without this, the waiter would wait for its context to end.
	s.wakeFirst()
	if s.syncEvery == 0 {
		// On the disk before Ack returns: the marks, and the removal of
		// the segments this Ack finished, which wrote no marks.
		if err := s.syncAcks(); err != nil && first == nil {
			first = err
		}
	}
	return first
}

// syncAcks syncs the ack files written since their last sync, and the
// directory if an entry changed since its last sync (Sync 0: before Ack
// returns; Close). A file whose sync failed is stale: rewritten whole at
// the next Ack. s.mu is held.
func (s *Spool) syncAcks() error {
	var errs []error
	sync := func(o *openAck) {
		if err := o.f.Sync(); err != nil {
			s.markStale(o.seg)
			errs = append(errs, ioErr("sync", s.ackPath(o.seg.num), err))
		}
	}
	for i := range s.acks.open {
		if o := &s.acks.open[i]; o.dirty {
			o.dirty = false
			sync(o)
		}
	}
	for i := range s.acks.evicted {
		o := &s.acks.evicted[i]
		sync(o)
		s.closeFile(o.f, s.ackPath(o.seg.num))
	}
	s.acks.evicted = nil
	if s.dirDirty {
		s.syncDir()
	}
	return errors.Join(errs...)
}

// handedBelow returns the ordinal below which seg's records were handed
// (or are done). An id at or above it was never handed: nobody can ack it,
// and Ack ignores it, so that a stray id cannot take a record out of the
// backlog. s.mu is held.
func (s *Spool) handedBelow(seg *segment) uint32 {
	switch {
	case s.cur == nil || seg.num < s.cur.num:
		return seg.records
	case seg == s.cur:
		return s.curN
	}
	return 0
}

// ackRuns marks done the records of seg among ids (sorted, all of seg)
// below limit that were not done, then removes seg if it is finished
// (SPEC §11.6), or writes their runs to its ack file. s.mu is held.
func (s *Spool) ackRuns(seg *segment, ids []ID, limit uint32) error {
	w := ackWriter{buf: s.acks.buf[:0]}
	if seg.ackSize == 0 {
		w.buf = appendHeader(w.buf, ackMagic)
	}
	w.begin()
	var lo, hi uint32
	inRun := false
	for k, id := range ids {
		n := id.N
		if n >= limit || k > 0 && ids[k-1].N == n || seg.done.has(n) {
			continue // never handed, a duplicate, or done already
		}
		if inRun && n == hi {
			hi++
			continue
		}
		if inRun {
			s.markDone(seg, lo, hi)
			w.run(lo, hi)
		}
		lo, hi, inRun = n, n+1, true
	}
	if !inRun {
		return nil
	}
	s.markDone(seg, lo, hi)
	w.run(lo, hi)
	w.end()
	s.acks.buf = w.buf
	if seg.live == 0 {
		if seg == s.active && !s.ackFits(int64(len(w.buf))) {
			// It is finished, and its ack would take the files over
			// MaxBytes: retire it, as makeRoom would, so that it goes
			// and needs no ack. (A record alone in the spool may fill
			// the bound: ackRoom.)
			s.active = nil
			s.retire(seg)
		}
		if seg != s.active && s.reclaim(seg) == nil {
			return nil // its files are gone: no ack to write
		}
	}
	return s.writeAck(seg, w.buf)
}

// Acknowledgement files and MaxBytes. The bound covers the .ack files
// too (SPEC §11.5), and Ack cannot refuse to happen, so:
//   - Appends, and mapped reserves, leave ackRoom of the bound to the .ack
//     files (fits, reserve); except that a record appended when no record
//     is live may use all of it, since its only Ack finishes its segment,
//     which then goes (ackRuns), and needs no .ack.
//   - An .ack file grown past ackCompactAt, or whose next write would take
//     the files over MaxBytes, is rewritten whole from the done set (a few
//     runs, mostly: tens of bytes) instead of appended to.
//   - If even that does not fit, nothing is written: the Ack fails with an
//     error matching ErrFull, its records done for this process, and the
//     file is rewritten at a later Ack, or at Close, when there is room.
// So the files never exceed MaxBytes, and ackRoom makes the last case
// rare: it holds a compacted .ack for every segment of a spool at its
// default segment size, many times over.

// ackRoom is the part of MaxBytes that Appends leave to the .ack files:
// 1/64 of it (16 KiB for the client's smallest spool; SPEC §11.5). s.mu is
// held.
func (s *Spool) ackRoom() int64 {
	if s.maxBytes <= 0 || s.live == 0 {
		return 0
	}
	return s.maxBytes / 64
}

// ackFits reports whether n more bytes of .ack files fit under MaxBytes.
// s.mu is held.
func (s *Spool) ackFits(n int64) bool {
	return s.maxBytes <= 0 || s.bytes+n <= s.maxBytes
}

// ackCompactAt is the size past which seg's .ack file is rewritten whole
// rather than appended to: twice a bound on its compacted size, plus a
// slack (4 KiB, or 1/16 of ackRoom if less) so that a segment acked in
// order, a run or two, is rewritten once every many Acks, not at each.
// Without it an .ack grows by each Ack's runs for as long as its segment
// lives. s.mu is held.
func (s *Spool) ackCompactAt(seg *segment) int64 {
	runs := int64(len(seg.done))
	payload := runs * 2 * binary.MaxVarintLen32
	compact := int64(headerSize) + frameSize*(1+payload/maxAckPayload) + payload
	slack := int64(4 << 10)
	if s.maxBytes > 0 {
		slack = min(slack, s.maxBytes/64/16)
	}
	return 2*compact + slack
}

// rewriteStale rewrites the .ack files that a failed write, or the bound,
// left stale (ackStale), so that a record done in this process is done after
// a restart too (SPEC §11.2). A failure is logged; the file stays stale, for
// the next try. It returns the file system's errors, not the bound's: an
// .ack with no room under MaxBytes only means records that may be handed
// again after a restart, which the log says, not a failure of Close. s.mu is
// held.
func (s *Spool) rewriteStale() error {
	s.ackRetry = false
	var errs []error
	for _, seg := range slices.Clone(s.segs) {
		switch {
		case !seg.ackStale:
			continue
		case seg.live == 0 && seg != s.active:
			if s.reclaim(seg) == nil {
				continue // gone: no ack needed
			}
		}
		if err := s.rewriteAck(seg); err != nil {
			s.warn("spool: rewrite acknowledgements", "err", err)
			if !errors.Is(err, ErrFull) {
				errs = append(errs, err)
			}
		}
	}
	return errors.Join(errs...)
}

// ackWriter builds ack records: uvarint pairs (first ordinal, count), a
// record cut every maxAckPayload bytes.
type ackWriter struct {
	buf   []byte
	start int // where the record being built begins
}

func (w *ackWriter) begin() {
	w.start = len(w.buf)
	w.buf = append(w.buf, 0, 0, 0, 0, 0, 0, 0, 0) // its frame, filled by end
}

func (w *ackWriter) run(lo, hi uint32) {
	if len(w.buf)-w.start-frameSize >= maxAckPayload {
		w.end()
		w.begin()
	}
	w.buf = binary.AppendUvarint(w.buf, uint64(lo))
	w.buf = binary.AppendUvarint(w.buf, uint64(hi-lo))
}

func (w *ackWriter) end() {
	p := w.buf[w.start+frameSize:]
	binary.LittleEndian.PutUint32(w.buf[w.start:], uint32(len(p)))
	binary.LittleEndian.PutUint32(w.buf[w.start+4:], crc32.Checksum(p, castagnoli))
}

// writeAck appends buf, ack records (after the header for a new file), to
// seg's ack file, in one write; or rewrites the file whole when it is
// stale, has grown past ackCompactAt, or buf would take the files over
// MaxBytes. A failed write is cut off again, and the file marked stale:
// rewritten whole at the next Ack, and at Close, so that a torn record
// never sits ahead of later ones, and the runs not written are written
// after all (with Sync 0 a record whose fsync failed is acked so that a
// restart does not send it: its Append returned an error). s.mu is held.
func (s *Spool) writeAck(seg *segment, buf []byte) error {
	n := int64(len(buf))
	if seg.ackStale || !s.ackFits(n) || seg.ackSize+n > s.ackCompactAt(seg) {
		return s.rewriteAck(seg)
	}
	path := s.ackPath(seg.num)
	o, err := s.acks.file(s, seg, path)
	if err != nil {
		s.markStale(seg)
		return ioErr("open", path, err)
	}
	f := o.f
	w, err := f.Write(buf)
	if err == nil && w < len(buf) {
		err = io.ErrShortWrite
	}
	if w > 0 {
		o.dirty = true
		if s.syncEvery > 0 {
			s.markDirty()
		}
	}
	if err == nil {
		seg.ackSize += int64(w)
		s.bytes += int64(w)
		return nil
	}
	s.markStale(seg)
	if w > 0 {
		if terr := f.Truncate(seg.ackSize); terr != nil {
			seg.ackSize += int64(w) // on disk, torn, counted
			s.bytes += int64(w)
		}
	}
	if seg.ackSize == 0 {
		// This write created the file, and nothing of it stays: no file
		// either (rewriteAck writes it whole when it can), so that no
		// empty .ack outlasts the failure (a full disk).
		s.closeAck(seg)
		if rerr := s.fs.Remove(path); rerr != nil && !errors.Is(rerr, fs.ErrNotExist) {
			s.warn("spool: remove an empty acknowledgement file", "file", path, "err", rerr)
		} else {
			s.dirChanged()
		}
	}
	return ioErr("write", path, err)
}

// markStale marks seg's .ack file for a rewrite at the next Ack and at
// Close. s.mu is held.
func (s *Spool) markStale(seg *segment) {
	seg.ackStale, s.ackRetry = true, true
}

// errAckFull is rewriteAck's error when even the compacted .ack file does
// not fit under MaxBytes. It is written at a later Ack or at Close if room
// comes back by then.
func errAckFull(path string) error {
	return fmt.Errorf("%w: no room under MaxBytes for the acknowledgements in %s: records done may be handed again after a restart", ErrFull, path)
}

// rewriteAck writes seg's ack file anew from the done set, into a
// temporary file that is synced, then renamed over it: its compacted form,
// a record per 64 KiB of runs. A power loss leaves the old file or the new
// one, never one of neither (a rename before the data is on the disk can
// leave a file of zeros, or none); the directory is synced with the next
// sync of the marks (before Ack returns with Sync 0, within Sync
// otherwise), and until then the old file holds what was synced of them.
// If that would take the files over MaxBytes, or fails, the file stays as
// it was, stale. s.mu is held.
func (s *Spool) rewriteAck(seg *segment) error {
	w := ackWriter{buf: appendHeader(s.acks.buf[:0], ackMagic)}
	w.begin()
	for _, sp := range seg.done {
		w.run(sp.lo, sp.hi)
	}
	w.end()
	s.acks.buf = w.buf
	path := s.ackPath(seg.num)
	if !s.ackFits(int64(len(w.buf)) - seg.ackSize) {
		s.markStale(seg)
		return errAckFull(path)
	}
	s.closeAck(seg)
	tmp := path + ".tmp"
	f, err := s.fs.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o600)
	if err != nil {
		s.markStale(seg)
		return ioErr("create", tmp, err)
	}
	n, err := f.Write(w.buf)
	if err == nil && n < len(w.buf) {
		err = io.ErrShortWrite
	}
	if err == nil {
		err = f.Sync()
	}
	err = errors.Join(err, f.Close())
	if err == nil {
		err = s.fs.Rename(tmp, path)
	}
	if err != nil {
		s.fs.Remove(tmp)
		s.markStale(seg)
		return ioErr("rewrite", path, err)
	}
	s.dirChanged() // the rename on the disk with the next sync: until then the old file stands, synced
	s.bytes += int64(len(w.buf)) - seg.ackSize
	seg.ackSize, seg.ackStale = int64(len(w.buf)), false
	return nil
}

// file returns seg's ack file open for appending, created (empty) if seg
// has none. The file it evicts is closed, or, with marks not synced, kept
// for the next sync (evicted). s.mu is held.
func (a *ackFiles) file(s *Spool, seg *segment, path string) (*openAck, error) {
	for i := range a.open {
		if a.open[i].seg == seg {
			return &a.open[i], nil
		}
	}
	flag := os.O_WRONLY | os.O_APPEND
	if seg.ackSize == 0 {
		flag |= os.O_CREATE | os.O_TRUNC
	}
	f, err := s.fs.OpenFile(path, flag, 0o600)
	if err != nil {
		return nil, err
	}
	if flag&os.O_CREATE != 0 {
		s.dirChanged() // maybe a new entry
	}
	slot := &a.open[a.next]
	a.next = (a.next + 1) % len(a.open)
	switch {
	case slot.dirty:
		a.evicted = append(a.evicted, *slot)
	case slot.f != nil:
		s.closeFile(slot.f, s.ackPath(slot.seg.num))
	}
	*slot = openAck{seg: seg, f: f}
	return slot, nil
}

// unsynced reports whether an ack file holds marks not synced.
func (a *ackFiles) unsynced() bool {
	for _, o := range a.open {
		if o.dirty {
			return true
		}
	}
	return len(a.evicted) > 0
}

// closeAck closes seg's ack file, if it is open, without a sync: the file
// is removed, or rewritten whole and synced. s.mu is held.
func (s *Spool) closeAck(seg *segment) {
	a := &s.acks
	for i := range a.open {
		if a.open[i].seg == seg {
			s.closeFile(a.open[i].f, s.ackPath(seg.num))
			a.open[i] = openAck{}
		}
	}
	a.evicted = slices.DeleteFunc(a.evicted, func(o openAck) bool {
		if o.seg == seg {
			s.closeFile(o.f, s.ackPath(seg.num))
		}
		return o.seg == seg
	})
}

// closeAcks syncs the ack files with marks not synced, and the directory,
// and closes every ack file (at Close, and when Open fails). s.mu is held.
func (s *Spool) closeAcks() error {
	err := s.syncAcks()
	for i := range s.acks.open {
		if o := s.acks.open[i]; o.f != nil {
			if cerr := o.f.Close(); cerr != nil {
				err = errors.Join(err, ioErr("close", s.ackPath(o.seg.num), cerr))
			}
		}
		s.acks.open[i] = openAck{}
	}
	return err
}
