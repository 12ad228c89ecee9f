//go:build unix && !aix && !solaris && !illumos

package spool

import (
	"errors"
	"os"
	"path/filepath"
	"syscall"
)

// lockDir takes an flock on dir/LOCK. An flock belongs to the open file
// description, so a second Open in this process, which opens LOCK again,
// is refused as one in another process is; the kernel gives it back when
// the process dies, however it dies. LOCK stays in dir: removing it would
// let a newcomer lock a fresh file while an old holder still has the
// unlinked one.
func lockDir(dir string) (func() error, error) {
	f, err := os.OpenFile(filepath.Join(dir, lockName), os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, err
	}
	for {
		err = syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
		if !errors.Is(err, syscall.EINTR) {
			break
		}
	}
	if err != nil {
		f.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			return nil, errInUse
		}
		return nil, err
	}
	return f.Close, nil // closing the description drops the lock
}
