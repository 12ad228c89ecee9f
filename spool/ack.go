package spool

import (
	"cmp"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"slices"
)

// doneFile is the spool's one acknowledgement file, DONE: a log of the
// runs of records that are done, each (segment, first ordinal, count),
// appended to by every Ack and read at Open. What Ack writes reaches the
// disk on the segments' cadence (SPEC §11.2): with Options.Sync 0 before
// Ack returns, otherwise by the syncer, at most Options.Sync later, so
// that a power loss sends again at most what was acknowledged in the last
// interval. Runs of segments since removed stay in it until it is
// compacted: rewritten whole from the runs of the segments there are.
type doneFile struct {
	f     File  // open for appending; nil until an Ack writes
	size  int64 // its bytes on disk; 0 when there is none
	dirty bool  // written since it was last synced
	// stale: it lacks runs that are done (a write or sync failed, or
	// found no room under MaxBytes) or holds a torn record: it is
	// rewritten whole at the next Ack and at Close.
	stale bool
	// aside is the size of a DONE.corrupt found at Open: replaced, and
	// no longer counted, if this Open sets DONE aside too.
	aside int64
	ids   []ID   // Ack's ids, sorted
	runs  []span // one segment's new runs, in Ack
	// buf builds the done records of one write to DONE, each framed as a
	// segment's record is (appendFrame); pay is the payload of the one
	// being built: uvarint triples (segment, first ordinal, count), cut
	// into a record every maxAckPayload bytes. A run added leaves pay
	// never empty: so an empty pay says none was.
	buf []byte
	pay []byte
}

// Ack records that the records ids are done. They are not handed again,
// after a restart either, and a segment whose records are all done is
// removed, unless it is the one being written (SPEC §11.6). ids may be in
// any order and from any segments. The error wraps the file system's, or matches ErrFull
// when even compacted the acknowledgements would take the files over
// MaxBytes; the records are then done for this process, their
// acknowledgements are written again at the next Ack and at Close, and
// they may be handed again after a restart if those fail too.
func (s *Spool) Ack(ids []ID) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return ErrClosed
	}
	// ids are sorted by segment and ordinal, so that each segment's
	// new runs are found in one pass, and all of them go to DONE in one
	// write.
	d := &s.done
	d.ids = append(d.ids[:0], ids...)
	slices.SortFunc(d.ids, func(x, y ID) int {
		return cmp.Or(cmp.Compare(x.Seg, y.Seg), cmp.Compare(x.N, y.N))
	})
	d.begin(d.buf[:0])
	for rest := d.ids; len(rest) > 0; {
		n := 1
		for n < len(rest) && rest[n].Seg == rest[0].Seg {
			n++
		}
		if seg := s.find(rest[0].Seg); seg != nil { // unknown: ignored
			s.ackRuns(seg, rest[:n], s.handedBelow(seg))
		}
		rest = rest[n:]
	}
	err := s.flushDone()
	// Acks that finish the active segment free no bytes (it is not
	// removed while it is active), so reclaim wakes nobody; but a
	// waiting AppendWait's record may fit now that makeRoom can retire
	// it. Without this, the waiter would wait for its context to end.
	s.wakeFirst()
	if s.syncEvery == 0 {
		// On the disk before Ack returns: the runs, and the removal of
		// the segments this Ack finished, which wrote none.
		err = errors.Join(err, s.syncAcks())
	}
	return err
}

// syncAcks syncs DONE if it was written since its last sync, and the
// directory if an entry changed since its last sync (Sync 0: before Ack
// returns; Close). If the sync fails DONE is stale: rewritten whole at the
// next Ack. s.mu is held.
func (s *Spool) syncAcks() error {
	var err error
	if d := &s.done; d.dirty {
		d.dirty = false
		if serr := d.f.Sync(); serr != nil {
			d.stale = true
			err = ioErr("sync", s.donePath(), serr)
		}
	}
	if s.dirDirty {
		s.syncDir()
	}
	return err
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
// (SPEC §11.6), or adds their runs to the write being built in s.done.
// s.mu is held.
func (s *Spool) ackRuns(seg *segment, ids []ID, limit uint32) {
	d := &s.done
	runs := d.runs[:0]
	for k, id := range ids {
		n := id.N
		switch {
		case n >= limit || k > 0 && ids[k-1].N == n || seg.done.has(n):
			// never handed, a duplicate, or done already
		case len(runs) > 0 && runs[len(runs)-1].hi == n:
			runs[len(runs)-1].hi++
		default:
			runs = append(runs, span{n, n + 1})
		}
	}
	d.runs = runs
	if len(runs) == 0 {
		return
	}
	for _, r := range runs {
		s.markDone(seg, r.lo, r.hi)
	}
	if seg.live == 0 {
		if seg == s.active && !s.ackFits(int64(len(d.buf)+frameSize+len(d.pay)+len(runs)*maxRunBytes)) {
			// It is finished, and its runs would take the files over
			// MaxBytes: retire it, as makeRoom would, so that it goes
			// and needs none. (A record alone in the spool may fill
			// the bound: ackRoom.)
			s.active = nil
			s.retire(seg)
		}
		if seg != s.active && s.reclaim(seg) == nil {
			return // gone: its runs are not needed
		}
	}
	for _, r := range runs {
		d.run(seg.num, r.lo, r.hi-r.lo)
	}
}

// DONE and MaxBytes. The bound covers DONE too (SPEC §11.5), and Ack
// cannot refuse to happen, so:
//   - Appends, and mapped reserves, leave ackRoom of the bound to DONE
//     (fits, reserve); except that a record appended when no record is
//     live may use all of it, since its only Ack finishes its segment,
//     which then goes (ackRuns), and needs no runs written.
//   - DONE grown past compactAt, or whose next write would take the files
//     over MaxBytes, is rewritten whole from the done sets (a few runs a
//     segment, mostly: tens of bytes each) instead of appended to.
//   - If even that does not fit, nothing is written: the Ack fails with an
//     error matching ErrFull, its records done for this process, and DONE
//     is rewritten at a later Ack, or at Close, when there is room.
// So the files never exceed MaxBytes, and ackRoom makes the last case
// rare: it holds the compacted runs of every segment of a spool at its
// default segment size, many times over.

// ackRoom is the part of MaxBytes that Appends leave to DONE: 1/64 of it
// (16 KiB for the client's smallest spool; SPEC §11.5). s.mu is held.
func (s *Spool) ackRoom() int64 {
	if s.maxBytes <= 0 || s.stats.Records == 0 {
		return 0
	}
	return s.maxBytes / 64
}

// ackFits reports whether n more bytes of DONE fit under MaxBytes. s.mu
// is held.
func (s *Spool) ackFits(n int64) bool {
	return s.maxBytes <= 0 || s.stats.Bytes+n <= s.maxBytes
}

// maxRunBytes bounds the encoded size of one run: three uvarints.
const maxRunBytes = 3 * binary.MaxVarintLen64

// compactAt is the size past which DONE is rewritten whole rather than
// appended to: twice a bound on its compacted size, plus a slack (4 KiB,
// or 1/16 of ackRoom if less) so that a spool acked in order, a run or
// two a segment, is rewritten once every many Acks, not at each. Without
// it DONE would grow by each Ack's runs for as long as the spool lives.
// s.mu is held.
func (s *Spool) compactAt() int64 {
	runs := int64(1) // the last number used
	for _, seg := range s.segs {
		runs += int64(len(seg.done))
	}
	payload := runs * maxRunBytes
	compact := int64(headerSize) + frameSize*(1+payload/maxAckPayload) + payload
	slack := int64(4 << 10)
	if s.maxBytes > 0 {
		slack = min(slack, s.maxBytes/64/16)
	}
	return 2*compact + slack
}

// begin starts building the done records of one write to DONE in d.buf,
// after b: a header, or nothing. s.mu is held.
func (d *doneFile) begin(b []byte) {
	d.buf, d.pay = b, d.pay[:0]
}

func (d *doneFile) run(seg uint64, lo, n uint32) {
	if len(d.pay) >= maxAckPayload {
		d.end()
	}
	d.pay = binary.AppendUvarint(d.pay, seg)
	d.pay = binary.AppendUvarint(d.pay, uint64(lo))
	d.pay = binary.AppendUvarint(d.pay, uint64(n))
}

// end frames the record being built into d.buf, and begins the next.
func (d *doneFile) end() {
	d.buf = appendFrame(d.buf, d.pay)
	d.pay = d.pay[:0]
}

// flushDone writes the records begun in s.done.buf to DONE, if anything, in one write; or
// writes DONE whole when there is none yet, it is stale, has grown past
// compactAt, or the write would take the files over MaxBytes. A failed write is cut off
// again, and DONE marked stale: rewritten whole at the next Ack, and at
// Close, so that a torn record never sits ahead of later ones, and the
// runs not written are written after all (with Sync 0 a record whose
// fsync failed is acked so that a restart does not send it: its Append
// returned an error). s.mu is held.
func (s *Spool) flushDone() error {
	d := &s.done
	if len(d.pay) == 0 && !d.stale {
		return nil // no run added
	}
	d.end()
	n := int64(len(d.buf))
	if d.size == 0 || d.stale || !s.ackFits(n) || d.size+n > s.compactAt() {
		return s.compactDone()
	}
	path := s.donePath()
	if d.f == nil {
		f, err := s.fs.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
		if err != nil {
			d.stale = true
			return ioErr("open", path, err)
		}
		d.f = f
	}
	wrote, err := writeAll(d.f, d.buf)
	if wrote > 0 {
		d.dirty = true
		s.markDirty()
	}
	if err == nil {
		d.size += n
		s.stats.Bytes += n
		return nil
	}
	d.stale = true
	if wrote > 0 {
		if terr := d.f.Truncate(d.size); terr != nil {
			d.size += int64(wrote) // on disk, torn, counted
			s.stats.Bytes += int64(wrote)
		}
	}
	return ioErr("write", path, err)
}

// compactDone writes DONE anew from the segments' done sets, into a
// temporary file that is synced, then renamed over it: a record per 64 KiB
// of runs, the first the largest segment number used, so that a number is
// never used again (runs of a removed segment may stay in DONE, and would
// mark a new one's records done). A power loss leaves the old file or the
// new one, never one of neither (a rename before the data is on the disk
// can leave a file of zeros, or none). The runs of removed segments are
// left out, so the directory is synced first: a power loss that undid a
// removal would bring a segment back without its marks. The rename
// reaches the disk with the next sync of the directory (before Ack returns
// with Sync 0, within Sync otherwise), and until then the old file holds
// what was synced of them. If that would take the files over MaxBytes, or
// fails, DONE stays as it was, stale. s.mu is held.
func (s *Spool) compactDone() error {
	d := &s.done
	d.begin(appendHeader(d.buf[:0], doneMagic))
	d.run(s.nextNum-1, 0, 0) // the last number used: math.MaxUint64 once none is left

	for _, seg := range s.segs {
		for _, sp := range seg.done {
			d.run(seg.num, sp.lo, sp.hi-sp.lo)
		}
	}
	d.end()
	path := s.donePath()
	d.stale = true // until the new file stands
	if !s.ackFits(int64(len(d.buf)) - d.size) {
		// Written at a later Ack or at Close if room comes back by then.
		return fmt.Errorf("%w: no room under MaxBytes for the acknowledgements in %s: records done may be handed again after a restart", ErrFull, path)
	}
	s.syncDir()
	if d.f != nil {
		// Closed before the rename, which some systems refuse over an
		// open file; what it held unsynced is in the new one.
		s.closeFile(d.f, path) // or the sync running outside the lock does
		d.f, d.dirty = nil, false
	}
	tmp := path + ".tmp"
	f, err := s.fs.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o600)
	if err != nil {
		return ioErr("create", tmp, err)
	}
	_, err = writeAll(f, d.buf)
	if err == nil {
		err = f.Sync()
	}
	err = errors.Join(err, f.Close())
	if err == nil {
		err = s.fs.Rename(tmp, path)
	}
	if err != nil {
		s.fs.Remove(tmp)
		return ioErr("rewrite", path, err)
	}
	s.dirChanged() // the rename on the disk with the next sync: until then the old file stands, synced
	s.stats.Bytes += int64(len(d.buf)) - d.size
	d.size, d.stale = int64(len(d.buf)), false
	return nil
}
