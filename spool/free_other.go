//go:build !linux && !darwin && !freebsd

package spool

import "errors"

// Free cannot tell the disk's free bytes here: segments are cut at
// SegmentBytes, and smaller once a write finds the disk full.
func (osFS) Free(string) (int64, error) { return 0, errors.ErrUnsupported }
