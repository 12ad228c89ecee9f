package spool

import (
	"errors"
	"fmt"
	"log/slog"
)

// Segment sizes when Options.SegmentBytes is 0: a sixteenth of MaxBytes,
// so that finished segments give room back in steps small beside the
// bound (SPEC §11.6), within these limits.
const (
	minSegmentBytes = 64 << 10
	maxSegmentBytes = 16 << 20
)

// Open locks dir (creating it, mode 0700, if needed), reads what it holds,
// and returns the spool. Records found there that are not done form the
// backlog, ahead of anything appended later. A record cut short at the end
// of a segment (a crash mid-write) is truncated away; a record whose
// checksum fails is skipped, counted and logged; a file whose header is
// damaged is set aside (renamed *.corrupt), counted and logged: a segment's
// records are lost with it; with the acknowledgement file set aside,
// every record is handed again. Open fails, with an error naming dir, when another Spool
// holds the lock (in this process or another), when a file is of a newer
// format Version, or when dir cannot be created or read. New files are mode 0600. (SPEC §11.2, §11.7,
// §11.8.)
func Open(dir string, o Options) (*Spool, error) {
	s := &Spool{
		dir:       dir,
		fs:        o.FS,
		log:       o.Logger,
		maxBytes:  max(o.MaxBytes, 0),
		segBytes:  o.SegmentBytes,
		syncEvery: max(o.Sync, 0),
		nextNum:   1,
	}
	if s.fs == nil {
		s.fs = osFS{}
	}
	if s.log == nil {
		s.log = slog.New(slog.DiscardHandler)
	}
	// An FS that reserves a mapped segment's blocks itself, in place of
	// fallocate (FS): a test's, that sets how much room the disk has.
	if a, ok := s.fs.(interface {
		Allocate(fd int, size int64) error
	}); ok {
		s.allocate = a.Allocate
	}
	if s.segBytes <= 0 {
		s.segBytes = maxSegmentBytes
		if s.maxBytes > 0 {
			s.segBytes = min(max(s.maxBytes/16, minSegmentBytes), maxSegmentBytes)
		}
	}
	s.cutAt = s.segBytes
	s.cond.L = &s.mu
	if err := s.fs.MkdirAll(dir, 0o700); err != nil {
		return nil, ioErr("create directory", dir, err)
	}
	unlock, err := s.fs.Lock(dir)
	if errors.Is(err, errInUse) {
		return nil, fmt.Errorf("spool: directory %q is %w", dir, errInUse)
	}
	if err != nil {
		return nil, ioErr("lock directory", dir, err)
	}
	s.unlock = unlock
	if err := s.recover(); err != nil { // it reads through its own scanner: s.rd holds no file yet
		unlock()
		return nil, err
	}
	if s.syncEvery > 0 {
		s.kick = make(chan struct{}, 1)
		s.stop = make(chan struct{})
		s.syncer.Go(s.syncLoop)
	}
	return s, nil
}
