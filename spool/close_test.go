package spool

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Close at any moment of Appends, AppendWaits, Loads and Acks running at
// once (race detector on): every call returns, each after Close with
// ErrClosed; nothing panics; and the next Open hands back exactly the
// records accepted and not acked (an Ack that returned nil), each once,
// each writer's in its order.
func TestCloseDuringEverything(t *testing.T) {
	for _, o := range []Options{
		{Sync: 0, SegmentBytes: 2 << 10, MaxBytes: 24 << 10},
		{Sync: time.Millisecond, SegmentBytes: 2 << 10, MaxBytes: 24 << 10},
		{Sync: 0, SegmentBytes: 2 << 10, MaxBytes: 24 << 10, FS: newFaultFS()},
	} {
		for round := range 3 {
			t.Run(fmt.Sprintf("sync=%v,written=%v,%d", o.Sync, o.FS != nil, round), func(t *testing.T) {
				closeDuringEverything(t, o, int64(150+100*round))
			})
		}
	}
}

func closeDuringEverything(t *testing.T, o Options, closeAfter int64) {
	dir := t.TempDir()
	s, err := Open(dir, o)
	require.NoError(t, err)
	const writers = 4
	var (
		mu       sync.Mutex
		accepted [writers][]int
		inMemory []ID
		ackedOK  = map[ID]bool{}
		maybe    = map[ID]bool{}
		records  = map[ID]string{}
		count    atomic.Int64
		closed   = make(chan struct{})
		wg       sync.WaitGroup
	)
	for w := range writers {
		wg.Go(func() {
			for i := 0; ; i++ {
				data := fmt.Appendf(nil, `{"w":%d,"i":%d}`, w, i)
				direct := func(id ID) bool {
					mu.Lock()
					defer mu.Unlock()
					if len(inMemory) >= 10 {
						return false
					}
					inMemory = append(inMemory, id)
					return true
				}
				var id ID
				var err error
				if w%2 == 0 {
					id, err = s.Append(data, direct)
				} else {
					ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
					id, err = s.AppendWait(ctx, data, direct)
					cancel()
				}
				switch {
				case err == nil:
					mu.Lock()
					accepted[w] = append(accepted[w], i)
					records[id] = string(data)
					mu.Unlock()
					if count.Add(1) == closeAfter {
						close(closed)
					}
				case errors.Is(err, ErrClosed):
					return
				case errors.Is(err, ErrFull):
				default:
					t.Errorf("Append: %v", err)
					return
				}
			}
		})
	}
	wg.Go(func() { // the consumer
		for {
			mu.Lock()
			batch := inMemory
			inMemory = nil
			mu.Unlock()
			_, err := s.Load(func(id ID, data []byte, _ bool) bool {
				if len(batch) >= 20 {
					return false
				}
				batch = append(batch, id)
				return true
			}, nil)
			if errors.Is(err, ErrClosed) {
				return
			}
			assert.NoError(t, err)
			// Ack every other record: the rest stay for the next Open.
			var ack []ID
			for k, id := range batch {
				if k%2 == 0 {
					ack = append(ack, id)
				}
			}
			err = s.Ack(ack)
			mu.Lock()
			for _, id := range ack {
				switch {
				case err == nil:
					ackedOK[id] = true
				case !errors.Is(err, ErrClosed):
					maybe[id] = true
				}
			}
			mu.Unlock()
			if errors.Is(err, ErrClosed) {
				return
			}
		}
	})
	<-closed
	require.NoError(t, s.Close())
	wg.Wait()
	assert.ErrorIs(t, s.Ack(nil), ErrClosed)

	s2, err := Open(dir, Options{MaxBytes: 1 << 30})
	require.NoError(t, err)
	defer s2.Close()
	var got []ID
	var datas []string
	_, err = s2.Load(func(id ID, data []byte, _ bool) bool {
		got = append(got, id)
		datas = append(datas, string(data))
		return true
	}, nil)
	require.NoError(t, err)
	assert.Zero(t, s2.Stats().Corrupt)
	seen := map[string]bool{}
	last := [writers]int{-1, -1, -1, -1}
	for k, id := range got {
		d := datas[k]
		assert.False(t, seen[d], "%s twice", d)
		seen[d] = true
		assert.False(t, ackedOK[id], "%s acked, and back", d)
		assert.Equal(t, records[id], d, "%v not the record appended", id)
		var w, i int
		_, err := fmt.Sscanf(d, `{"w":%d,"i":%d}`, &w, &i)
		require.NoError(t, err)
		assert.Greater(t, i, last[w], "writer %d's records out of order", w)
		last[w] = i
	}
	for id, d := range records {
		if !ackedOK[id] && !maybe[id] {
			assert.True(t, seen[d], "%s accepted, not acked, lost", d)
		}
	}
	assert.Equal(t, dirBytes(t, dir), s2.Stats().Bytes)
}

// blockFS blocks every sync of a segment until release is closed.
type blockFS struct {
	*faultFS
	entered chan struct{}
	release chan struct{}
	once    sync.Once
}

type blockFile struct {
	File
	b *blockFS
}

// Close is "safe to call twice": but a second Close, while the first
// waits for a group commit's fsync, returns nil at once, with the files
// still open, the Append in flight unsynced and the directory still
// locked, so an Open right after it fails "in use".
func TestConcurrentCloseWaitsForTheFirst(t *testing.T) {
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

func (b *blockFS) OpenFile(name string, flag int, perm os.FileMode) (File, error) {
	f, err := b.faultFS.OpenFile(name, flag, perm)
	if err != nil || filepath.Ext(name) != segExt {
		return f, err
	}
	return &blockFile{File: f, b: b}, nil
}

func (f *blockFile) Sync() error {
	f.b.once.Do(func() { close(f.b.entered) })
	<-f.b.release
	return f.File.Sync()
}
