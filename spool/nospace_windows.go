package spool

import (
	"errors"
	"syscall"
)

// Windows' own numbers for a full disk (winerror.h), which the syscall
// package does not name.
const (
	errorHandleDiskFull syscall.Errno = 39
	errorDiskFull       syscall.Errno = 112
)

// noSpace reports whether err is a shortage of space, which frees up as
// segments are removed.
func noSpace(err error) bool {
	return errors.Is(err, errorDiskFull) || errors.Is(err, errorHandleDiskFull) || errors.Is(err, syscall.ENOSPC)
}
