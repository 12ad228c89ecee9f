package spool

import (
	"context"
	"errors"
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

// fill appends records until the spool is full and returns their IDs (all
// handed).
func fill(t *testing.T, s *Spool) []ID {
	t.Helper()
	var out []ID
	for {
		id, err := s.Append(fixed, take)
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
	all := fill(t, s)
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
	all := fill(t, s)
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
		all := fill(t, s)
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
		fill(t, s)
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
		all := fill(t, s)
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
