//go:build linux || darwin || freebsd

package spool

import "syscall"

// Free returns the bytes of the disk holding dir that an unprivileged
// process may still use (statfs(2)).
func (osFS) Free(dir string) (int64, error) {
	var st syscall.Statfs_t
	if err := syscall.Statfs(dir, &st); err != nil {
		return 0, err
	}
	return int64(st.Bavail) * int64(st.Bsize), nil
}
