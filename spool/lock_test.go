package spool

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestSecondOpenInProcessRefused(t *testing.T) {
	dir := t.TempDir()
	s, err := Open(dir, Options{})
	require.NoError(t, err)
	_, err = Open(dir, Options{})
	require.Error(t, err)
	assert.EqualError(t, err, `spool: directory "`+dir+`" is in use by another client`)
	require.NoError(t, s.Close())
	s, err = Open(dir, Options{})
	require.NoError(t, err, "after Close")
	require.NoError(t, s.Close())
}

// A cleanup that deletes LOCK while a spool is open does not free the
// directory: a second Open still fails, naming it, until the first closes.
func TestOpenAfterLockRemovedRefused(t *testing.T) {
	dir := t.TempDir()
	s, err := Open(dir, Options{})
	require.NoError(t, err)
	require.NoError(t, os.Remove(filepath.Join(dir, lockName)))
	second, err := Open(dir, Options{})
	if err == nil {
		second.Close()
	}
	assert.EqualError(t, err, `spool: directory "`+dir+`" is in use by another client`)
	require.NoError(t, s.Close())
	s, err = Open(dir, Options{})
	require.NoError(t, err, "after Close")
	require.NoError(t, s.Close())
}

// lockHolderEnv names the directory holdLock opens, in the
// child process TestLockedByAnotherProcess starts.
const lockHolderEnv = "SPOOL_TEST_LOCK_HOLDER_DIR"

// holdLock is the child process of TestLockedByAnotherProcess, which
// TestMain runs instead of the tests when lockHolderEnv is set: it opens
// the spool, says so on stdout and holds it until stdin closes. It returns
// the exit code.
func holdLock(dir string) int {
	s, err := Open(dir, Options{})
	if err != nil {
		fmt.Fprintln(os.Stderr, "lock holder:", err)
		return 1
	}
	os.Stdout.WriteString("locked\n")
	io.Copy(io.Discard, os.Stdin)
	if err := s.Close(); err != nil {
		fmt.Fprintln(os.Stderr, "lock holder:", err)
		return 1
	}
	return 0
}

func TestLockedByAnotherProcess(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "spool")
	cmd := exec.Command(os.Args[0], "-test.run=^$", "-test.count=1")
	cmd.Env = append(os.Environ(), lockHolderEnv+"="+dir)
	stdin, err := cmd.StdinPipe()
	require.NoError(t, err)
	stdout, err := cmd.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	t.Cleanup(func() {
		stdin.Close()
		cmd.Wait()
	})
	line, err := bufio.NewReader(stdout).ReadString('\n')
	require.NoError(t, err)
	require.Equal(t, "locked\n", line)

	_, err = Open(dir, Options{})
	require.Error(t, err)
	assert.EqualError(t, err, `spool: directory "`+dir+`" is in use by another client`)
	if os.Remove(filepath.Join(dir, lockName)) == nil { // a cleanup, where the platform lets it
		_, err = Open(dir, Options{})
		assert.EqualError(t, err, `spool: directory "`+dir+`" is in use by another client`, "once LOCK is removed")
	}

	require.NoError(t, stdin.Close())
	io.Copy(io.Discard, stdout) // the rest of the child's output, to its exit
	require.NoError(t, cmd.Wait())
	s, err := Open(dir, Options{})
	require.NoError(t, err, "once the other process let go")
	require.NoError(t, s.Close())
}

func TestPermissions(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "a", "spool")
	s := openT(t, dir, Options{Sync: 1e9})
	all := appendN(t, s, 0, 3)
	loadAll(t, s)
	require.NoError(t, s.Ack(all[:1]))
	st, err := os.Stat(dir)
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o700), st.Mode().Perm())
	names := files(t, dir)
	assert.Len(t, names, 3, "LOCK, a segment, DONE: %v", names)
	for _, name := range names {
		st, err := os.Stat(filepath.Join(dir, name))
		require.NoError(t, err)
		assert.Equal(t, os.FileMode(0o600), st.Mode().Perm(), name)
	}
}
