//go:build !unix || aix || solaris || illumos

package spool

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"sync"
)

// Without flock the lock (SPEC §11.7) is best effort: a registry of the directories
// this process holds, and a LOCK file created with O_EXCL for other
// processes. LOCK stays open while held: Windows refuses to delete a file
// open without FILE_SHARE_DELETE (Go opens none with it), so a cleanup
// cannot remove it from under a running client; elsewhere a removed LOCK
// still refuses a second Open in this process, through the registry. A
// process that dies holding a directory leaves LOCK behind, and the
// directory stays refused until someone removes that file.
var (
	heldMu sync.Mutex
	held   = map[string]bool{} // absolute directory paths this process holds
)

func (osFS) Lock(dir string) (func() error, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, err
	}
	heldMu.Lock()
	defer heldMu.Unlock()
	if held[abs] {
		return nil, errInUse
	}
	name := filepath.Join(abs, lockName)
	f, err := os.OpenFile(name, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o600)
	if errors.Is(err, fs.ErrExist) {
		return nil, errInUse
	}
	if err != nil {
		return nil, err
	}
	held[abs] = true
	return func() error {
		heldMu.Lock()
		defer heldMu.Unlock()
		delete(held, abs)
		return errors.Join(f.Close(), os.Remove(name))
	}, nil
}
