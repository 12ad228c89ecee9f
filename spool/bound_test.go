package spool

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// fixed is a record of 200 bytes: every one frames alike, so that one
// that does not fit means none does.
var fixed = []byte(`{"pad":"` + strings.Repeat("y", 190) + `"}`)

// fill appends data as records until the spool is full and returns their
// IDs (all handed).
func fill(t *testing.T, s *Spool, data []byte) []ID {
	t.Helper()
	var out []ID
	for {
		id, err := s.Append(data, take)
		if errors.Is(err, ErrFull) {
			return out
		}
		require.NoError(t, err)
		out = append(out, id)
	}
}

func TestFullAtMaxBytes(t *testing.T) {
	dir := t.TempDir()
	s := openT(t, dir, Options{Sync: 1e9, MaxBytes: 8 << 10, SegmentBytes: 1 << 10})
	all := fill(t, s, fixed)
	st := s.Stats()
	assert.LessOrEqual(t, st.Bytes, int64(8<<10))
	assert.Greater(t, st.Bytes+int64(frameSize+len(fixed)+headerSize), int64(8<<10))
	assert.Equal(t, dirBytes(t, dir), st.Bytes)

	// The first segment's records done: room again.
	var first []ID
	for _, id := range all {
		if id.Seg == all[0].Seg {
			first = append(first, id)
		}
	}
	require.NoError(t, s.Ack(first))
	_, err := s.Append(event(0), take)
	assert.NoError(t, err)
	assert.Equal(t, dirBytes(t, dir), s.Stats().Bytes)
}

// A spool whose records are all done, but in the active segment, is not
// stuck full: that segment is dropped to make room.
func TestFullOfDoneRecordsInActiveSegment(t *testing.T) {
	s := openT(t, t.TempDir(), Options{Sync: 1e9, MaxBytes: 4 << 10, SegmentBytes: 1 << 20})
	all := fill(t, s, fixed)
	require.Equal(t, all[0].Seg, all[len(all)-1].Seg, "one segment")
	require.NoError(t, s.Ack(all))
	id, err := s.Append(fixed, take)
	require.NoError(t, err)
	assert.Greater(t, id.Seg, all[0].Seg)
}

func TestNeverFits(t *testing.T) {
	s := openT(t, t.TempDir(), Options{MaxBytes: 100})
	_, err := s.AppendWait(context.Background(), make([]byte, 200), take)
	assert.ErrorIs(t, err, ErrFull, "no wait for room that cannot come")
}

func TestAppendWait(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		dir := t.TempDir()
		s, err := Open(dir, Options{Sync: time.Second, MaxBytes: 8 << 10, SegmentBytes: 1 << 10})
		require.NoError(t, err)
		defer s.Close()
		all := fill(t, s, fixed)
		segs := map[uint64][]ID{}
		for _, id := range all {
			segs[id.Seg] = append(segs[id.Seg], id)
		}

		// Each waiter's outcome: the ID its record got, or its error. The
		// order in which the waiters' goroutines run after they are woken
		// is the scheduler's; the order of their records in the log is
		// the spool's, and that is what FIFO means here.
		var mu sync.Mutex
		ids := map[int]ID{}
		errs := map[int]error{}
		var wg sync.WaitGroup
		start := func(i int, ctx context.Context) {
			wg.Go(func() {
				id, err := s.AppendWait(ctx, fixed, take)
				mu.Lock()
				defer mu.Unlock()
				if err == nil {
					ids[i] = id
				} else {
					errs[i] = err
				}
			})
			synctest.Wait() // in line before the next starts
		}
		for i := 1; i <= 3; i++ {
			start(i, context.Background())
		}
		short, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		start(4, short)
		mu.Lock()
		assert.Empty(t, ids, "all waiting")
		assert.Empty(t, errs, "all waiting")
		mu.Unlock()

		// The deadline ends the fourth.
		time.Sleep(time.Minute)
		synctest.Wait()
		mu.Lock()
		assert.Empty(t, ids, "the first three still waiting")
		require.Len(t, errs, 1)
		assert.ErrorIs(t, errs[4], context.DeadlineExceeded)
		mu.Unlock()

		// Two segments reclaimed: room for the three in line, whose records
		// follow each other in the order they came.
		require.NoError(t, s.Ack(segs[all[0].Seg]))
		synctest.Wait()
		require.NoError(t, s.Ack(segs[all[0].Seg+1]))
		synctest.Wait()
		wg.Wait()
		require.Len(t, ids, 3, "every waiter but the fourth appended")
		before := func(a, b ID) bool { return a.Seg < b.Seg || a.Seg == b.Seg && a.N < b.N }
		assert.True(t, before(ids[1], ids[2]), "first before second: %v %v", ids[1], ids[2])
		assert.True(t, before(ids[2], ids[3]), "second before third: %v %v", ids[2], ids[3])
		assert.True(t, before(all[len(all)-1], ids[1]), "after what filled the spool")
	})
}

func TestAppendWaitContextError(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s, err := Open(t.TempDir(), Options{Sync: time.Second, MaxBytes: 4 << 10, SegmentBytes: 1 << 10})
		require.NoError(t, err)
		defer s.Close()
		fill(t, s, fixed)
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		began := time.Now()
		_, err = s.AppendWait(ctx, fixed, take)
		assert.ErrorIs(t, err, ErrFull)
		assert.ErrorIs(t, err, context.DeadlineExceeded)
		assert.Equal(t, 5*time.Second, time.Since(began))

		done, cancel2 := context.WithCancel(context.Background())
		cancel2()
		_, err = s.AppendWait(done, fixed, take)
		assert.ErrorIs(t, err, ErrFull)
		assert.ErrorIs(t, err, context.Canceled)
	})
}

func TestSealEndsWaits(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s, err := Open(t.TempDir(), Options{Sync: time.Second, MaxBytes: 4 << 10, SegmentBytes: 1 << 10})
		require.NoError(t, err)
		defer s.Close()
		all := fill(t, s, fixed)
		var wg sync.WaitGroup
		errs := make([]error, 3)
		for i := range errs {
			wg.Go(func() { _, errs[i] = s.AppendWait(context.Background(), fixed, take) })
		}
		synctest.Wait()
		s.Seal()
		wg.Wait()
		for _, err := range errs {
			assert.ErrorIs(t, err, ErrClosed)
		}
		_, err = s.Append(event(0), take)
		assert.ErrorIs(t, err, ErrClosed)
		_, err = s.AppendWait(context.Background(), event(0), take)
		assert.ErrorIs(t, err, ErrClosed)
		// Load and Ack go on.
		require.NoError(t, s.Ack(all))
		_, err = s.Load(func(ID, []byte, bool) bool { return true }, nil)
		assert.NoError(t, err)
		require.NoError(t, s.Close())
		assert.Zero(t, s.Stats().Records)
	})
}

// MaxBytes exactly a header and one record's frame: that record fits,
// alone, on both paths; a byte less and it never fits (AppendWait does
// not wait); records of 1 byte and of exactly maxRecord bytes.
func TestBoundsExact(t *testing.T) {
	for _, size := range []int{1, 300, maxRecord} {
		for _, written := range []bool{false, true} {
			t.Run(fmt.Sprintf("%d,written=%v", size, written), func(t *testing.T) {
				data := bytes.Repeat([]byte{'k'}, size)
				frame := int64(frameSize + size)
				o := Options{Sync: 1e9, MaxBytes: int64(headerSize) + frame}
				if written {
					o.FS = newFaultFS()
				}
				dir := t.TempDir()
				s := openT(t, dir, o)
				id, err := s.Append(data, take)
				require.NoError(t, err)
				assert.Equal(t, o.MaxBytes, s.Stats().Bytes)
				assert.Equal(t, dirBytes(t, dir), s.Stats().Bytes)
				_, err = s.Append([]byte{'x'}, take)
				assert.ErrorIs(t, err, ErrFull)
				require.NoError(t, s.Ack([]ID{id}))
				id2, err := s.Append(data, leave) // the done active segment makes room
				require.NoError(t, err)
				assert.Greater(t, id2.Seg, id.Seg)
				assert.LessOrEqual(t, s.Stats().Bytes, o.MaxBytes)
				require.NoError(t, s.Close())

				s = openT(t, dir, Options{MaxBytes: o.MaxBytes - 1})
				g := loadAll(t, s)
				require.Len(t, g, 1)
				assert.Equal(t, string(data), g[0].Data)
				_, err = s.AppendWait(context.Background(), data, take)
				assert.ErrorIs(t, err, ErrFull, "one byte short: never fits, no wait")
			})
		}
	}
	s := openT(t, t.TempDir(), Options{})
	_, err := s.Append(make([]byte, maxRecord+1), take)
	assert.Error(t, err)
	_, err = s.Append(nil, take)
	assert.Error(t, err)
}

// IDs from an earlier Open, acked before this Open handed the records
// again: ignored (they would take records out of the backlog unseen);
// acked after, they count; acked twice, once.
func TestAckAcrossOpens(t *testing.T) {
	dir := t.TempDir()
	s, err := Open(dir, Options{Sync: 1e9, MaxBytes: 1 << 20})
	require.NoError(t, err)
	old := appendN(t, s, 0, 5)
	loadAll(t, s)
	require.NoError(t, s.Close())

	s = openT(t, dir, Options{})
	require.NoError(t, s.Ack(old[:3]))
	assert.EqualValues(t, 5, s.Stats().Records, "not handed in this Open: ignored")
	assert.EqualValues(t, 5, s.Stats().Backlog)
	g := loadAll(t, s)
	assert.Equal(t, old, ids(g), "the same IDs again")
	require.NoError(t, s.Ack(old[:3]))
	require.NoError(t, s.Ack(old[:3]))
	require.NoError(t, s.Ack([]ID{{Seg: 99, N: 0}, {Seg: old[0].Seg, N: 1000}}))
	assert.EqualValues(t, 2, s.Stats().Records)
	require.NoError(t, s.Close())
	s = openT(t, dir, Options{})
	assert.Equal(t, old[3:], ids(loadAll(t, s)))
}

// The spool is at its bound with every record in the active segment (one
// segment covers MaxBytes). An AppendWait waits for room. Then every
// record is acked: a plain Append would now succeed (makeRoom drops the
// finished active segment), but nothing wakes the waiter, which waits
// until its context ends and fails with ErrFull although room was there
// all along.
func TestAppendWaitWokenWhenActiveSegmentDone(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s, err := Open(t.TempDir(), Options{Sync: time.Second, MaxBytes: 4 << 10, SegmentBytes: 1 << 20})
		require.NoError(t, err)
		defer s.Close()
		all := fill(t, s, fixed)
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
