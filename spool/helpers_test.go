package spool

import (
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/dualpath/analytics-go/internal/testsupport"
)

// event returns the i-th test record: a JSON object of a size that varies
// with i, so records do not all frame alike.
func event(i int) []byte {
	return fmt.Appendf(nil, `{"type":"track","n":%d,"pad":%q}`, i, strings.Repeat("x", i%37))
}

func take(ID) bool  { return true }
func leave(ID) bool { return false }

// got is a record as Load handed it.
type got struct {
	ID        ID
	Data      string
	Recovered bool
}

// openT opens dir and closes the spool when the test ends.
func openT(t testing.TB, dir string, o Options) *Spool {
	t.Helper()
	if o.MaxBytes == 0 {
		o.MaxBytes = 1 << 30
	}
	s, err := Open(dir, o)
	require.NoError(t, err)
	t.Cleanup(func() { s.Close() })
	return s
}

// loadAll takes the whole backlog.
func loadAll(t testing.TB, s *Spool) []got {
	t.Helper()
	var out []got
	_, err := s.Load(func(id ID, data []byte, recovered bool) bool {
		out = append(out, got{id, string(data), recovered})
		return true
	}, nil)
	require.NoError(t, err)
	return out
}

func ids(g []got) []ID {
	out := make([]ID, len(g))
	for i, r := range g {
		out[i] = r.ID
	}
	return out
}

func datas(g []got) []string {
	out := make([]string, len(g))
	for i, r := range g {
		out[i] = r.Data
	}
	return out
}

// events returns the test records i from lo to hi-1, as strings.
func events(lo, hi int) []string {
	var out []string
	for i := lo; i < hi; i++ {
		out = append(out, string(event(i)))
	}
	return out
}

// appendN appends the records lo to hi-1 into the backlog and returns
// their IDs.
func appendN(t testing.TB, s *Spool, lo, hi int) []ID {
	t.Helper()
	var out []ID
	for i := lo; i < hi; i++ {
		id, err := s.Append(event(i), leave)
		require.NoError(t, err)
		out = append(out, id)
	}
	return out
}

// files lists dir's file names, sorted.
func files(t testing.TB, dir string) []string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	var out []string
	for _, e := range entries {
		out = append(out, e.Name())
	}
	sort.Strings(out)
	return out
}

// withExt lists dir's files whose names end in ext.
func withExt(t testing.TB, dir, ext string) []string {
	var out []string
	for _, n := range files(t, dir) {
		if strings.HasSuffix(n, ext) {
			out = append(out, n)
		}
	}
	return out
}

// dirBytes is the size of dir's .seg and .corrupt files, and DONE.
func dirBytes(t testing.TB, dir string) int64 {
	t.Helper()
	var n int64
	for _, name := range files(t, dir) {
		if strings.HasSuffix(name, segExt) || name == doneName || strings.HasSuffix(name, corruptExt) {
			st, err := os.Stat(filepath.Join(dir, name))
			require.NoError(t, err)
			n += st.Size()
		}
	}
	return n
}

// snapshot copies dir's files, all but LOCK, to a new directory: what a
// crash of the spool's process would leave, since every write reached the
// operating system.
func snapshot(t testing.TB, dir string) string {
	t.Helper()
	to := t.TempDir()
	for _, name := range files(t, dir) {
		if name == lockName {
			continue
		}
		b, err := os.ReadFile(filepath.Join(dir, name))
		require.NoError(t, err)
		require.NoError(t, os.WriteFile(filepath.Join(to, name), b, 0o600))
	}
	return to
}

// logs collects what the spool logs.
type logs struct{ testsupport.Buffer }

func (l *logs) logger() *slog.Logger {
	return slog.New(slog.NewTextHandler(l, &slog.HandlerOptions{Level: slog.LevelDebug}))
}

var _ io.Writer = (*logs)(nil)
