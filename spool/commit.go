package spool

import (
	"slices"
	"sync"
	"time"
)

// commitState is how written records reach the disk: by a group commit
// in Append when Options.Sync is 0, by the syncer goroutine every
// Options.Sync otherwise. Records are numbered in the order they are
// written (their sequence number, from 1 at Open). Its fields are guarded
// by Spool.mu.
//
// Records not yet synced are in the active segment's file, or in the
// retired files waiting for the next sync (retire), which syncs them with
// the active one, outside the lock, so that no Append waits for a
// segment's fsync. With Sync > 0 it syncs as well DONE if it was written since its last sync and, if one of its
// entries changed (a file created, removed or renamed), the directory;
// with Sync 0 Ack syncs those itself (syncAcks).
type commitState struct {
	written uint64 // the sequence number of the last record written
	synced  uint64 // records up to it are synced (or their sync failed)
	// decided: records up to it were handed or joined the backlog. Records
	// are decided in sequence order, so that the backlog stays the tail of
	// the log when group commits finish out of order.
	decided uint64

	// syncing are the files a sync outside the lock has open now;
	// closeAfter those of them closed meanwhile (retired, removed,
	// DONE replaced): the sync closes them as it ends (closeFile).
	syncing     []File
	closeAfter  []File
	syncRunning bool // a sync runs outside the lock
	// dirDirty: an entry of the directory changed since its last sync.
	dirDirty bool
	// retired are segments that stopped being active with records not
	// synced: the next sync syncs and closes them.
	retired []retiredFile

	// failed lists syncs that failed while Appends (Sync 0) wait on
	// them, until those Appends have returned the error.
	failed []failedSync

	// The syncer (Sync > 0): dirty is set by a write after the syncer last
	// looked, which kicks it; it then syncs Sync later. stop ends it, and
	// syncer waits for it to exit.
	dirty  bool
	kick   chan struct{}
	stop   chan struct{}
	syncer sync.WaitGroup
}

// retiredFile is a retired segment's file that the next sync must sync
// and close; to is the sequence number of the last record written when it
// was retired: a failed sync of it is of the records up to it.
type retiredFile struct {
	f   File
	num uint64
	to  uint64
}

// failedSync is a failed sync of the records from+1 to to.
type failedSync struct {
	from, to uint64
	err      error
}

// commit waits until record seq is synced and every record before it is
// decided, so that the caller decides it next (Sync 0; SPEC §11.1). The first Append
// to find its record unsynced with no sync running syncs the active file
// (and the retired ones) for every record written so far, and those
// Appends share it: one fsync for a group. It returns the error of a failed sync covering seq. s.mu is
// held, and released while waiting.
func (s *Spool) commit(seq uint64) error {
	for s.synced < seq || s.decided != seq-1 {
		if s.synced < seq && !s.syncRunning {
			s.syncActive()
			continue
		}
		s.cond.Wait()
	}
	// The failures of records before seq are forgotten: all decided.
	s.failed = slices.DeleteFunc(s.failed, func(f failedSync) bool { return f.to < seq })
	var err error
	for _, f := range s.failed {
		if f.from < seq {
			err = f.err
		}
	}
	return err
}

// syncActive syncs the retired files waiting for it and the active file,
// for the records written so far, and with Sync > 0 DONE and the
// directory (commitState), releasing s.mu during the fsyncs. s.mu is held.
func (s *Spool) syncActive() {
	var f, done File
	var num uint64
	if a := s.active; a != nil && s.synced < s.written {
		f, num = a.f, a.num
	}
	retired := s.retired
	s.retired = nil
	dir := false
	if s.syncEvery > 0 {
		if s.done.dirty {
			done, s.done.dirty = s.done.f, false
		}
		dir, s.dirDirty = s.dirDirty, false
	}
	if f == nil && len(retired) == 0 && done == nil && !dir { // nothing written since the last sync
		s.synced = s.written
		return
	}
	from, to := s.synced, s.written
	s.syncing = append(s.syncing[:0], f, done) // a nil for none: closeFile looks for a file
	s.syncRunning = true
	s.mu.Unlock()
	var failed []failedSync // the segments' syncs, and retired files' closes, that failed
	for _, r := range retired {
		for _, err := range []error{r.f.Sync(), r.f.Close()} {
			if err != nil {
				failed = append(failed, failedSync{from, r.to, ioErr("sync", s.segPath(r.num), err)})
			}
		}
	}
	var doneErr error
	if done != nil {
		doneErr = done.Sync()
	}
	if f != nil {
		if err := f.Sync(); err != nil {
			failed = append(failed, failedSync{from, to, ioErr("sync", s.segPath(num), err)})
		}
	}
	if dir {
		s.syncDirNow() // after the files: a new file's entry, with its data
	}
	s.mu.Lock()
	s.syncing, s.syncRunning = s.syncing[:0], false
	for _, c := range s.closeAfter {
		c.Close()
	}
	clear(s.closeAfter)
	s.closeAfter = s.closeAfter[:0]
	s.synced = max(s.synced, to)
	for _, f := range failed {
		s.syncFailed(f.from, f.to, f.err)
	}
	if doneErr != nil {
		// The runs may not be on the disk: written again whole (and
		// synced) at the next Ack, or at Close.
		s.log.Warn("spool: sync failed", "err", ioErr("sync", s.donePath(), doneErr))
		s.done.stale = true
	}
	s.cond.Broadcast()
}

// closeFile closes f, the file of path, or, if a sync outside the lock has
// it open, leaves it to that sync to close as it ends. s.mu is held.
func (s *Spool) closeFile(f File, path string) {
	if slices.Contains(s.syncing, f) {
		if !slices.Contains(s.closeAfter, f) {
			s.closeAfter = append(s.closeAfter, f)
		}
		return
	}
	if err := f.Close(); err != nil {
		s.log.Warn("spool: close", "file", path, "err", err)
	}
}

// dirChanged records that an entry of the directory changed (a file
// created, removed or renamed): with Sync > 0 the syncer syncs the
// directory within Options.Sync; with Sync 0 the next Ack does, or Close.
// s.mu is held.
func (s *Spool) dirChanged() {
	s.dirDirty = true
	s.markDirty() // not at Open: what it removes may come back
}

// syncFailed deals with err, a failed sync of a segment covering the
// records from+1 to to. The file's pages may be lost, so appends go on in a new
// segment. With Sync 0 the Appends waiting on the sync return the error;
// with Sync > 0 nobody waits, and it is logged. s.mu is held.
func (s *Spool) syncFailed(from, to uint64, err error) {
	s.rotate = true
	s.log.Warn("spool: sync failed", "err", err)
	if s.syncEvery == 0 {
		s.failed = append(s.failed, failedSync{from, to, err})
	}
}

// markDirty wakes the syncer after a write, unless it knows already or
// there is none (Sync 0, or Open still reading the directory). s.mu is
// held.
func (s *Spool) markDirty() {
	if !s.dirty && s.kick != nil {
		s.dirty = true
		select {
		case s.kick <- struct{}{}:
		default:
		}
	}
}

// syncLoop is the syncer (Sync > 0): it sleeps until a write, syncs
// Options.Sync after it, and so syncs nothing while the spool is idle.
// Close stops it.
func (s *Spool) syncLoop() {
	for {
		select {
		case <-s.kick:
		case <-s.stop:
			return
		}
		select {
		case <-time.After(s.syncEvery): // collected unfired once stop ends the loop
		case <-s.stop:
			return
		}
		s.mu.Lock()
		s.dirty = false // a write from now on kicks again
		if !s.syncRunning && (s.synced < s.written || s.dirDirty || s.done.dirty) {
			s.syncActive()
		}
		s.mu.Unlock()
	}
}
