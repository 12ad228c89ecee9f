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

// An ack file whose marks are not synced yet, pushed out of the files Ack
// keeps open by acknowledgements in more segments, is synced all the same
// within Sync. (Before, an evicted file was closed without a sync.)
func TestAckEvictedSynced(t *testing.T) {
	for _, sync := range []time.Duration{0, time.Second} {
		t.Run(fmt.Sprint("sync=", sync), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				f := newCrashFS(crashDir, false)
				s := crashOpen(t, f, Options{Sync: sync, SegmentBytes: 200})
				ids := appendRecs(t, s, 0, 40)
				time.Sleep(sync)
				synctest.Wait()
				// The first record of each segment, an Ack each: no
				// segment finished, an ack file for each, more than Ack
				// keeps open.
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
				require.Greater(t, segs, len(s.acks.open)+1)
				time.Sleep(sync)
				synctest.Wait()
				assert.Equal(t, want, recovered(t, f, syncedOnly))
			})
		})
	}
}

// A rewritten ack file is synced before it is renamed over the old one,
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
	// merge, and the ack file, grown by each Ack, is rewritten compacted.
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

// A finished segment's ack file is removed only once the segment's
// removal is on the disk. A power loss may keep one removal and undo an
// earlier one (a file system that orders no directory operation): had the
// .ack gone before the .seg was known gone, the segment would come back
// without its marks, and every record in it, acknowledged long before,
// would be sent again.
func TestAckRemovedAfterItsSegment(t *testing.T) {
	f := newCrashFS(crashDir, false)
	s := crashOpen(t, f, Options{SegmentBytes: 200})
	ids := appendRecs(t, s, 0, 12)
	first := slices.IndexFunc(ids, func(id ID) bool { return id.Seg != ids[0].Seg })
	require.Greater(t, first, 1)
	require.NoError(t, s.Ack(ids[:first-1])) // on the disk, in the first segment's .ack
	// A crash before each operation of the Ack that finishes the segment,
	// each image keeping the removals of .ack files and nothing else not
	// synced.
	acksOnly := crashConfig{dirOp: func(op string) bool { return strings.HasSuffix(op, ackExt) }}
	var images [][]int
	f.mu.Lock()
	f.before = func(string) { // f.mu held; the image has its own
		images = append(images, recoveredFrom(t, f.crashImage(rand.New(rand.NewPCG(1, 2)), acksOnly)))
	}
	f.mu.Unlock()
	require.NoError(t, s.Ack(ids[first-1:first]))
	f.mu.Lock()
	f.before = nil
	f.mu.Unlock()
	require.NotEmpty(t, images)
	for k, got := range images {
		for i := range first - 1 {
			assert.NotContains(t, got, i, "crash before operation %d of the Ack: record %d acknowledged before, and back", k, i)
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

// acksOnly is the image of a power loss that kept, of the directory's
// operations not synced, those on .ack files, and of the data what was
// synced: what a file system that orders no directory operation may leave.
var acksOnly = crashConfig{dirOp: func(op string) bool { return strings.HasSuffix(op, ackExt) }}

// Close syncs the directory after the removals it makes, then removes
// their .ack files and syncs it again: a spool closed with every record
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

// Open removes an .ack whose segment it does not find only once the
// directory is synced: the segment's removal may be in the page cache
// only, its process killed before the directory was synced, and a power
// loss could keep the .ack's removal and undo the segment's.
func TestOpenRemovesAStrayAckAfterASync(t *testing.T) {
	f := newCrashFS(crashDir, false)
	s := crashOpen(t, f, Options{})
	ids := appendRecs(t, s, 0, 6)
	require.NoError(t, s.Ack(ids[:5]))
	require.NoError(t, s.Close())
	// A later process removed the segment, and was killed before it
	// synced the directory.
	require.NoError(t, f.Remove(segFile(crashDir, ids[0].Seg)))
	crashOpen(t, f, Options{})
	assert.Empty(t, recovered(t, f, acksOnly))
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

// The syncer removes only the .ack files whose segments' removal its sync
// of the directory covers: those removed before it began. A segment
// removed while it synced, after another sync (a new segment's) had
// removed what the syncer had counted, keeps its .ack until a later sync.
// (Found reading the code: the syncer removed as many orphans as it had
// counted, which were by then others.)
func TestOrphansRemovedAfterTheSyncThatCoversThem(t *testing.T) {
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

		require.NoError(t, s.Ack(seg1)) // seg1 removed; its .ack an orphan
		g.armed.Store(true)
		<-g.reached // a second on: the syncer has synced the directory, and waits
		// A new segment: its creation syncs the directory and removes
		// seg1's .ack. Then seg2 is finished and removed.
		for i, last := 12, ids[len(ids)-1].Seg; ; i++ {
			id, err := s.Append(rec(i), take)
			require.NoError(t, err)
			if id.Seg > last {
				break
			}
		}
		require.NoError(t, s.Ack(seg2[1:]))
		close(g.release)
		synctest.Wait()

		got := recovered(t, g.crashFS, acksOnly)
		for _, id := range seg2[:1] {
			n := slices.Index(ids, id)
			assert.NotContains(t, got, n, "record %d, acknowledged on the disk before, back", n)
		}
	})
}
