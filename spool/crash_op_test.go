//go:build linux

package spool

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// copyDir copies dir's files but LOCK into to: what a SIGKILL of the
// spool's process at this moment would leave (every write, and every
// store through a mapping, is in the page cache, which a copy reads).
func copyDir(t *testing.T, dir, to string) {
	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	for _, e := range entries {
		if e.Name() == lockName || e.IsDir() {
			continue
		}
		b, err := os.ReadFile(filepath.Join(dir, e.Name()))
		require.NoError(t, err)
		require.NoError(t, os.WriteFile(filepath.Join(to, e.Name()), b, 0o600))
	}
}

// A crash at every moment of a workload: before each file operation
// (inside an Append, an Ack, a rotation, a reclaim, Close) and between
// the calls, the directory's files are copied, and each copy opened:
// every record accepted before the crash and not acked comes back,
// exactly once and in order; no record acked before the crash comes back;
// the only others are those of the call in flight; Stats agree.
func TestCrashAtEveryOperation(t *testing.T) {
	for _, c := range []struct {
		sync   time.Duration
		mapped bool
	}{{0, false}, {time.Hour, false}, {0, true}, {time.Hour, true}} {
		t.Run(fmt.Sprintf("sync=%v,mapped=%v", c.sync, c.mapped), func(t *testing.T) {
			dir := scratchDir(t)
			defer os.RemoveAll(dir)
			type crash struct {
				dir string
				at  string
				m   *model
			}
			var crashes []crash
			m := newModel()
			snap := func(at string) {
				to := scratchDir(t)
				copyDir(t, dir, to)
				crashes = append(crashes, crash{to, at, m.clone()})
			}
			defer func() {
				for _, c := range crashes {
					os.RemoveAll(c.dir)
				}
			}()
			f := &opFS{mapped: c.mapped}
			f.onOp = func(n int, op string) { snap(fmt.Sprintf("before op %d (%s)", n, op)) }
			m.onStep = func() { snap("between calls") }
			s, err := Open(dir, Options{FS: f, Sync: c.sync, SegmentBytes: 512, MaxBytes: 1 << 20})
			require.NoError(t, err)
			s.allocate = f.allocate
			workload(t, s, m, 11, 150)
			f.heal()
			m.onStep = nil
			require.NoError(t, s.Close())
			snap("after Close")
			t.Logf("%d crash points; %d records accepted, %d acked", len(crashes), len(m.accepted), len(m.ackedOK))
			require.Greater(t, len(m.ackedOK), 20, "a workload that acks")
			require.Greater(t, len(m.accepted)-len(m.ackedOK), 5, "and leaves records")
			for _, c := range crashes {
				b, ph := checkRecovered(t, c.dir, c.m)
				assert.Empty(t, b, "crash %s", c.at)
				assert.Empty(t, ph, "crash %s: records whose Append failed", c.at)
			}
		})
	}
}
