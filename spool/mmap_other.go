//go:build !linux

package spool

// The operating system's files are mapped for appends on Linux only
// (mmap_linux.go); on other systems each append to them is a write. A File
// that is a mapper itself (the crash tests') is mapped on every system.

// osMapper returns nil: the operating system's files are written here.
func osMapper(File, func(fd int, size int64) error) mapper { return nil }

// unsupported reports whether a reserve failed for want of support:
// errors.ErrUnsupported, which mapSegment checks itself.
func unsupported(error) bool { return false }
