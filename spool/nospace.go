//go:build !plan9 && !windows

package spool

import (
	"errors"
	"syscall"
)

// noSpace reports whether err is a shortage of space (the disk's, or a
// quota's), which frees up as segments are removed.
func noSpace(err error) bool {
	return errors.Is(err, syscall.ENOSPC) || errors.Is(err, syscall.EDQUOT)
}
