//go:build !linux

package spool

import "errors"

// Segments are mapped for appends on Linux only (mmap_linux.go); on other
// systems every append is a write, and these are never reached.

// mapped would be a segment's file mapped for appends.
type mapped struct{ size int64 }

// mapSegment returns nil: appends are writes.
func (s *Spool) mapSegment(File, string, int64, int64) (*mapped, error) { return nil, nil }

func (m *mapped) put(int64, []byte) error { return errors.New("spool: segments are not mapped here") }
func (m *mapped) unmap() error            { return nil }
