//go:build unix && !aix && !solaris && !illumos

package spool

import (
	"errors"
	"os"
	"path/filepath"
	"syscall"
)

// Lock takes an flock on dir itself and one on dir/LOCK. An flock
// belongs to the open file description, so a second Open in this process,
// which opens them again, is refused as one in another process is; the
// kernel gives them back when the process dies, however it dies (SPEC
// §11.7).
//
// The directory's lock is the one that counts: a cleanup can delete LOCK
// from under a running client (a newcomer would then lock a fresh LOCK and
// share the directory), but not the directory it works in. LOCK keeps the
// layout every platform has, and its lock is what remains where a file
// system refuses to flock a directory (some network file systems, which
// emulate flock with byte-range locks that want a file open for writing).
func (osFS) Lock(dir string) (func() error, error) {
	d, err := lockFile(dir, os.O_RDONLY)
	if err != nil && !dirLockUnsupported(err) {
		return nil, err
	}
	f, err := lockFile(filepath.Join(dir, lockName), os.O_RDWR|os.O_CREATE)
	if err != nil {
		if d != nil {
			d.Close()
		}
		return nil, err
	}
	return func() error { // closing a description drops its lock
		err := f.Close()
		if d != nil {
			err = errors.Join(err, d.Close())
		}
		return err
	}, nil
}

// lockFile opens name and takes an exclusive flock on it without waiting:
// errInUse if another open description holds one.
func lockFile(name string, flag int) (*os.File, error) {
	f, err := os.OpenFile(name, flag, 0o600)
	if err != nil {
		return nil, err
	}
	for {
		err = syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
		if !errors.Is(err, syscall.EINTR) {
			break
		}
	}
	if err == nil {
		return f, nil
	}
	f.Close()
	if errors.Is(err, syscall.EWOULDBLOCK) {
		return nil, errInUse
	}
	return nil, err
}

// dirLockUnsupported reports whether err is a file system's refusal to
// flock a directory at all, not a lock that someone holds.
func dirLockUnsupported(err error) bool {
	return errors.Is(err, syscall.EBADF) || errors.Is(err, syscall.ENOLCK) ||
		errors.Is(err, syscall.EOPNOTSUPP) || errors.Is(err, syscall.EINVAL)
}
