package spool

import (
	"context"
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

// open is Open.
func open(dir string, o Options) (*Spool, error) {
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
	if a, ok := s.fs.(allocator); ok {
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
	if err := s.recover(); err != nil {
		s.rd.drop()
		unlock()
		return nil, err
	}
	if s.syncEvery > 0 {
		s.kick = make(chan struct{}, 1)
		s.stop = make(chan struct{})
		s.syncDone = make(chan struct{})
		go s.syncLoop()
	}
	return s, nil
}

// warn and info log, if there is a Logger.
func (s *Spool) warn(msg string, args ...any) { s.logAt(slog.LevelWarn, msg, args...) }
func (s *Spool) info(msg string, args ...any) { s.logAt(slog.LevelInfo, msg, args...) }

func (s *Spool) logAt(level slog.Level, msg string, args ...any) {
	if s.log != nil {
		s.log.Log(context.Background(), level, msg, args...)
	}
}
