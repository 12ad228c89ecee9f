package consumer

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/dualpath/analytics-go/queue"
)

// recorder is the Outcomes of a loop test: it records every call, and
// panics in Called for the event of panicAt (its index in push order;
// -1: never).
type recorder struct {
	t       *testing.T
	mu      sync.Mutex
	ended   map[int]error // per event: the err of its run
	called  []int
	done    []int
	panicAt int
}

// index is an event's index in push order, which the tests keep as its
// Message.
func index(it queue.Item[Event]) int { return it.Value.Message.(int) }

func newRecorder(t *testing.T) *recorder { return &recorder{t: t, ended: map[int]error{}, panicAt: -1} }

func (r *recorder) Ended(run []queue.Item[Event], err error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, it := range run {
		_, again := r.ended[index(it)]
		assert.False(r.t, again, "event %d ended twice", index(it))
		r.ended[index(it)] = err
	}
}

func (r *recorder) Called(it *queue.Item[Event], err error) {
	r.mu.Lock()
	r.called = append(r.called, index(*it))
	r.mu.Unlock()
	if index(*it) == r.panicAt {
		panic("a callback of the test")
	}
}

func (r *recorder) Done(run []queue.Item[Event], err error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, it := range run {
		r.done = append(r.done, index(it))
	}
}

// queueOf returns a queue holding n events, valued 0 to n-1.
func queueOf(t *testing.T, n int) *queue.Queue[Event] {
	q := queue.New[Event](1000, 1<<20)
	for i, ev := range events(n) {
		res, _ := q.Push(ev, Event{Message: i}, 0)
		require.Equal(t, queue.Admitted, res, "push %d", i)
	}
	return q
}

// newTestLoop returns a started Loop over a queue of n events, valued 0
// to n-1, uploading with r's Uploader.
func newTestLoop(r *rig, out Outcomes, flushAt, n int) (*Loop, *queue.Queue[Event]) {
	q := queueOf(r.t, n)
	l := NewLoop(LoopConfig{
		Queue: q, Uploader: r.up, Outcomes: out,
		FlushAt: flushAt, FlushInterval: time.Hour,
	})
	l.Start()
	return l, q
}

// A Loop cuts a batch per FlushAt events and, once closed, the rest; each
// event ends once, is called back once, in order within its batch, and
// its room in the queue is given back.
func TestLoopCutsAtFlushAtAndReportsEachEventOnce(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := newRig(t)
		rec := newRecorder(t)
		l, q := newTestLoop(r, rec, 4, 10)
		l.Close()
		<-l.Done()

		var sizes []int
		for _, s := range r.tr.requests() {
			sizes = append(sizes, len(s.batch.Batch))
		}
		assert.ElementsMatch(t, []int{4, 4, 2}, sizes, "the batches sent")
		assert.Equal(t, int64(3), l.Batches(), "Batches")
		require.Len(t, rec.ended, 10, "events ended")
		for i := range 10 {
			assert.NoError(t, rec.ended[i], "event %d", i)
		}
		assert.ElementsMatch(t, []int{0, 1, 2, 3, 4, 5, 6, 7, 8, 9}, rec.called, "events called back")
		assert.ElementsMatch(t, rec.called, rec.done, "events done")
		_, _, held, _ := q.Sizes()
		assert.Zero(t, held, "events the queue still counts")
	})
}

// Flush sends what is queued without waiting for FlushAt, and returns once
// those events have ended.
func TestLoopFlushWaitsForItsEvents(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := newRig(t)
		rec := newRecorder(t)
		l, _ := newTestLoop(r, rec, 100, 3)
		require.NoError(t, l.Flush(context.Background(), 3))
		rec.mu.Lock()
		assert.Len(t, rec.ended, 3, "events ended when Flush returns")
		rec.mu.Unlock()
		assert.Len(t, r.tr.requests(), 1, "requests")
		l.Close()
		<-l.Done()
		l.EndFlushes(fmt.Errorf("closed"))
		assert.NoError(t, l.Flush(context.Background(), 3), "a Flush of what has ended")
	})
}

// Flush waits for every batch its events are in: a batch that ends while
// another is still retrying does not release it.
func TestLoopFlushWaitsForEveryBatchInFlight(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := newRig(t)
		r.tr.rule = func(s sent) answer {
			if s.ids()[0] == "m2" && s.header.Get("X-Retry-Count") == "" {
				return status(503) // the second batch retries, after a backoff wait
			}
			return status(200)
		}
		rec := newRecorder(t)
		l, _ := newTestLoop(r, rec, 2, 4)
		require.NoError(t, l.Flush(context.Background(), 4))
		rec.mu.Lock()
		assert.Len(t, rec.ended, 4, "events ended when Flush returns")
		rec.mu.Unlock()
		assert.Len(t, r.tr.requests(), 3, "requests: two batches, one retried")
		l.Close()
		<-l.Done()
	})
}

// FlushInterval after the last cut, the events taken by then are sent
// without waiting for FlushAt.
func TestLoopCutsAtFlushInterval(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := newRig(t)
		rec := newRecorder(t)
		q := queueOf(t, 3)
		l := NewLoop(LoopConfig{Queue: q, Uploader: r.up, Outcomes: rec, FlushAt: 100, FlushInterval: time.Minute})
		l.Start()
		time.Sleep(time.Minute - time.Nanosecond)
		synctest.Wait()
		assert.Empty(t, r.tr.requests(), "requests before FlushInterval")
		time.Sleep(time.Nanosecond)
		synctest.Wait()
		assert.Len(t, r.tr.requests(), 1, "requests at FlushInterval")
		rec.mu.Lock()
		assert.Len(t, rec.ended, 3, "events ended")
		rec.mu.Unlock()
		l.Close()
		<-l.Done()
	})
}

// A panic in Outcomes.Called neither loses an event's report nor repeats
// one: the rest of the run is called back, each event once.
func TestLoopPanicInCalledReportsTheRestOnce(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := newRig(t)
		rec := newRecorder(t)
		rec.panicAt = 1
		l, _ := newTestLoop(r, rec, 4, 4)
		l.Close()
		<-l.Done()
		assert.Equal(t, []int{0, 1, 2, 3}, rec.called, "events called back")
		assert.ElementsMatch(t, []int{0, 1, 2, 3}, rec.done, "events done")
		for i := range 4 {
			assert.NoError(t, rec.ended[i], "event %d: delivered before the panic", i)
		}
	})
}

// A Cancel before Close cuts nothing more, even when the loop is running
// and a batch is due as they come: its next select may take any of its
// ready cases, a batch token and then a request slot among them. Each
// round gives the old random choices another chance.
func TestLoopCancelledWhileRunningCutsNothing(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		for round := range 50 {
			r := newRig(t)
			rec := newRecorder(t)
			q := queueOf(t, 3)
			cause := fmt.Errorf("cut short")
			var l *Loop
			l = NewLoop(LoopConfig{
				Queue: q, Uploader: r.up, Outcomes: rec,
				FlushAt: 3, FlushInterval: time.Hour,
				// The loop is between two selects when the shutdown
				// comes: Cancel, then Close, as a cut-short Shutdown does.
				Refill: func() bool { l.Cancel(cause); l.Close(); return false },
			})
			l.Start()
			<-l.Done()
			require.Zero(t, l.Batches(), "round %d: batches cut after Cancel", round)
			l.Drain(cause)
			require.Len(t, rec.ended, 3, "round %d: events ended", round)
		}
	})
}

// Cancel ends the Loop without cutting what is queued; Drain then reports
// it, with the error given.
func TestLoopCancelLeavesTheQueueToDrain(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := newRig(t)
		rec := newRecorder(t)
		l, _ := newTestLoop(r, rec, 100, 3)
		cause := fmt.Errorf("cut short")
		l.Cancel(cause)
		<-l.Done()
		assert.Same(t, cause, l.Cause(), "Cause")
		assert.Empty(t, r.tr.requests(), "requests")
		l.Drain(cause)
		require.Len(t, rec.ended, 3, "events ended")
		for i := range 3 {
			assert.Same(t, cause, rec.ended[i], "event %d", i)
		}
		assert.Equal(t, []int{0, 1, 2}, rec.called, "events called back")
	})
}

// A batch's Damaged events end first, as one run, with LoopConfig.Damaged
// inside a *BatchError, and are never sent; the others go out in their
// order and are delivered.
func TestLoopEndsDamagedEventsUnsent(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := newRig(t)
		rec := newRecorder(t)
		damaged := errors.New("the record is damaged")
		q := queue.New[Event](1000, 1<<20)
		for i, ev := range events(6) {
			res, _ := q.Push(ev, Event{Message: i, Damaged: i == 1 || i == 4}, 0)
			require.Equal(t, queue.Admitted, res, "push %d", i)
		}
		l := NewLoop(LoopConfig{Queue: q, Uploader: r.up, Outcomes: rec, FlushAt: 6, FlushInterval: time.Hour, Damaged: damaged})
		l.Start()
		l.Close()
		<-l.Done()

		reqs := r.tr.requests()
		require.Len(t, reqs, 1, "requests")
		assert.Equal(t, []string{"m0", "m2", "m3", "m5"}, reqs[0].ids(), "the events sent, in order")
		for i := range 6 {
			if i == 1 || i == 4 {
				var be *BatchError
				if assert.ErrorAs(t, rec.ended[i], &be, "event %d", i) {
					assert.ErrorIs(t, be, damaged, "event %d", i)
				}
			} else {
				assert.NoError(t, rec.ended[i], "event %d", i)
			}
		}
		assert.Equal(t, []int{1, 4}, rec.called[:2], "the damaged events called back first")
		assert.ElementsMatch(t, rec.called, rec.done, "events done")
	})
}
