package consumer

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"slices"
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

// LoopConfig is what a Loop needs. Every field is required unless marked
// optional.
type LoopConfig struct {
	// Queue is where the events wait; the Loop cuts its batches from it
	// and releases their room once they end. The Loop does not see
	// pushes: whoever pushes calls Wake when the queue reaches FlushAt.
	Queue *queue.Queue[Event]
	// Uploader sends the batches.
	Uploader *Uploader
	// Outcomes receives every event's outcome.
	Outcomes Outcomes
	// FlushAt is the number of queued events that makes a batch due, and
	// the most a batch cut holds. The analytics package bounds it at
	// 2,500, the most events the API takes in a request; the Uploader
	// splits a larger batch before it is sent.
	FlushAt int
	// FlushInterval is how long after the last cut the events taken by
	// then (Accepted) are sent without waiting for FlushAt.
	FlushInterval time.Duration
	// CallsMayBlock is optional: Outcomes.Called may block (a callback
	// that enqueues and waits, say), so the Loop gives back what it needs
	// to cut the next batch before a run's calls instead of after the
	// batch.
	CallsMayBlock bool
	// Refill and Accepted are optional, for an owner that keeps the
	// events the queue has no room for elsewhere (a backlog; the analytics
	// package's spool). Refill, called on the Loop's goroutine before it
	// looks at the queue, moves what fits into it and reports whether some
	// still wait; while they do, the Loop cuts whatever is queued without
	// waiting for FlushAt. Call Wake when events join the backlog.
	// Accepted is the number of events taken so far, the backlog's
	// included, numbered as the queue numbers them: FlushInterval sends
	// those numbered below it. Nil: none wait elsewhere, and Accepted is
	// the events pushed into the queue.
	Refill   func() (backlog bool)
	Accepted func() uint64
	// Halted is optional: it is called, on the Loop's goroutine, if the
	// Loop stops on an internal error (a panic of a bug), so that the
	// owner stops taking events; what is queued then fails with Drain.
	Halted func()
	// Damaged is optional: the error an event whose Event.Damaged is set
	// fails with (inside a *BatchError), before its batch is uploaded and
	// without being sent. Nil: a generic one.
	Damaged error
	// Logger is optional; it receives the internal errors the Loop
	// recovers from. Nil discards.
	Logger *slog.Logger
}

// Loop is the consumer of a queue: it cuts batches from the
// queue when FlushAt events are queued, FlushInterval after the last cut,
// or on Flush; uploads each with its Uploader, up to
// MaxConcurrentRequests at a time and 4 × MaxConcurrentRequests cut and
// not finished, first attempts going out in the order the batches were
// cut; and reports each event's outcome, exactly once, to its Outcomes.
// Create one with NewLoop and Start it; Close and wait for Done to end it.
// Its methods are safe for concurrent use.
type Loop struct {
	cfg LoopConfig

	wake    chan struct{} // Wake: the queue or the backlog changed, a Flush asked for more, or Close ran
	batches chan struct{} // a token per batch cut and not yet finished: see send
	done    chan struct{} // closed when the loop and every upload have ended
	cut     atomic.Int64  // batches cut

	// ctx is the context of every upload; Cancel cancels it.
	ctx    context.Context
	cancel context.CancelCauseFunc

	// mu guards flushTo and closed, and inflight, batchEnded and
	// flushErr: what Flush waits for.
	mu sync.Mutex
	// flushTo is the number below which events are sent without waiting
	// for FlushAt: raised by the FlushInterval timer, a Flush and Close.
	flushTo uint64
	// closed is set by Close, which raises flushTo past every event with
	// it: the loop ends once nothing is left to cut.
	closed   bool
	inflight []uint64 // Seq of every batch being uploaded
	// batchEnded is closed (and set to nil) when a batch ends or
	// EndFlushes runs, so that the Flush calls waiting look again; nil
	// while no Flush waits.
	batchEnded chan struct{}
	flushErr   error // set by EndFlushes: what a Flush still waiting returns

	uploads sync.WaitGroup
}

// NewLoop returns a Loop for cfg, not started. It does not validate cfg.
func NewLoop(cfg LoopConfig) *Loop {
	l := &Loop{
		cfg:     cfg,
		wake:    make(chan struct{}, 1),
		batches: make(chan struct{}, batchesInFlight*cap(cfg.Uploader.requests)),
		done:    make(chan struct{}),
	}
	l.cfg.Logger = cmp.Or(l.cfg.Logger, slog.New(slog.DiscardHandler))
	l.cfg.Damaged = cmp.Or(l.cfg.Damaged, errDamaged)
	if l.cfg.Accepted == nil {
		l.cfg.Accepted = func() uint64 { pushed, _ := l.cfg.Queue.Counts(); return pushed }
	}
	l.ctx, l.cancel = context.WithCancelCause(context.Background())
	return l
}

// errDamaged is what a Damaged event fails with when LoopConfig.Damaged
// is nil.
var errDamaged = errors.New("consumer: the event's record is damaged; it was not sent")

// Start starts the Loop's goroutine. Call it once.
func (l *Loop) Start() { go l.run() }

// Wake makes the Loop look at its queue again: call it when the queue
// reaches FlushAt, or when events join the backlog (LoopConfig.Refill). It
// never blocks.
func (l *Loop) Wake() {
	select {
	case l.wake <- struct{}{}:
	default:
	}
}

// Close makes the Loop cut everything queued, and what the backlog still
// holds, without waiting for FlushAt; it ends, closing Done, once nothing
// is left to cut and every upload has ended. It is safe to call more than
// once.
func (l *Loop) Close() {
	l.mu.Lock()
	l.closed, l.flushTo = true, math.MaxUint64
	l.mu.Unlock()
	l.Wake()
}

// Cancel cancels every upload, with cause as the reason of the events'
// *BatchError, and ends the Loop without cutting what is left (see Drain).
func (l *Loop) Cancel(cause error) { l.cancel(cause) }

// Cause returns why the uploads were cancelled: the cause given to Cancel,
// or the internal error that stopped the Loop; nil while they may run.
func (l *Loop) Cause() error { return context.Cause(l.ctx) }

// Done returns a channel closed once the Loop's goroutine and every upload
// it started have ended.
func (l *Loop) Done() <-chan struct{} { return l.done }

// Batches returns the number of batches cut so far.
func (l *Loop) Batches() int64 { return l.cut.Load() }

// Drain reports every event still queued as ended with err, oldest first,
// as an upload reports them. Call it once Done is closed, after a Cancel
// left events queued.
func (l *Loop) Drain(err error) {
	if left := l.cfg.Queue.Drain(); len(left.Items) > 0 {
		l.settle(&report{items: left.Items}, err)
	}
}

// run is the goroutine that cuts batches. It ends, closing done, once the
// Loop is closed and everything queued has been cut (or the uploads were
// cancelled), and every upload has returned.
func (l *Loop) run() {
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
			l.cfg.Logger.Error("analytics: internal error; the client stops", slog.Any("panic", p))
		}
	}()
	timer := time.NewTimer(l.cfg.FlushInterval)
	defer timer.Stop()
	for {
		backlog := l.cfg.Refill != nil && l.cfg.Refill()
		cut, closed := l.wantCut(backlog)
		var tokens chan struct{}
		if cut {
			tokens = l.batches
		} else if closed && !backlog {
			return // closed and everything has been cut
		}
		select {
		case tokens <- struct{}{}:
			batch := &slot{tokens: l.batches}
			// The first attempts of batches take request slots here, in
			// the order the batches are cut, so they go out in order.
			s, err := l.cfg.Uploader.acquire(l.ctx)
			if err != nil {
				batch.release()
				return // cancelled
			}
			l.cutOne(batch, s)
			timer.Reset(l.cfg.FlushInterval)
		case <-l.wake:
		case <-timer.C:
			l.flushBelow(l.cfg.Accepted())
			timer.Reset(l.cfg.FlushInterval)
		case <-l.ctx.Done():
			return // cancelled
		}
	}
}

// wantCut reports whether a batch is due (SPEC §3): FlushAt events are
// queued, or events are queued that a flush asked for (flushTo, which
// Close raises past every event), or the queue is as full as it gets while
// more wait in the backlog. It also reports whether Close has run, read
// before the queue, so that an event queued before Close is seen.
func (l *Loop) wantCut(backlog bool) (cut, closed bool) {
	l.mu.Lock()
	flushTo, closed := l.flushTo, l.closed
	l.mu.Unlock()
	n := l.cfg.Queue.Len()
	_, taken := l.cfg.Queue.Counts()
	return n >= l.cfg.FlushAt || n > 0 && (backlog || taken < flushTo), closed
}

// flushBelow raises flushTo to target: the FlushInterval timer's flush,
// on the loop's goroutine, which looks again at once.
func (l *Loop) flushBelow(target uint64) {
	l.mu.Lock()
	l.flushTo = max(l.flushTo, target)
	l.mu.Unlock()
}

// cutOne splices the next batch off the queue and starts its upload. The
// caller holds batch, the batch's token, and s, the request slot of its
// first attempt, which the upload gives back.
func (l *Loop) cutOne(batch, s *slot) {
	l.mu.Lock()
	b := l.cfg.Queue.Take(l.cfg.FlushAt, l.cfg.Uploader.eventBytes())
	if len(b.Items) > 0 {
		l.inflight = append(l.inflight, b.Seq)
	}
	l.mu.Unlock()
	if len(b.Items) == 0 {
		s.release()
		batch.release()
		return
	}
	l.cut.Add(1)
	l.uploads.Add(1)
	go l.send(b, batch, s)
}

// Flush makes the Loop send every event numbered below target (as the
// queue numbers them, from 0) without waiting for FlushAt or
// FlushInterval, and returns once each of them has left the queue and its
// batch has ended, or when ctx ends, returning ctx.Err(). Events
// still in flight when ctx ends go on as usual. A Flush still waiting when
// EndFlushes runs returns what EndFlushes says.
func (l *Loop) Flush(ctx context.Context, target uint64) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	for !l.flushedTo(target) {
		if l.flushErr != nil {
			return l.flushErr
		}
		// Not done: ask the loop, once, to send what is numbered below
		// target, and look again when a batch ends.
		if target > l.flushTo {
			l.flushTo = target
			l.Wake()
		}
		if l.batchEnded == nil {
			l.batchEnded = make(chan struct{})
		}
		ended := l.batchEnded
		l.mu.Unlock()
		select {
		case <-ended:
			l.mu.Lock()
		case <-ctx.Done():
			l.mu.Lock() // for the deferred Unlock
			return ctx.Err()
		}
	}
	return nil
}

// EndFlushes ends every Flush still waiting, once Done is closed and what
// was left queued is drained: those whose events have all ended return
// nil, the others err (their events are not in the queue, and will not
// end in this Loop). err must not be nil.
func (l *Loop) EndFlushes(err error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.flushErr = err
	l.wakeFlushes()
}

// flushedTo reports whether every event numbered below target has left the
// queue and its batch has ended. l.mu is held.
func (l *Loop) flushedTo(target uint64) bool {
	if _, taken := l.cfg.Queue.Counts(); taken < target {
		return false
	}
	return !slices.ContainsFunc(l.inflight, func(seq uint64) bool { return seq < target })
}

// batchDone records the end of the batch starting at seq and wakes the
// Flush calls waiting.
func (l *Loop) batchDone(seq uint64) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if i := slices.Index(l.inflight, seq); i >= 0 {
		l.inflight = slices.Delete(l.inflight, i, i+1)
	}
	l.wakeFlushes()
}

// wakeFlushes wakes the Flush calls waiting, if any. l.mu is held.
func (l *Loop) wakeFlushes() {
	if l.batchEnded != nil {
		close(l.batchEnded)
		l.batchEnded = nil
	}
}
