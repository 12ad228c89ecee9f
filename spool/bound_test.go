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

		var mu sync.Mutex
		var order []int
		var wg sync.WaitGroup
		start := func(i int, ctx context.Context) {
			wg.Go(func() {
				_, err := s.AppendWait(ctx, fixed, take)
				mu.Lock()
				defer mu.Unlock()
				if err == nil {
					order = append(order, i)
				} else {
					order = append(order, -i)
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
		assert.Empty(t, order, "all waiting")
		mu.Unlock()

		// The deadline ends the fourth.
		time.Sleep(time.Minute)
		synctest.Wait()
		mu.Lock()
		assert.Equal(t, []int{-4}, order)
		mu.Unlock()

		// One segment reclaimed: room for the first in line (and maybe the
		// second), in order.
		require.NoError(t, s.Ack(segs[all[0].Seg]))
		synctest.Wait()
		require.NoError(t, s.Ack(segs[all[0].Seg+1]))
		synctest.Wait()
		mu.Lock()
		assert.Equal(t, []int{-4, 1, 2, 3}, order)
		mu.Unlock()
		wg.Wait()
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
