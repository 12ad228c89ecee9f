package spool

import (
	"context"
	"errors"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A directory holding a segment numbered math.MaxUint64 (the largest
// name the format allows: 20 digits): the next segment's number wraps to
// a small one (recover: nextNum = max(nextNum, num+1) overflows), which
// sorts before it. Then the records appended after Open come back BEFORE
// the older recovered ones at the next Open, and an Ack of them is
// silently dropped (find's binary search over s.segs, no longer sorted),
// so an acked record comes back. A fix may refuse the Open (naming the
// file) or the Appends (an error); it may not reorder or resurrect.
func TestAttackSegmentNumberAtMaxUint64(t *testing.T) {
	dir := t.TempDir()
	writeSegment(t, dir, math.MaxUint64, event(0), event(1))
	s, err := Open(dir, Options{MaxBytes: 1 << 20})
	if err != nil {
		assert.Contains(t, err.Error(), fileName(math.MaxUint64, segExt))
		return
	}
	g := loadAll(t, s)
	require.Equal(t, events(0, 2), datas(g))
	want := events(0, 2)
	// Two new records; the first handed (and acked), the second left.
	var handed []ID
	_, err2 := s.Append(event(2), func(id ID) bool { handed = append(handed, id); return true })
	_, err3 := s.Append(event(3), leave)
	if err3 == nil {
		want = append(want, string(event(3)))
	}
	if err2 == nil {
		require.NoError(t, s.Ack(handed))
		assert.EqualValues(t, len(want), s.Stats().Records, "the ack of record 2 counted")
	}
	require.NoError(t, s.Close())

	s = openT(t, dir, Options{})
	assert.Equal(t, want, datas(loadAll(t, s)),
		"order kept across the reopen (0, 1, then 3), and record 2, acked, not back")
}

// The spool is at its bound with every record in the active segment (one
// segment covers MaxBytes). An AppendWait waits for room. Then every
// record is acked: a plain Append would now succeed (makeRoom drops the
// finished active segment), but nothing wakes the waiter, which waits
// until its context ends and fails with ErrFull although room was there
// all along.
func TestAttackAppendWaitWokenWhenActiveSegmentDone(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s, err := Open(t.TempDir(), Options{Sync: time.Second, MaxBytes: 4 << 10, SegmentBytes: 1 << 20})
		require.NoError(t, err)
		defer s.Close()
		all := fill(t, s)
		require.Equal(t, all[0].Seg, all[len(all)-1].Seg, "one segment")
		ctx, cancel := context.WithTimeout(context.Background(), time.Hour)
		defer cancel()
		done := make(chan error, 1)
		go func() {
			_, err := s.AppendWait(ctx, fixed, take)
			done <- err
		}()
		synctest.Wait() // waiting in line
		require.NoError(t, s.Ack(all))
		synctest.Wait()
		select {
		case err := <-done:
			assert.NoError(t, err)
		default:
			t.Error("AppendWait still waits after every record was acked, though a plain Append would succeed")
			cancel()
			err := <-done
			assert.ErrorIs(t, err, ErrFull)
		}
	})
}

// The bound covers the spool's files, acknowledgement files included
// (Stats.Bytes counts them; SPEC §11.5: "the spool's files are at most
// SpoolMaxBytes"). Acks one at a time of small records (batches that end
// out of order do this) grow the .ack files past the bound: Ack never
// checks it, and the runs are never compacted while the segment lives.
func TestAttackAckFilesWithinMaxBytes(t *testing.T) {
	for _, o := range []Options{
		{Sync: 1e9, MaxBytes: 64 << 10, SegmentBytes: 8 << 10},                   // mapped on Linux
		{Sync: 1e9, MaxBytes: 64 << 10, SegmentBytes: 8 << 10, FS: newFaultFS()}, // written
	} {
		name := "mapped"
		if o.FS != nil {
			name = "written"
		}
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			s := openT(t, dir, o)
			var all []ID
			for {
				id, err := s.Append([]byte("x"), take)
				if errors.Is(err, ErrFull) {
					break
				}
				require.NoError(t, err)
				all = append(all, id)
			}
			// Ack every record but the last of each segment, one by one:
			// no segment is finished, so none is removed.
			for i, id := range all {
				if i+1 < len(all) && all[i+1].Seg != id.Seg || i+1 == len(all) {
					continue
				}
				require.NoError(t, s.Ack([]ID{id}))
			}
			st := s.Stats()
			assert.Equal(t, dirBytes(t, dir), st.Bytes)
			assert.LessOrEqual(t, st.Bytes, o.MaxBytes, "the spool's files over MaxBytes: %d > %d", st.Bytes, o.MaxBytes)
		})
	}
}

// blockFS blocks every sync of a segment until release is closed.
type blockFS struct {
	*faultFS
	entered chan struct{}
	release chan struct{}
	once    sync.Once
}

func (b *blockFS) OpenFile(name string, flag int, perm os.FileMode) (File, error) {
	f, err := b.faultFS.OpenFile(name, flag, perm)
	if err != nil || filepath.Ext(name) != segExt {
		return f, err
	}
	return &blockFile{File: f, b: b}, nil
}

type blockFile struct {
	File
	b *blockFS
}

func (f *blockFile) Sync() error {
	f.b.once.Do(func() { close(f.b.entered) })
	<-f.b.release
	return f.File.Sync()
}

// Close is "safe to call twice": but a second Close, while the first
// waits for a group commit's fsync, returns nil at once, with the files
// still open, the Append in flight unsynced and the directory still
// locked, so an Open right after it fails "in use".
func TestAttackConcurrentCloseWaitsForTheFirst(t *testing.T) {
	dir := t.TempDir()
	b := &blockFS{faultFS: newFaultFS(), entered: make(chan struct{}), release: make(chan struct{})}
	s, err := Open(dir, Options{FS: b, MaxBytes: 1 << 20}) // Sync 0: Append fsyncs
	require.NoError(t, err)
	appended := make(chan error, 1)
	go func() { _, err := s.Append(event(0), leave); appended <- err }()
	<-b.entered // the Append's fsync runs, outside the lock, and blocks
	first := make(chan error, 1)
	go func() { first <- s.Close() }()
	for { // the first Close has the spool marked closed, and waits for the Append
		s.mu.Lock()
		closed := s.closed
		s.mu.Unlock()
		if closed {
			break
		}
		runtime.Gosched()
	}
	// A Close that waits for the first lets the fsync go on after a while
	// (a timer, not a sleep); one that returns at once finds it blocked.
	timer := time.AfterFunc(200*time.Millisecond, func() { close(b.release) })
	second := s.Close()
	if timer.Stop() {
		close(b.release)
		t.Error("the second Close returned while the first still waited for an fsync")
	}
	assert.NoError(t, second)
	s2, err := Open(dir, Options{})
	if assert.NoError(t, err, "the second Close returned, yet the directory is still locked") {
		s2.Close()
	}
	assert.NoError(t, <-appended)
	assert.NoError(t, <-first)
}
