package spool

import (
	"syscall"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// With Sync d, the syncer syncs within d of a write, once for the writes
// of that interval, and not at all while nothing is written.
func TestSyncCadence(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const d = 200 * time.Millisecond
		ffs := newFaultFS()
		s, err := Open(t.TempDir(), Options{FS: ffs, Sync: d, MaxBytes: 1 << 20})
		require.NoError(t, err)
		syncs := func() int { synctest.Wait(); _, n := ffs.counts(); return n }

		time.Sleep(10 * d)
		assert.Zero(t, syncs(), "idle")

		appendN(t, s, 0, 1)
		time.Sleep(d / 2)
		appendN(t, s, 1, 5)
		assert.Zero(t, syncs(), "not yet")
		time.Sleep(d / 2)
		assert.Equal(t, 1, syncs(), "d after the first write")
		time.Sleep(10 * d)
		assert.Equal(t, 1, syncs(), "one sync covered every write; idle since")

		appendN(t, s, 5, 6)
		time.Sleep(d - time.Nanosecond)
		assert.Equal(t, 1, syncs())
		time.Sleep(time.Nanosecond)
		assert.Equal(t, 2, syncs())

		require.NoError(t, s.Close())
		assert.Equal(t, 2, syncs(), "nothing left to sync at Close")
	})
}

// A sync that fails in the background is logged, and appends go on in a
// new segment.
func TestSyncFaultInBackground(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ffs := newFaultFS()
		var l logs
		dir := t.TempDir()
		s, err := Open(dir, Options{FS: ffs, Sync: time.Second, MaxBytes: 1 << 20, Logger: l.logger()})
		require.NoError(t, err)
		first := appendN(t, s, 0, 2)
		ffs.set(func(f *faultFS) { f.failSync = syscall.EIO })
		time.Sleep(time.Second)
		synctest.Wait()
		assert.Contains(t, l.String(), "sync failed")
		assert.Contains(t, l.String(), "input/output error")
		ffs.set(func(f *faultFS) { f.failSync = nil })
		later := appendN(t, s, 2, 3)
		assert.Greater(t, later[0].Seg, first[0].Seg)
		require.NoError(t, s.Close())
		s = openT(t, dir, Options{})
		assert.Equal(t, events(0, 3), datas(loadAll(t, s)))
	})
}

// With Sync d, the Append that fills a segment and starts the next one
// does not fsync the full one: the syncer syncs both, outside the lock,
// within d, and Close syncs what it has not reached. Before, every
// rotation fsynced under the lock, and Appends waited for it.
func TestRotationLeavesTheSyncToTheSyncer(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const d = time.Second
		ffs := newFaultFS()
		s, err := Open(t.TempDir(), Options{FS: ffs, Sync: d, SegmentBytes: 64 << 10, MaxBytes: 16 << 20})
		require.NoError(t, err)
		syncs := func() int { synctest.Wait(); _, n := ffs.counts(); return n }

		ids := appendN(t, s, 0, 1500) // ~80 KiB: a second segment
		require.Greater(t, ids[len(ids)-1].Seg, ids[0].Seg, "the appends filled a segment")
		assert.Zero(t, syncs(), "fsyncs made by the Appends themselves")
		time.Sleep(d)
		assert.Equal(t, 2, syncs(), "the syncer synced the full segment and the active one")

		more := appendN(t, s, 1500, 3000) // fills the second segment too
		require.Greater(t, more[len(more)-1].Seg, ids[len(ids)-1].Seg, "the appends filled another segment")
		assert.Equal(t, 2, syncs(), "fsyncs made by the Appends themselves")
		require.NoError(t, s.Close())
		assert.Equal(t, 4, syncs(), "Close synced the segment retired since the syncer ran, and the active one")
	})
}
