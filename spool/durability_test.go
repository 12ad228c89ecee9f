package spool

import (
	"fmt"
	"io/fs"
	"math/rand/v2"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// What is on the disk when, after a power loss: each test crashes a spool
// on a crashFS at a chosen moment and opens a chosen image of its disk
// (crashfs_test.go). The model test (powerloss_test.go) found each of the
// bugs these hold fixed.

const crashDir = "/spool"

// syncedOnly is the image of a power loss that keeps what was synced and
// nothing else.
var syncedOnly = crashConfig{anyDirOps: true}

// crashOpen opens a spool on f.
func crashOpen(t *testing.T, f *crashFS, o Options) *Spool {
	t.Helper()
	o.FS = f
	s, err := Open(crashDir, o)
	require.NoError(t, err)
	t.Cleanup(func() { s.Close() })
	return s
}

// recovered opens an image of f's disk as cfg chooses and returns the
// numbers of the records it hands (payloads rec(i)), in order.
func recovered(t *testing.T, f *crashFS, cfg crashConfig) []int {
	t.Helper()
	f.mu.Lock()
	img := f.crashImage(rand.New(rand.NewPCG(1, 2)), cfg)
	f.mu.Unlock()
	s, err := Open(crashDir, Options{FS: img})
	require.NoError(t, err)
	defer s.Close()
	var out []int
	_, err = s.Load(func(_ ID, data []byte, _ bool) bool {
		i, ok := recNumber(data)
		require.True(t, ok, "handed %q", data)
		out = append(out, i)
		return true
	}, nil)
	require.NoError(t, err)
	return out
}

// rec is the payload of the workload's i-th Append attempt.
func rec(i int) []byte {
	return fmt.Appendf(nil, `{"r":%d,"pad":"%s"}`, i, strings.Repeat("p", i*7%61))
}

// recNum reads the attempt number back from a payload.
func recNum(t testing.TB, data string) int {
	var i int
	_, err := fmt.Sscanf(data, `{"r":%d,`, &i)
	require.NoError(t, err, "a payload the workload never wrote: %q", data)
	return i
}

// appendRecs appends rec(lo) to rec(hi-1), handed directly, and returns
// their IDs.
func appendRecs(t *testing.T, s *Spool, lo, hi int) []ID {
	t.Helper()
	var out []ID
	for i := lo; i < hi; i++ {
		id, err := s.Append(rec(i), take)
		require.NoError(t, err)
		out = append(out, id)
	}
	return out
}

func numbers(lo, hi int) []int {
	var out []int
	for i := lo; i < hi; i++ {
		out = append(out, i)
	}
	return out
}

// Acknowledgements reach the disk on the segments' cadence: with Sync 0
// before Ack returns, with Sync d within d, so that a power loss sends
// again at most what was acknowledged in the last interval. Before, the
// marks were synced only at Close: a power loss sent again everything
// acknowledged since the spool was opened.
func TestAckOnDiskOnTheSegmentsCadence(t *testing.T) {
	for _, mapped := range []bool{false, true} {
		t.Run(fmt.Sprint("sync=0,mapped=", mapped), func(t *testing.T) {
			f := newCrashFS(crashDir, mapped)
			s := crashOpen(t, f, Options{SegmentBytes: 8 << 10})
			ids := appendRecs(t, s, 0, 6)
			require.NoError(t, s.Ack(ids[:4]))
			assert.Equal(t, numbers(4, 6), recovered(t, f, syncedOnly))
		})
		t.Run(fmt.Sprint("sync=1s,mapped=", mapped), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				f := newCrashFS(crashDir, mapped)
				s := crashOpen(t, f, Options{Sync: time.Second, SegmentBytes: 8 << 10})
				ids := appendRecs(t, s, 0, 6)
				time.Sleep(time.Second)
				synctest.Wait()
				require.NoError(t, s.Ack(ids[:4]))
				assert.Equal(t, numbers(0, 6), recovered(t, f, syncedOnly), "acknowledged in the last second: may come back")
				time.Sleep(time.Second)
				synctest.Wait()
				assert.Equal(t, numbers(4, 6), recovered(t, f, syncedOnly), "acknowledged a second ago: on the disk")
			})
		})
	}
}

// Acknowledgements in many segments, an Ack each, are synced within Sync
// (with Sync 0, before each Ack returns). (Once, with an ack file per
// segment, a file pushed out of those Ack kept open was closed without a
// sync.)
func TestAcksOfManySegmentsSynced(t *testing.T) {
	for _, sync := range []time.Duration{0, time.Second} {
		t.Run(fmt.Sprint("sync=", sync), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				f := newCrashFS(crashDir, false)
				s := crashOpen(t, f, Options{Sync: sync, SegmentBytes: 200})
				ids := appendRecs(t, s, 0, 40)
				time.Sleep(sync)
				synctest.Wait()
				// The first record of each segment, an Ack each: no
				// segment finished.
				var want []int
				segs := 0
				for i, id := range ids {
					if i == 0 || id.Seg != ids[i-1].Seg {
						require.NoError(t, s.Ack([]ID{id}))
						segs++
						continue
					}
					want = append(want, i)
				}
				require.Greater(t, segs, 5)
				time.Sleep(sync)
				synctest.Wait()
				assert.Equal(t, want, recovered(t, f, syncedOnly))
			})
		})
	}
}

// A compacted DONE is synced before it is renamed over the old one,
// and the directory after: a power loss leaves the old file or the new
// one. Before, the rename went first, and a power loss could leave the
// new name with none of its data (a file of zeros, or empty: every record
// of the segment sent again).
func TestAckRewriteSyncedBeforeRename(t *testing.T) {
	f := newCrashFS(crashDir, false)
	s := crashOpen(t, f, Options{MaxBytes: 64 << 10, SegmentBytes: 32 << 10})
	ids := appendRecs(t, s, 0, 400)
	require.Equal(t, ids[0].Seg, ids[len(ids)-1].Seg, "one segment")
	renamed := func() bool {
		f.mu.Lock()
		defer f.mu.Unlock()
		return f.renames > 0
	}
	// Every other record, one at a time, then the others: their runs
	// merge, and DONE, grown by each Ack, is rewritten compacted.
	var acked []int
	for _, i := range append(numbers(0, 200), numbers(0, 200)...) {
		if renamed() {
			break
		}
		k := 2 * i
		if len(acked) >= 200 {
			k++
		}
		require.NoError(t, s.Ack([]ID{ids[k]}))
		acked = append(acked, k)
	}
	require.True(t, renamed(), "no rewrite in %d Acks", len(acked))
	// The rename and everything before it on the disk, the data of
	// nothing not synced.
	got := recovered(t, f, crashConfig{anyDirOps: true, dirKeep: 100})
	for _, k := range acked {
		assert.NotContains(t, got, k, "acknowledged before the rewrite, and back")
	}
	assert.Len(t, got, len(ids)-len(acked))
}

// A segment that an Ack finished, and so removed without writing its last
// marks, stays removed after a power loss: the directory is synced before
// Ack returns (Sync 0), within Sync (d), and at Close. Before, nothing
// synced it but the next segment's creation: a power loss brought the
// segment back, and its records were sent again.
func TestRemovalOnDisk(t *testing.T) {
	for _, tt := range []struct {
		name  string
		sync  time.Duration
		close bool
	}{{"sync=0", 0, false}, {"sync=1s", time.Second, false}, {"sync=1h,Close", time.Hour, true}} {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				f := newCrashFS(crashDir, false)
				s := crashOpen(t, f, Options{Sync: tt.sync, SegmentBytes: 200})
				ids := appendRecs(t, s, 0, 12)
				require.Greater(t, ids[11].Seg, ids[0].Seg, "two segments at least")
				first := slices.IndexFunc(ids, func(id ID) bool { return id.Seg != ids[0].Seg })
				time.Sleep(tt.sync)
				synctest.Wait()
				require.NoError(t, s.Ack(ids[:first])) // the first segment, finished: removed
				require.NotContains(t, f.files(), fileName(ids[0].Seg, segExt))
				if tt.close {
					require.NoError(t, s.Close())
				} else {
					time.Sleep(tt.sync)
					synctest.Wait()
				}
				assert.Equal(t, numbers(first, 12), recovered(t, f, syncedOnly))
			})
		})
	}
}

// DONE is compacted, the runs of removed segments left out, only once
// their removal is on the disk. A power loss may keep one directory
// operation and undo an earlier one (a file system that orders none): had
// the compacted DONE been renamed in before the segment was known gone,
// the segment would come back without its marks, and every record in it,
// acknowledged long before, would be sent again.
func TestDoneCompactedAfterRemovals(t *testing.T) {
	f := newCrashFS(crashDir, false)
	s := crashOpen(t, f, Options{SegmentBytes: 200, Sync: time.Hour})
	ids := appendRecs(t, s, 0, 12)
	first := slices.IndexFunc(ids, func(id ID) bool { return id.Seg != ids[0].Seg })
	require.Greater(t, first, 1)
	require.NoError(t, s.Ack(ids[:first-1]))
	s.mu.Lock()
	require.NoError(t, s.syncAcks()) // on the disk, in DONE
	s.mu.Unlock()
	require.NoError(t, s.Ack(ids[first-1:first])) // the first segment finished: removed, not synced
	// A crash before each operation of the compaction, each image keeping
	// the operations on DONE and nothing else not synced.
	var images [][]int
	f.mu.Lock()
	f.before = func(string) { // f.mu held; the image has its own
		images = append(images, recoveredFrom(t, f.crashImage(rand.New(rand.NewPCG(1, 2)), doneOnly)))
	}
	f.mu.Unlock()
	s.mu.Lock()
	require.NoError(t, s.compactDone())
	s.mu.Unlock()
	f.mu.Lock()
	f.before = nil
	f.mu.Unlock()
	require.NotEmpty(t, images)
	for k, got := range images {
		for i := range first - 1 {
			assert.NotContains(t, got, i, "crash before operation %d of the compaction: record %d acknowledged before, and back", k, i)
		}
	}
}

// recoveredFrom opens img and returns the numbers of the records it hands.
func recoveredFrom(t *testing.T, img *crashFS) []int {
	t.Helper()
	s, err := Open(crashDir, Options{FS: img})
	require.NoError(t, err)
	defer s.Close()
	var out []int
	_, err = s.Load(func(_ ID, data []byte, _ bool) bool {
		i, _ := recNumber(data)
		out = append(out, i)
		return true
	}, nil)
	require.NoError(t, err)
	return out
}

// doneOnly is the image of a power loss that kept, of the directory's
// operations not synced, those on DONE (and its rewrite), and of the data
// what was synced: what a file system that orders no directory operation
// may leave.
var doneOnly = crashConfig{dirOp: func(op string) bool { return strings.Contains(op, doneName) }}

// Close syncs the directory after the removals it makes, then removes
// DONE and syncs it again: a spool closed with every record
// done leaves no file, on the disk too. (Before, a power loss after Close
// could bring back the files Close removed.)
func TestCloseSyncsItsRemovals(t *testing.T) {
	f := newCrashFS(crashDir, false)
	s := crashOpen(t, f, Options{Sync: time.Hour})
	ids := appendRecs(t, s, 0, 6)
	require.NoError(t, s.Ack(ids)) // the active segment, finished: removed at Close
	require.NoError(t, s.Close())
	f.mu.Lock()
	img := f.crashImage(rand.New(rand.NewPCG(1, 2)), syncedOnly)
	f.mu.Unlock()
	assert.Empty(t, img.files())
}

// Open keeps DONE's runs of a segment it does not find: the segment's
// removal may be in the page cache only, its process killed before the
// directory was synced, and a power loss could undo it.
func TestOpenKeepsTheRunsOfAMissingSegment(t *testing.T) {
	f := newCrashFS(crashDir, false)
	s := crashOpen(t, f, Options{})
	ids := appendRecs(t, s, 0, 6)
	require.NoError(t, s.Ack(ids[:5]))
	require.NoError(t, s.Close())
	// A later process removed the segment, and was killed before it
	// synced the directory.
	require.NoError(t, f.Remove(segFile(crashDir, ids[0].Seg)))
	crashOpen(t, f, Options{})
	got := recovered(t, f, doneOnly)
	for i := range 5 {
		assert.NotContains(t, got, i, "record %d, acknowledged on the disk, back", i)
	}
}

// gatedFS is a crashFS whose directory syncs, once armed, stop after
// syncing until released: the syncer held in the middle of its work,
// outside the spool's lock.
type gatedFS struct {
	*crashFS
	armed            atomic.Bool
	reached, release chan struct{}
}

func (g *gatedFS) OpenFile(path string, flag int, perm fs.FileMode) (File, error) {
	f, err := g.crashFS.OpenFile(path, flag, perm)
	if d, ok := f.(*crashDirFile); ok && err == nil {
		return gatedDir{d, g}, nil
	}
	return f, err
}

type gatedDir struct {
	*crashDirFile
	g *gatedFS
}

func (d gatedDir) Sync() error {
	err := d.crashDirFile.Sync()
	if d.g.armed.CompareAndSwap(true, false) {
		d.g.reached <- struct{}{}
		<-d.g.release
	}
	return err
}

// A compaction while the syncer syncs the directory outside the lock
// leaves out the runs of a segment removed meanwhile only once that
// removal is on the disk: the syncer's sync, begun before it, does not
// cover it. (Once, with an ack file per segment, the syncer removed as many
// of them as it had counted, which were by then others.)
func TestCompactionWhileTheSyncerSyncs(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g := &gatedFS{crashFS: newCrashFS(crashDir, false), reached: make(chan struct{}), release: make(chan struct{})}
		o := Options{Sync: time.Second, SegmentBytes: 200, FS: g}
		s, err := Open(crashDir, o)
		require.NoError(t, err)
		defer s.Close()
		ids := appendRecs(t, s, 0, 12)
		bySeg := map[uint64][]ID{}
		for _, id := range ids {
			bySeg[id.Seg] = append(bySeg[id.Seg], id)
		}
		seg1, seg2 := bySeg[ids[0].Seg], bySeg[ids[0].Seg+1]
		require.Greater(t, len(seg2), 1)
		require.NoError(t, s.Ack(seg2[:1])) // on the disk within a second
		time.Sleep(time.Second)
		synctest.Wait()

		require.NoError(t, s.Ack(seg1)) // seg1 removed, its runs in DONE
		g.armed.Store(true)
		<-g.reached // a second on: the syncer has synced the directory, and waits
		// A new segment: its creation syncs the directory. Then seg2 is
		// finished and removed, and DONE compacted.
		for i, last := 12, ids[len(ids)-1].Seg; ; i++ {
			id, err := s.Append(rec(i), take)
			require.NoError(t, err)
			if id.Seg > last {
				break
			}
		}
		require.NoError(t, s.Ack(seg2[1:]))
		s.mu.Lock()
		require.NoError(t, s.compactDone())
		s.mu.Unlock()
		close(g.release)
		synctest.Wait()

		got := recovered(t, g.crashFS, doneOnly)
		for _, id := range seg2[:1] {
			n := slices.Index(ids, id)
			assert.NotContains(t, got, n, "record %d, acknowledged on the disk before, back", n)
		}
	})
}
