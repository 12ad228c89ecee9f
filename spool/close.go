package spool

import (
	"errors"
	"io/fs"
)

// seal is Seal. s.mu is held, and released while it waits.
func (s *Spool) seal() {
	s.sealed = true
	for w := s.line.First(); w != nil; w = s.line.First() {
		s.line.Leave(w) // each looks again, finds the spool sealed
		w.Wake()
	}
	// With Sync 0 an Append decides its record (hands it, or puts it in
	// the backlog) only after its group commit, which releases s.mu for
	// the fsync. Returning before then would let the caller drain what
	// it was handed, then find a record handed after: neither sent nor
	// refused. So every record written is decided before Seal returns.
	for s.decided < s.written {
		s.cond.Wait()
	}
}

// Close seals the spool, syncs and closes its files, removes the segments
// whose records are all done, stops its goroutine and gives the lock back.
// Records not done stay for the next Open (SPEC §11.4). It is safe to call more than
// once, concurrently too: a later call waits for the first to end and
// returns its error.
func (s *Spool) Close() error {
	// Another Close runs or ran: returning before it ends would leave the
	// caller with files open and the directory locked, so it waits.
	s.closeOnce.Do(func() {
		s.mu.Lock()
		defer s.mu.Unlock()
		s.closed = true
		s.closeErr = s.closeLocked()
	})
	return s.closeErr // written before Do returned
}

// closeLocked is Close's work, once. s.mu is held, and released while it
// waits for the syncer and for Appends in flight.
//
// After the seal, the syncer stopped and every Append in
// flight returned, the active file is synced and every file closed; the
// finished segments go, the active one too once all of it is done (SPEC
// §11.6). So a spool closed with everything delivered leaves only its LOCK
// file.
func (s *Spool) closeLocked() error {
	s.seal()
	if s.stop != nil {
		close(s.stop)
		s.mu.Unlock() // the syncer may be waiting for the lock
		s.syncer.Wait()
		s.mu.Lock()
	}
	for s.decided < s.written || s.syncRunning { // Appends in a group commit, the syncer's last sync
		s.cond.Wait()
	}
	var errs []error   // errors.Join drops the nils
	files := s.retired // retired since the last sync: unsynced, as the active one may be
	s.retired = nil
	if a := s.active; a != nil {
		s.unmap(a)
		files = append(files, retiredFile{a.f, a.num, s.written})
		a.f, s.active = nil, nil
	}
	for _, r := range files {
		if s.synced < s.written {
			errs = append(errs, ioErr("sync", s.segPath(r.num), r.f.Sync()))
		}
		errs = append(errs, ioErr("close", s.segPath(r.num), r.f.Close()))
	}
	s.synced = s.written
	if s.done.stale {
		// Acks a failed write (or the bound) left out: written now, or
		// those records come back after the restart. No room under
		// MaxBytes is logged, not Close's failure.
		if err := s.compactDone(); err != nil {
			s.log.Warn("spool: rewrite acknowledgements", "err", err)
			if !errors.Is(err, ErrFull) {
				errs = append(errs, err)
			}
		}
	}
	// DONE synced if it holds runs not synced, and the directory, then
	// closed.
	errs = append(errs, s.syncAcks())
	if d := &s.done; d.f != nil {
		errs = append(errs, ioErr("close", s.donePath(), d.f.Close()))
		d.f = nil
	}
	s.rd.drop()
	for _, seg := range append([]*segment(nil), s.segs...) {
		if seg.live == 0 {
			errs = append(errs, s.reclaim(seg))
		}
	}
	if s.dirDirty || s.done.size > 0 && len(s.segs) == 0 {
		// The removals above on the disk: a segment whose removal a power
		// loss undid would come back with runs it was removed without.
		s.syncDir()
	}
	if s.done.size > 0 && len(s.segs) == 0 {
		// No segment left for DONE to mark, and the removals on the
		// disk: DONE goes too, so that a spool closed with everything
		// done leaves only its LOCK file.
		if err := s.fs.Remove(s.donePath()); err != nil && !errors.Is(err, fs.ErrNotExist) {
			errs = append(errs, ioErr("remove", s.donePath(), err))
		} else {
			s.stats.Bytes -= s.done.size
			s.syncDirNow()
		}
	}
	errs = append(errs, ioErr("unlock directory", s.dir, s.unlock()))
	return errors.Join(errs...)
}
