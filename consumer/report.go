package consumer

import (
	"cmp"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"time"

	"github.com/dualpath/analytics-go/queue"
	"github.com/dualpath/analytics-go/spool"
)

// Event is what a Loop's queue keeps with each event besides its bytes,
// for the Outcomes once the event ends; the Loop itself reads only Damaged.
// The fields after At say where the event is in a spool (package spool)
// that keeps every event on disk until its outcome, as the analytics
// package's WithSpool does; they are zero without one.
type Event struct {
	// Message is the message the event was encoded from, kept for a
	// callback; nil when nothing needs it.
	Message any
	// At is when the event was accepted, on the owner's clock (the
	// analytics package: the time since New); negative when not known.
	At time.Duration
	// Spool is the event's record in the spool.
	Spool spool.ID
	// Recovered: the record was written by an earlier process and read
	// back by this one.
	Recovered bool
	// Damaged: the spool found the record damaged as it read it back; the
	// event's bytes are what it read, not to be sent: it fails, before the
	// batch's upload, with LoopConfig.Damaged.
	Damaged bool
}

// Outcomes receives what became of the events a Loop takes from its queue.
// A Loop calls it from the goroutine uploading a batch, several batches at
// once, so it must be safe for concurrent use; for one batch the calls come
// in order: for each run of its events that ends, Ended, Called for each
// event of the run, and Done; the batch's Damaged events first, as one run.
//
// A panic in a method ends the batch's upload; the Loop recovers it and
// goes on with the next step: no step is made twice, none is skipped, and
// every event of the batch is still reported, the rest of the run under
// way with its own outcome and the events after it with a *BatchError
// naming the panic. So every event reaches exactly one outcome.
type Outcomes interface {
	// Ended is called when the events of run have their outcome: err is
	// nil when the tracking API took them, else why they failed (a
	// *BatchError from the upload). Their room in the queue has been
	// released already.
	Ended(run []queue.Item[Event], err error)
	// Called is called for each event of the run after Ended, in order,
	// with the run's err: where a caller calls back per event.
	Called(it *queue.Item[Event], err error)
	// Done is called after Called for every event of the run: where
	// the events are marked done elsewhere (the analytics package: in its
	// spool).
	Done(run []queue.Item[Event], err error)
}

// send uploads one batch, its first attempt on s, and reports every event
// of it exactly once (SPEC §8). batch is the batch's token (a slot of
// Loop.batches), which it gives back when the batch ends, or end before
// the first Called (CallsMayBlock).
func (l *Loop) send(b queue.Batch[Event], batch, s *slot) {
	r := &report{items: b.Items, batch: batch}
	defer func() {
		s.release() // deliver releases it; this covers a batch it never gets
		l.batchDone(b.Seq)
		batch.release()
		l.uploads.Done()
	}()
	defer func() {
		if p := recover(); p != nil {
			// A bug of ours must not take the application down, nor lose
			// events or report one twice: report the rest from where the
			// panic stopped. Logged last, so that nothing depends on the
			// log call.
			l.settle(r, &BatchError{Reason: fmt.Errorf("analytics: internal error: %v", p)})
			l.cfg.Logger.Error("analytics: internal error while uploading a batch", slog.Any("panic", p))
		}
	}()
	skip := damagedFirst(r.items)
	if skip > 0 {
		l.end(r, skip, &BatchError{Reason: l.cfg.Damaged})
	}
	if skip == len(b.Items) {
		return
	}
	events := eventsFor(len(b.Items) - skip)
	for i, it := range b.Items[skip:] {
		events[i] = it.Data
	}
	l.cfg.Uploader.deliver(l.ctx, s, events, func(lo, hi int, err error) {
		lo, hi = lo+skip, hi+skip
		if lo != r.ended {
			// deliver reports runs in order; anything else is a bug of
			// ours, which the recover above settles.
			panic(fmt.Sprintf("events [%d, %d) reported after [0, %d)", lo, hi, r.ended))
		}
		l.end(r, hi, err)
	})
	if r.ended == len(b.Items) && l.cfg.Uploader.eventsDoneAtReturn() {
		// Every attempt has ended and every event is reported: nothing
		// reads the events' bytes any more, and their memory may take the
		// next ones.
		clear(events)
		eventSlices.Put(&events)
		l.cfg.Queue.Recycle(b)
	}
}

// eventSlices keeps the slices send hands deliver (*[][]byte), emptied,
// for the next batches.
var eventSlices sync.Pool

// eventsFor returns a slice of n events, recycled when one is at hand.
func eventsFor(n int) [][]byte {
	if p, ok := eventSlices.Get().(*[][]byte); ok && cap(*p) >= n {
		return (*p)[:n]
	}
	return make([][]byte, n)
}

// report is how far the events of a batch have been reported. Each step is
// marked done before it runs, so that a panic part-way through (a bug of
// ours, a log handler, a callback) can neither repeat a step nor skip one:
// settle goes on from the marks. Only the goroutine reporting the batch
// uses it.
type report struct {
	items  []queue.Item[Event]
	ended  int   // events [0, ended) have their outcome: released, Ended called
	err    error // the outcome of events [called, ended)
	called int   // events [0, called) have had Called
	done   int   // events [0, done) have had Done
	batch  *slot // the batch's token: see send
}

// end records that the events up to hi ended with err (nil: delivered):
// it gives back their room in the queue and reports them.
func (l *Loop) end(r *report, hi int, err error) {
	l.callBack(r) // the rest of the run before, if a panic cut it short
	run := r.items[r.ended:hi]
	r.ended, r.err = hi, err
	size := 0
	for _, it := range run {
		size += it.Size()
	}
	l.cfg.Queue.Release(len(run), size)
	l.cfg.Outcomes.Ended(run, err)
	if l.cfg.CallsMayBlock {
		// The calls may block: what the loop needs to cut the next batch
		// is given back before they run.
		r.batch.release()
	}
	l.callBack(r)
}

// callBack makes the Called step for each event that has its outcome and
// has not had it, then the Done step for them.
func (l *Loop) callBack(r *report) {
	for r.called < r.ended {
		it := &r.items[r.called]
		r.called++
		l.cfg.Outcomes.Called(it, r.err)
	}
	if r.done < r.called {
		lo := r.done
		r.done = r.called
		l.cfg.Outcomes.Done(r.items[lo:r.called], r.err)
	}
}

// settle reports every event of r not reported yet: the rest of the run
// under way with its own outcome, the events after it with err. It goes
// on after a panic, from the marks, so that it always finishes.
func (l *Loop) settle(r *report, err error) {
	var again any
	for r.done < len(r.items) {
		func() {
			defer func() {
				if p := recover(); p != nil {
					again = p
				}
			}()
			if r.done < r.ended {
				l.callBack(r)
				return
			}
			l.end(r, len(r.items), err)
		}()
	}
	if again != nil {
		l.cfg.Logger.Error("analytics: internal error while reporting events", slog.Any("panic", again))
	}
}

// damagedFirst moves the Damaged events of items to their front, the
// others keeping their order, and returns how many they are.
func damagedFirst(items []queue.Item[Event]) int {
	k := 0
	for _, it := range items {
		if it.Value.Damaged {
			k++
		}
	}
	if k > 0 {
		slices.SortStableFunc(items, func(a, b queue.Item[Event]) int {
			return cmp.Compare(sendable(a), sendable(b))
		})
	}
	return k
}

// sendable is 1 for an event to send, 0 for a Damaged one.
func sendable(it queue.Item[Event]) int {
	if it.Value.Damaged {
		return 0
	}
	return 1
}
