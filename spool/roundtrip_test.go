package spool

import (
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestAppendLoadRoundTrip(t *testing.T) {
	for _, sync := range []struct {
		name string
		o    Options
	}{{"sync0", Options{}}, {"sync1s", Options{Sync: 1e9}}} {
		t.Run(sync.name, func(t *testing.T) {
			o := sync.o
			o.SegmentBytes = 2 << 10 // many segments
			s := openT(t, t.TempDir(), o)
			want := appendN(t, s, 0, 500)
			assert.EqualValues(t, 500, s.Stats().Backlog)
			assert.EqualValues(t, 500, s.Stats().Handed)
			g := loadAll(t, s)
			assert.Equal(t, want, ids(g))
			assert.Equal(t, events(0, 500), datas(g))
			for _, r := range g {
				assert.False(t, r.Recovered)
			}
			assert.Greater(t, want[len(want)-1].Seg, want[0].Seg, "rotated")
			assert.EqualValues(t, 0, s.Stats().Backlog)
			assert.EqualValues(t, 500, s.Stats().Handed)
			st := s.Stats()
			assert.EqualValues(t, 500, st.Records)
			assert.Zero(t, st.Backlog)
		})
	}
}

func TestDirectAndBacklog(t *testing.T) {
	s := openT(t, t.TempDir(), Options{Sync: 1e9})
	var direct []ID
	room := 3
	offer := func(id ID) bool {
		if room == 0 {
			return false
		}
		room--
		direct = append(direct, id)
		return true
	}
	var all []ID
	for i := range 10 {
		id, err := s.Append(event(i), offer)
		require.NoError(t, err)
		all = append(all, id)
	}
	// Three taken at once; the fourth refused, so it and every later one
	// wait, even though nothing is offered to direct once the backlog is
	// not empty.
	assert.Equal(t, all[:3], direct)
	assert.EqualValues(t, 7, s.Stats().Backlog)
	assert.EqualValues(t, 10, s.Stats().Handed)

	// A Load that takes two, then refuses: the refused one stays first.
	n := 0
	taken, err := s.Load(func(id ID, data []byte, _ bool) bool {
		if n == 2 {
			return false
		}
		n++
		return true
	}, nil)
	require.NoError(t, err)
	assert.Equal(t, 2, taken)
	assert.EqualValues(t, 5, s.Stats().Backlog)
	g := loadAll(t, s)
	assert.Equal(t, all[5:], ids(g))
	assert.Equal(t, events(5, 10), datas(g))

	// With the backlog empty, direct gets records again.
	room = 1
	id, err := s.Append(event(10), offer)
	require.NoError(t, err)
	assert.Equal(t, id, direct[len(direct)-1])
	assert.Zero(t, s.Stats().Backlog)
	assert.EqualValues(t, 11, s.Stats().Handed)
}

// A bounded consumer: Appends offer records directly while it has room,
// the backlog holds the rest, and Load refills it; every record arrives
// once, in order, while Appends go on into the same segment.
func TestInterleavedAppendLoad(t *testing.T) {
	s := openT(t, t.TempDir(), Options{Sync: 1e9, SegmentBytes: 4 << 10})
	const capacity = 16
	var held []string
	var order []string
	drain := func(k int) {
		for range min(k, len(held)) {
			order = append(order, held[0])
			held = held[1:]
		}
	}
	data := map[ID]string{}
	for i := range 2000 {
		ev := event(i)
		_, err := s.Append(ev, func(id ID) bool {
			if len(held) == capacity {
				return false
			}
			held = append(held, string(ev))
			return true
		})
		require.NoError(t, err)
		if i%7 == 0 {
			drain(5)
			_, err := s.Load(func(id ID, d []byte, _ bool) bool {
				if len(held) == capacity {
					return false
				}
				data[id] = string(d)
				held = append(held, string(d))
				return true
			}, nil)
			require.NoError(t, err)
		}
	}
	for s.Stats().Backlog > 0 || len(held) > 0 {
		drain(capacity)
		_, err := s.Load(func(id ID, d []byte, _ bool) bool {
			if len(held) == capacity {
				return false
			}
			held = append(held, string(d))
			return true
		}, nil)
		require.NoError(t, err)
	}
	assert.Equal(t, events(0, 2000), order)
	assert.EqualValues(t, 2000, s.Stats().Handed)
}

// Concurrent Appends with Sync 0 share fsyncs and still decide in order:
// the backlog stays the tail of the log.
func TestConcurrentAppendsGroupCommit(t *testing.T) {
	s := openT(t, t.TempDir(), Options{SegmentBytes: 8 << 10})
	var wg sync.WaitGroup
	var mu sync.Mutex
	direct := map[ID]bool{}
	for w := range 8 {
		wg.Go(func() {
			for i := range 100 {
				_, err := s.Append(event(w*1000+i), func(id ID) bool {
					// Called with the spool's lock held: no race on
					// direct, but the test's own mutex keeps -race calm.
					mu.Lock()
					defer mu.Unlock()
					if (w+i)%5 == 0 {
						return false
					}
					direct[id] = true
					return true
				})
				assert.NoError(t, err)
			}
		})
	}
	wg.Wait()
	g := loadAll(t, s)
	assert.Len(t, g, 800-len(direct))
	// Everything loaded comes after everything taken directly.
	if len(g) > 0 {
		first := g[0].ID
		for id := range direct {
			assert.True(t, less(id, first), "%v handed directly after the backlog began at %v", id, first)
		}
	}
	assert.EqualValues(t, 800, s.Stats().Handed)
}

func less(a, b ID) bool { return a.Seg < b.Seg || a.Seg == b.Seg && a.N < b.N }

func TestAppendRefusesEmptyAndHugeRecords(t *testing.T) {
	s := openT(t, t.TempDir(), Options{})
	_, err := s.Append(nil, take)
	assert.Error(t, err)
	_, err = s.Append(make([]byte, maxRecord+1), take)
	assert.Error(t, err)
	_, err = s.Append(make([]byte, maxRecord), take)
	assert.NoError(t, err, "the largest record")
}

// Load reads the active segment while Appends write it, from another
// goroutine: every record once, in order.
func TestLoadWhileAppending(t *testing.T) {
	s := openT(t, t.TempDir(), Options{Sync: 1e9, SegmentBytes: 16 << 10})
	const n = 3000
	var wg sync.WaitGroup
	wg.Go(func() {
		for i := range n {
			_, err := s.Append(event(i), leave)
			assert.NoError(t, err)
		}
	})
	var got []string
	for len(got) < n {
		_, err := s.Load(func(_ ID, d []byte, _ bool) bool {
			got = append(got, string(d))
			return true
		}, nil)
		require.NoError(t, err)
	}
	wg.Wait()
	assert.Equal(t, events(0, n), got)
}

// What Open keeps of a backlog does not grow with its records: counts
// and spans per segment, no offsets.
func TestRecoveredBacklogMemory(t *testing.T) {
	if testing.Short() {
		t.Skip("writes 30 MB")
	}
	dir := t.TempDir()
	s, err := Open(dir, Options{Sync: time.Hour, MaxBytes: 1 << 30})
	require.NoError(t, err)
	const n = 100_000
	rec := []byte(strings.Repeat("r", 300))
	for range n {
		_, err := s.Append(rec, leave)
		require.NoError(t, err)
	}
	require.NoError(t, s.Close())

	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	s, err = Open(dir, Options{MaxBytes: 1 << 30})
	require.NoError(t, err)
	defer s.Close()
	runtime.GC()
	runtime.ReadMemStats(&after)
	assert.EqualValues(t, n, s.Stats().Backlog)
	grew := int64(after.HeapAlloc) - int64(before.HeapAlloc)
	assert.Less(t, grew, int64(256<<10), "%d bytes kept for %d records", grew, n)
	t.Logf("%d bytes kept for %d records", grew, n)
	runtime.KeepAlive(s)
}
