package queue

import (
	"context"
	"runtime"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// result is what one PushWait returned.
type result struct {
	value int
	adm   Admission
}

// waiters runs PushWait calls, each on its own goroutine, and records what
// they return, in the order they return.
type waiters struct {
	q    *Queue[int]
	mu   sync.Mutex
	done []result
	wg   sync.WaitGroup
}

// start runs PushWait(ctx, size bytes, value) and waits until it has
// either returned or is blocked in line, so that calls started one after
// another join the line in that order.
func (w *waiters) start(ctx context.Context, value, size int) {
	w.wg.Go(func() {
		adm, _ := w.q.PushWait(ctx, make([]byte, size), value, 0)
		w.mu.Lock()
		defer w.mu.Unlock()
		w.done = append(w.done, result{value, adm})
	})
	synctest.Wait()
}

func (w *waiters) returned() []result {
	synctest.Wait()
	w.mu.Lock()
	defer w.mu.Unlock()
	return append([]result(nil), w.done...)
}

// takeAndRelease cuts every queued item off q and gives its room back, as
// the end of an upload does, and returns the values.
func takeAndRelease(q *Queue[int]) []int {
	b := q.Drain()
	size := 0
	for _, it := range b.Items {
		size += it.Size()
	}
	q.Release(len(b.Items), size)
	return values(b)
}

func TestPushWaitIsAdmittedWhenThereIsRoom(t *testing.T) {
	q := New[int](2, 100)
	adm, n := q.PushWait(context.Background(), []byte("x"), 0, 0)
	assert.Equal(t, Admitted, adm, "a PushWait with room")
	assert.Equal(t, 1, n, "items queued")
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	adm, _ = q.PushWait(ctx, []byte("x"), 1, 0)
	assert.Equal(t, Admitted, adm, "a PushWait with room and an ended context")
	adm, _ = q.PushWait(ctx, []byte("x"), 2, 0)
	assert.Equal(t, Full, adm, "a PushWait without room and with an ended context")
	assert.Equal(t, []int{0, 1}, values(q.Drain()), "the queue")
}

// A waiter sleeps until Release gives back room, then is admitted.
func TestPushWaitIsWokenByRelease(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		q := New[int](1, 100)
		push(q, 0, 1)
		w := &waiters{q: q}
		w.start(context.Background(), 1, 1)
		assert.Empty(t, w.returned(), "a PushWait into a full queue returned")
		q.Take(1, 100) // taken items still hold their room
		assert.Empty(t, w.returned(), "a PushWait returned before room was released")
		q.Release(1, 1)
		assert.Equal(t, []result{{1, Admitted}}, w.returned(), "after Release")
		assert.Equal(t, []int{1}, values(q.Drain()), "the queue")
		w.wg.Wait()
	})
}

// Waiters are admitted in the order they arrived, one per item of room.
func TestPushWaitServesWaitersInArrivalOrder(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		q := New[int](2, 100)
		push(q, -2, 1)
		push(q, -1, 1)
		w := &waiters{q: q}
		for i := range 5 {
			w.start(context.Background(), i, 1)
		}
		assert.Equal(t, []int{-2, -1}, takeAndRelease(q), "the first cut")
		synctest.Wait()
		assert.Equal(t, []int{0, 1}, values(q.Drain()), "admitted after the first release")
		q.Release(2, 2)
		synctest.Wait()
		assert.Equal(t, []int{2, 3}, values(q.Drain()), "admitted after the second release")
		q.Release(1, 1)
		synctest.Wait()
		assert.Equal(t, []int{4}, values(q.Drain()), "admitted after the third release")
		w.wg.Wait()
	})
}

// The first waiter keeps its place while its item does not fit, even when
// the item of a waiter behind it would; a PushWait that arrives while
// others wait queues behind them even when its item fits.
func TestPushWaitFirstInLineKeepsItsPlace(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		q := New[int](100, 20)
		push(q, -2, 5)
		push(q, -1, 15)
		w := &waiters{q: q}
		w.start(context.Background(), 0, 10) // needs 10 bytes
		w.start(context.Background(), 1, 1)  // needs 1
		q.Take(1, 100)
		q.Release(1, 5) // 5 bytes free: enough for the second only
		assert.Empty(t, w.returned(), "waiters admitted out of order")
		q.Take(1, 100)
		q.Release(1, 15)
		// Both are admitted under the one Release, in line order (the
		// queue's order below says so); their calls return in any order.
		assert.ElementsMatch(t, []result{{0, Admitted}, {1, Admitted}}, w.returned(),
			"after room for both")
		w.start(context.Background(), 2, 10) // 11 bytes held: waits
		w.start(context.Background(), 3, 1)  // would fit, but queues behind
		assert.Len(t, w.returned(), 2, "a PushWait went ahead of the line")
		assert.Equal(t, []int{0, 1}, takeAndRelease(q), "the queue")
		assert.ElementsMatch(t, []result{{0, Admitted}, {1, Admitted}, {2, Admitted}, {3, Admitted}}, w.returned(),
			"after room for both again")
		assert.Equal(t, []int{2, 3}, values(q.Drain()), "the queue")
		w.wg.Wait()
	})
}

// A waiter whose context ends leaves the line with Full; the room it did
// not take goes to the next in line.
func TestPushWaitContextEndPassesTheWakeUpOn(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		q := New[int](100, 20)
		push(q, -2, 10)
		push(q, -1, 10)
		w := &waiters{q: q}
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		w.start(ctx, 0, 15)
		w.start(context.Background(), 1, 5)
		q.Take(1, 100)
		q.Release(1, 10) // 10 bytes free: the first does not fit, the second would
		assert.Empty(t, w.returned(), "waiters admitted out of order")
		time.Sleep(time.Second) // the first waiter's deadline
		assert.Equal(t, []result{{0, Full}, {1, Admitted}}, w.returned(),
			"the first gave up at its deadline, and the second took the room")
		assert.Equal(t, []int{-1, 1}, values(q.Drain()), "the queue")
		w.wg.Wait()
	})
}

// A waiter in the middle of the line leaves it without disturbing the
// others' order.
func TestPushWaitLeavingFromTheMiddle(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		q := New[int](1, 100)
		push(q, -1, 1)
		w := &waiters{q: q}
		ctx, cancel := context.WithCancel(context.Background())
		w.start(context.Background(), 0, 1)
		w.start(ctx, 1, 1)
		w.start(context.Background(), 2, 1)
		cancel()
		assert.Equal(t, []result{{1, Full}}, w.returned(), "the cancelled waiter")
		for _, want := range []int{-1, 0, 2} {
			require.Equal(t, []int{want}, takeAndRelease(q), "the queue, one item at a time")
			synctest.Wait()
		}
		w.wg.Wait()
	})
}

// Close wakes every waiter, which returns Closed; later calls return
// Closed at once.
func TestPushWaitCloseWakesWaiters(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		q := New[int](1, 100)
		push(q, -1, 1)
		w := &waiters{q: q}
		for i := range 3 {
			w.start(context.Background(), i, 1)
		}
		q.Close()
		got := w.returned()
		assert.ElementsMatch(t, []result{{0, Closed}, {1, Closed}, {2, Closed}}, got, "after Close")
		adm, _ := q.PushWait(context.Background(), []byte("x"), 3, 0)
		assert.Equal(t, Closed, adm, "a PushWait after Close")
		assert.Equal(t, []int{-1}, values(q.Drain()), "the queue")
		w.wg.Wait()
	})
}

// Push does not queue behind waiters: it takes room the first waiter
// cannot use.
func TestPushDoesNotWaitInLine(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		q := New[int](100, 20)
		push(q, -1, 15)
		w := &waiters{q: q}
		w.start(context.Background(), 0, 10)
		res, _ := push(q, 1, 5)
		assert.Equal(t, Admitted, res, "a Push with room, while a waiter is in line")
		assert.Equal(t, []int{-1, 1}, takeAndRelease(q), "the queue")
		assert.Equal(t, []result{{0, Admitted}}, w.returned(), "the waiter, after the release")
		w.wg.Wait()
	})
}

// A PushWait that waits allocates nothing more than one that finds room:
// waiters and their channels are kept for the next wait. Under many
// producers nearly every PushWait waits.
func TestPushWaitReusesWaiters(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		q := New[int](1, 100)
		start, done := make(chan struct{}), make(chan Admission)
		go func() {
			for range start {
				adm, _ := q.PushWait(context.Background(), []byte("x"), 1, 0)
				done <- adm
			}
		}()
		free := func() {
			b := q.Take(1, 100)
			q.Release(len(b.Items), len(b.Items))
			q.Recycle(b)
		}
		// cycle has the producer push one item into the queue of one,
		// which holds one already when full is true: the push waits
		// until free makes room.
		cycle := func(full bool) {
			if !full {
				free()
			}
			start <- struct{}{}
			synctest.Wait() // the producer returned, or waits in line
			if full {
				free()
			}
			if adm := <-done; adm != Admitted {
				t.Errorf("PushWait returned %v, want Admitted", adm)
			}
		}
		cycle(false)
		cycle(true)
		room := testing.AllocsPerRun(100, func() { cycle(false) })
		waited := testing.AllocsPerRun(100, func() { cycle(true) })
		close(start)
		assert.Equal(t, room, waited, "allocations of a PushWait that waits, against one that finds room")
	})
}

// BenchmarkPushWait is many producers waiting in line for room in a small
// queue that one consumer empties: nearly every PushWait waits, is
// admitted by a Release and woken.
func BenchmarkPushWait(b *testing.B) {
	q := New[int](4, 1<<20)
	data := make([]byte, 100)
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			batch := q.Take(4, 1<<20)
			if len(batch.Items) == 0 {
				if q.Admission() == Closed {
					return
				}
				runtime.Gosched()
				continue
			}
			q.Release(len(batch.Items), len(batch.Items)*len(data))
			q.Recycle(batch)
		}
	}()
	b.ReportAllocs()
	b.SetParallelism(4)
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			q.PushWait(context.Background(), data, 0, 0)
		}
	})
	b.StopTimer()
	q.Close()
	<-done
}
