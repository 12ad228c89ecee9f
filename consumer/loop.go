package consumer

import (
	"context"
	"fmt"
	"log/slog"
	"math"
	"sync"
	"sync/atomic"
	"time"

	"github.com/dualpath/analytics-go/queue"
)

// batchesInFlight × MaxConcurrentRequests batches may be cut and not yet
// finished (SPEC §4). Only MaxConcurrentRequests of them have a request in
// flight; the others wait for a slot or to retry, so that a batch in
// backoff does not stop the rest. Their events still count against the
// queue's bounds.
const batchesInFlight = 4

// Outcomes receives what became of the events a Loop takes from its queue.
// A Loop calls it from the goroutine uploading a batch, several batches at
// once, so it must be safe for concurrent use; for one batch the calls come
// in order: Unsent once, then for each run of its events that ends, Ended,
// Called for each event of the run, and Done.
//
// A panic in a method is recovered by the Loop, which goes on with the next
// step: no step is made twice, none is skipped, and every event of the
// batch is still reported (the rest of its batch with a *BatchError naming
// the panic).
type Outcomes[T any] interface {
	// Unsent moves to the front of items those that must not be sent,
	// keeping the order of the others, and returns how many they are and
	// the error they end with; they end before the others are uploaded.
	// Most implementations return 0, nil.
	Unsent(items []queue.Item[T]) (n int, err error)
	// Ended is called when the events of run have their outcome: err is
	// nil when the tracking API took them, else why they failed (a
	// *BatchError from the upload). Their room in the queue has been
	// released already.
	Ended(run []queue.Item[T], err error)
	// Called is called for each event of the run after Ended, in order,
	// with the run's err: where a caller calls back per event.
	Called(it *queue.Item[T], err error)
	// Done is called after Called for every event of the run.
	Done(run []queue.Item[T], err error)
}

// LoopConfig is what a Loop needs. Every field is required unless marked
// optional.
type LoopConfig[T any] struct {
	// Queue is where the events wait; the Loop cuts its batches from it
	// and releases their room once they end.
	Queue *queue.Queue[T]
	// Uploader sends the batches.
	Uploader *Uploader
	// Outcomes receives every event's outcome.
	Outcomes Outcomes[T]
	// FlushAt is the number of queued events that makes a batch due.
	FlushAt int
	// FlushInterval is how long after the last cut the events queued are
	// sent without waiting for FlushAt.
	FlushInterval time.Duration
	// CallsMayBlock is optional: Outcomes.Called may block (on the
	// caller's own Enqueue, say), so what the Loop needs to cut the next
	// batch is given back before the calls of a run instead of after the
	// batch.
	CallsMayBlock bool
	// Refill is optional: events that did not fit the queue wait
	// elsewhere (a backlog), and Refill, called on the Loop's goroutine
	// before it looks at the queue, moves what fits into it and reports
	// whether some still wait. While they do, the Loop cuts whatever is
	// queued without waiting for FlushAt, since the queue is as full as
	// it gets. Call Wake when events join the backlog.
	Refill func() (backlog bool)
	// Accepted is optional: the number of events taken so far, numbered as
	// the queue numbers them (a backlog's included), which FlushInterval
	// sends. Nil: the events pushed into the queue.
	Accepted func() uint64
	// Halted is optional: it is called, on the Loop's goroutine, if the
	// Loop stops on an internal error (a panic of a bug), so that the
	// caller stops taking events; what is queued then fails with Drain.
	Halted func()
	// Logger is optional; it receives the internal errors the Loop
	// recovers from. Nil discards.
	Logger *slog.Logger
}

// Loop is the consumer of a queue (SPEC §3, §4): it cuts batches from the
// queue when FlushAt events are queued, FlushInterval after the last cut,
// or on Flush; uploads each with its Uploader, up to
// MaxConcurrentRequests at a time and 4 × MaxConcurrentRequests cut and
// not finished, first attempts going out in the order the batches were
// cut; and reports each event's outcome, exactly once, to its Outcomes.
// Create one with NewLoop and Start it; Close and wait for Done to end it.
// Its methods are safe for concurrent use.
type Loop[T any] struct {
	cfg LoopConfig[T]
	q   *queue.Queue[T]
	up  *Uploader
	out Outcomes[T]
	log *slog.Logger

	wake      chan struct{} // Wake: the queue or the backlog changed
	flushReq  chan uint64   // Flush: send everything numbered below this
	closing   chan struct{} // closed by Close
	closeOnce sync.Once
	batches   chan struct{} // a token per batch cut and not yet finished
	done      chan struct{} // closed when the loop and every upload have ended
	cut       atomic.Int64  // batches cut

	// ctx is the context of every upload; Cancel cancels it.
	ctx    context.Context
	cancel context.CancelCauseFunc

	// mu guards inflight and waiters: what Flush waits for.
	mu       sync.Mutex
	inflight []uint64 // Seq of every batch being uploaded
	waiters  []*flushWaiter

	uploads sync.WaitGroup
}

// NewLoop returns a Loop for cfg, not started. It does not validate cfg.
func NewLoop[T any](cfg LoopConfig[T]) *Loop[T] {
	l := &Loop[T]{
		cfg:      cfg,
		q:        cfg.Queue,
		up:       cfg.Uploader,
		out:      cfg.Outcomes,
		log:      cfg.Logger,
		wake:     make(chan struct{}, 1),
		flushReq: make(chan uint64),
		closing:  make(chan struct{}),
		batches:  make(chan struct{}, batchesInFlight*cap(cfg.Uploader.requests)),
		done:     make(chan struct{}),
	}
	if l.log == nil {
		l.log = slog.New(slog.DiscardHandler)
	}
	if l.cfg.Accepted == nil {
		l.cfg.Accepted = func() uint64 { pushed, _ := l.q.Counts(); return pushed }
	}
	l.ctx, l.cancel = context.WithCancelCause(context.Background())
	return l
}

// Start starts the Loop's goroutine. Call it once.
func (l *Loop[T]) Start() { go l.run() }

// Wake makes the Loop look at its queue again: call it when the queue
// reaches FlushAt, or when events join the backlog (LoopConfig.Refill). It
// never blocks.
func (l *Loop[T]) Wake() {
	select {
	case l.wake <- struct{}{}:
	default:
	}
}

// Close makes the Loop cut everything queued, and what the backlog still
// holds, without waiting for FlushAt; it ends, closing Done, once nothing
// is left to cut and every upload has ended. It is safe to call more than
// once.
func (l *Loop[T]) Close() { l.closeOnce.Do(func() { close(l.closing) }) }

// Cancel cancels every upload, with cause as the reason of the events'
// *BatchError, and ends the Loop without cutting what is left (see Drain).
func (l *Loop[T]) Cancel(cause error) { l.cancel(cause) }

// Cause returns why the uploads were cancelled: the cause given to Cancel,
// or the internal error that stopped the Loop; nil while they may run.
func (l *Loop[T]) Cause() error { return context.Cause(l.ctx) }

// Done returns a channel closed once the Loop's goroutine and every upload
// it started have ended.
func (l *Loop[T]) Done() <-chan struct{} { return l.done }

// Batches returns the number of batches cut so far.
func (l *Loop[T]) Batches() int64 { return l.cut.Load() }

// Drain reports every event still queued as ended with err, oldest first,
// as an upload reports them. Call it once Done is closed, after a Cancel
// left events queued.
func (l *Loop[T]) Drain(err error) {
	if left := l.q.Drain(); len(left.Items) > 0 {
		l.settle(&report[T]{items: left.Items}, err)
	}
}

// run is the goroutine that cuts batches. It ends, closing done, once the
// Loop is closed and everything queued has been cut (or the uploads were
// cancelled), and every upload has returned.
func (l *Loop[T]) run() {
	defer close(l.done)
	defer l.uploads.Wait()
	defer func() {
		if p := recover(); p != nil {
			// A bug of ours must not take the application down, nor lose
			// events silently: stop taking events and fail what is queued.
			// Logged last, so that nothing depends on the log call.
			if l.cfg.Halted != nil {
				l.cfg.Halted()
			}
			l.cancel(fmt.Errorf("analytics: internal error: %v", p))
			l.log.Error("analytics: internal error; the client stops", slog.Any("panic", p))
		}
	}()
	l.loop()
}

func (l *Loop[T]) loop() {
	timer := time.NewTimer(l.cfg.FlushInterval)
	defer timer.Stop()
	var flushTo uint64 // events numbered below this are sent without waiting for FlushAt
	closing := l.closing
	for {
		backlog := l.cfg.Refill != nil && l.cfg.Refill()
		var tokens chan struct{}
		if l.wantCut(flushTo, backlog) {
			tokens = l.batches
		} else if closing == nil && !backlog {
			return // closed and everything has been cut
		}
		select {
		case tokens <- struct{}{}:
			// The first attempts of batches take request slots here, in
			// the order the batches are cut, so they go out in order.
			s, err := l.up.acquire(l.ctx)
			if err != nil {
				<-l.batches
				return // cancelled
			}
			l.cutOne(s)
			timer.Reset(l.cfg.FlushInterval)
		case <-l.wake:
		case <-timer.C:
			flushTo = l.cfg.Accepted()
			timer.Reset(l.cfg.FlushInterval)
		case t := <-l.flushReq:
			flushTo = max(flushTo, t)
		case <-closing:
			closing, flushTo = nil, math.MaxUint64
		case <-l.ctx.Done():
			return // cancelled
		}
	}
}

// wantCut reports whether a batch is due (SPEC §3): FlushAt events are
// queued, or events are queued that a flush asked for, or the queue is as
// full as it gets while more wait in the backlog.
func (l *Loop[T]) wantCut(flushTo uint64, backlog bool) bool {
	n := l.q.Len()
	if n >= l.cfg.FlushAt || backlog && n > 0 {
		return true
	}
	_, taken := l.q.Counts()
	return n > 0 && taken < flushTo
}

// cutOne splices the next batch off the queue and starts its upload. The
// caller holds a batch token and s, the request slot of the batch's first
// attempt, which the upload gives back.
func (l *Loop[T]) cutOne(s *slot) {
	l.mu.Lock()
	b := l.q.Take(l.cfg.FlushAt, l.up.EventBytes())
	if len(b.Items) > 0 {
		l.inflight = append(l.inflight, b.Seq)
	}
	l.mu.Unlock()
	if len(b.Items) == 0 {
		s.release()
		<-l.batches
		return
	}
	l.cut.Add(1)
	l.uploads.Add(1)
	go l.send(b, s)
}

// send uploads one batch, its first attempt on s, and reports every event
// of it exactly once.
func (l *Loop[T]) send(b queue.Batch[T], s *slot) {
	r := &report[T]{items: b.Items, token: true}
	defer s.release() // deliver releases it; this covers a panic before deliver runs
	defer func() {
		l.batchDone(b.Seq)
		l.giveBackToken(r)
		l.uploads.Done()
	}()
	defer func() {
		if p := recover(); p != nil {
			// A bug of ours must not take the application down, nor lose
			// events or report one twice: report the rest from where the
			// panic stopped. Logged last, so that nothing depends on the
			// log call.
			l.settle(r, &BatchError{Reason: fmt.Errorf("analytics: internal error: %v", p)})
			l.log.Error("analytics: internal error while uploading a batch", slog.Any("panic", p))
		}
	}()
	skip, err := l.out.Unsent(r.items)
	if skip > 0 {
		l.end(r, skip, err)
	}
	if skip == len(b.Items) {
		return
	}
	events := eventsFor(len(b.Items) - skip)
	for i, it := range b.Items[skip:] {
		events[i] = it.Data
	}
	l.up.deliverOn(l.ctx, s, events, func(lo, hi int, err error) {
		lo, hi = lo+skip, hi+skip
		if lo != r.ended {
			// deliver reports runs in order; anything else is a bug of
			// ours, which the recover above settles.
			panic(fmt.Sprintf("events [%d, %d) reported after [0, %d)", lo, hi, r.ended))
		}
		l.end(r, hi, err)
	})
	if r.ended == len(b.Items) && l.up.eventsDoneAtReturn() {
		// Every attempt has ended and every event is reported: nothing
		// reads the events' bytes any more, and their memory may take the
		// next ones.
		clear(events)
		eventSlices.Put(&events)
		l.q.Recycle(b)
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
type report[T any] struct {
	items  []queue.Item[T]
	ended  int   // events [0, ended) have their outcome: released, Ended called
	err    error // the outcome of events [called, ended)
	called int   // events [0, called) have had Called
	done   int   // events [0, done) have had Done
	// token: r holds a batch token, which send gives back when the batch
	// ends, or end before the first Called (CallsMayBlock).
	token bool
}

// giveBackToken gives the batch's token back, if r still holds it, so
// that the loop may cut another batch.
func (l *Loop[T]) giveBackToken(r *report[T]) {
	if r.token {
		r.token = false
		<-l.batches
	}
}

// end records that the events up to hi ended with err (nil: delivered):
// it gives back their room in the queue and reports them.
func (l *Loop[T]) end(r *report[T], hi int, err error) {
	l.callBack(r) // the rest of the run before, if a panic cut it short
	run := r.items[r.ended:hi]
	r.ended, r.err = hi, err
	size := 0
	for _, it := range run {
		size += it.Size()
	}
	l.q.Release(len(run), size)
	l.out.Ended(run, err)
	if l.cfg.CallsMayBlock {
		// The calls may block: what the loop needs to cut the next batch
		// is given back before they run.
		l.giveBackToken(r)
	}
	l.callBack(r)
}

// callBack makes the Called step for each event that has its outcome and
// has not had it, then the Done step for them.
func (l *Loop[T]) callBack(r *report[T]) {
	for r.called < r.ended {
		it := &r.items[r.called]
		r.called++
		l.out.Called(it, r.err)
	}
	if r.done < r.called {
		lo := r.done
		r.done = r.called
		l.out.Done(r.items[lo:r.called], r.err)
	}
}

// settle reports every event of r not reported yet: the rest of the run
// under way with its own outcome, the events after it with err. It goes
// on after a panic, from the marks, so that it always finishes.
func (l *Loop[T]) settle(r *report[T], err error) {
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
		l.log.Error("analytics: internal error while reporting events", slog.Any("panic", again))
	}
}
