package analytics

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"net/http"
	"slices"
	"sync"
	"time"

	"github.com/dualpath/analytics-go/consumer"
	"github.com/dualpath/analytics-go/queue"
	"github.com/dualpath/analytics-go/retry"
)

// batchesInFlight × MaxConcurrentRequests batches may be cut and not yet
// finished. Only MaxConcurrentRequests of them have a request in flight;
// the others wait for a slot or to retry, so that a batch in backoff does
// not stop the rest. Their events still count against the queue's bounds.
const batchesInFlight = 4

// run is the goroutine that cuts batches. Before each cut it takes a batch
// token (at most batchesInFlight × MaxConcurrentRequests batches are cut
// and not finished) and the request slot of the batch's first attempt, so
// first attempts go out in cut order; then it starts the batch's upload on
// a goroutine of its own. It ends, closing done, once shutdown has begun
// and everything queued has been cut (or Shutdown's context has ended), and
// every upload has returned.
func (c *Client) run() {
	defer close(c.done)
	defer c.uploads.Wait()
	defer func() {
		if p := recover(); p != nil {
			// A bug of ours must not take the application down, nor lose
			// events silently: stop taking events and fail what is queued.
			// Logged last, so that nothing depends on the log call.
			c.stopIntake()
			c.cancel(fmt.Errorf("analytics: internal error: %v", p))
			c.log.Error("analytics: internal error; the client stops", slog.Any("panic", p))
		}
	}()
	c.loop()
}

func (c *Client) loop() {
	timer := time.NewTimer(c.cfg.flushInterval)
	defer timer.Stop()
	var flushTo uint64 // events numbered below this are sent without waiting for FlushAt
	closing := c.closing
	for {
		backlog := c.refill()
		var slots chan struct{}
		if c.wantCut(flushTo, backlog) {
			slots = c.batches
		} else if closing == nil && !backlog {
			return // shutting down and everything has been cut
		}
		select {
		case slots <- struct{}{}:
			// The first attempts of batches take request slots here, in
			// the order the batches are cut, so they go out in order.
			slot, err := c.up.Acquire(c.ctx)
			if err != nil {
				<-c.batches
				return // Shutdown ran out of time
			}
			c.cut(slot)
			timer.Reset(c.cfg.flushInterval)
		case <-c.wake:
		case <-c.room:
		case <-timer.C:
			flushTo = c.accepted()
			timer.Reset(c.cfg.flushInterval)
		case t := <-c.flushReq:
			flushTo = max(flushTo, t)
		case <-closing:
			closing, flushTo = nil, math.MaxUint64
		case <-c.ctx.Done():
			return // Shutdown ran out of time
		}
	}
}

// wantCut reports whether a batch is due: FlushAt events are queued, or
// events are queued that a flush asked for, or the queue is as full as it
// gets while more wait in the spool (backlog).
func (c *Client) wantCut(flushTo uint64, backlog bool) bool {
	n := c.queue.Len()
	if n >= c.cfg.flushAt || backlog && n > 0 {
		return true
	}
	_, taken := c.queue.Counts()
	return n > 0 && taken < flushTo
}

// cut splices the next batch off the queue and starts its upload. The
// caller holds a batch token and slot, the request slot of the batch's
// first attempt, which the upload gives back.
func (c *Client) cut(slot *consumer.Slot) {
	c.mu.Lock()
	b := c.queue.Take(c.cfg.flushAt, c.up.EventBytes())
	if len(b.Items) > 0 {
		c.inflight = append(c.inflight, b.Seq)
	}
	c.mu.Unlock()
	if len(b.Items) == 0 {
		slot.Release()
		<-c.batches
		return
	}
	c.stats.batches.Add(1)
	c.uploads.Add(1)
	go c.send(b, slot)
}

// send uploads one batch, its first attempt on slot, and reports every
// event of it exactly once.
func (c *Client) send(b queue.Batch[held], slot *consumer.Slot) {
	r := &report{items: b.Items, token: true}
	defer slot.Release() // Deliver releases it; this covers a panic before Deliver runs
	defer func() {
		c.batchDone(b.Seq)
		c.giveBackToken(r)
		c.uploads.Done()
	}()
	defer func() {
		if p := recover(); p != nil {
			// A bug of ours must not take the application down, nor lose
			// events or report one twice: report the rest from where the
			// panic stopped. Logged last, so that nothing depends on the
			// log call.
			c.settle(r, &BatchError{Reason: fmt.Errorf("analytics: internal error: %v", p)})
			c.log.Error("analytics: internal error while uploading a batch", slog.Any("panic", p))
		}
	}()
	skip := 0 // damaged events read back from the spool, failed at once
	if c.spool != nil {
		skip = c.failDamaged(r)
	}
	if skip == len(b.Items) {
		return
	}
	events := eventsFor(len(b.Items) - skip)
	for i, it := range b.Items[skip:] {
		events[i] = it.Data
	}
	c.up.Deliver(c.ctx, slot, events, func(lo, hi int, err error) {
		lo, hi = lo+skip, hi+skip
		if lo != r.ended {
			// Deliver reports runs in order; anything else is a bug of
			// ours, which the recover above settles.
			panic(fmt.Sprintf("events [%d, %d) reported after [0, %d)", lo, hi, r.ended))
		}
		c.end(r, hi, err)
	})
	if r.ended == len(b.Items) && c.up.EventsDoneAtReturn() {
		// Every attempt has ended and every event is reported: nothing
		// reads the events' bytes any more, and their memory may take the
		// next ones.
		clear(events)
		eventSlices.Put(&events)
		c.queue.Recycle(b)
	}
}

// eventSlices keeps the slices send hands Deliver (*[][]byte), emptied,
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
	items  []queue.Item[held]
	ended  int   // events [0, ended) have their outcome: released and counted
	err    error // the outcome of events [called, ended)
	called int   // events [0, called) have had their callback
	acked  int   // events [0, acked) are marked done in the spool (if any)
	// token: r holds a batch token, which send gives back when the batch
	// ends, or end before the first callback (WithBlockingCallbacks).
	token bool
}

// giveBackToken gives the batch's token back, if r still holds it, so
// that the loop may cut another batch.
func (c *Client) giveBackToken(r *report) {
	if r.token {
		r.token = false
		<-c.batches
	}
}

// end records that the events up to hi ended with err (nil: delivered):
// it gives back their queue budget, counts them, and calls back each.
func (c *Client) end(r *report, hi int, err error) {
	c.callBack(r) // the rest of the run before, if a panic cut it short
	run := r.items[r.ended:hi]
	r.ended, r.err = hi, err
	size := 0
	for _, it := range run {
		size += it.Size()
	}
	c.queue.Release(len(run), size)
	if c.spool != nil && c.spool.Backlog() > 0 {
		select {
		case c.room <- struct{}{}:
		default:
		}
	}
	n := int64(len(run))
	switch {
	case err == nil:
		c.stats.delivered.Add(n)
		c.stats.latency.ended(run, true)
	case c.leaves(err):
		// Left in the spool for the next start: not an outcome.
	default:
		c.stats.failed(err, n)
		c.stats.latency.ended(run, false)
		msg := "analytics: events not delivered"
		var he *HTTPError
		switch {
		case !errors.As(err, &he):
		case retry.RejectsCredentials(he.StatusCode):
			msg += ": the tracking API refused the write key; " + retry.Check(he.StatusCode)
		case retry.RejectsEndpoint(he.StatusCode):
			msg += fmt.Sprintf(": the tracking API answered %d %s; %s", he.StatusCode, http.StatusText(he.StatusCode), retry.Check(he.StatusCode))
		}
		c.failLog.LogAttrs(context.Background(), slog.LevelError, msg,
			slog.Int("events", len(run)), slog.String("error", err.Error()))
	}
	if c.cfg.blockingCallbacks {
		// The callbacks may block (on EnqueueContext, say): what the loop
		// needs to cut the next batch is given back before they run.
		c.giveBackToken(r)
	}
	c.callBack(r)
}

// callBack calls the callback for each event that has its outcome and has
// not been called back, then, with a spool, marks their records done.
// Events a shutdown leaves in the spool get no callback: they have no
// outcome yet.
func (c *Client) callBack(r *report) {
	if c.callback == nil || c.leaves(r.err) {
		r.called = r.ended
	}
	for r.called < r.ended {
		it := &r.items[r.called]
		r.called++
		msg := it.Value.msg
		if msg == nil {
			msg = spooledMessage(it.Data, it.Value.from == fromEarlier)
		}
		c.callOne(msg, r.err)
	}
	c.ack(r)
}

// settle reports every event of r not reported yet: the rest of the run
// under way with its own outcome, the events after it with err. It goes
// on after a panic, from the marks, so that it always finishes.
func (c *Client) settle(r *report, err error) {
	var again any
	for r.called < len(r.items) {
		func() {
			defer func() {
				if p := recover(); p != nil {
					again = p
				}
			}()
			if r.called < r.ended {
				c.callBack(r)
				return
			}
			c.end(r, len(r.items), err)
		}()
	}
	if again != nil {
		c.log.Error("analytics: internal error while reporting events", slog.Any("panic", again))
	}
}

// callOne calls the user's callback, recovering a panic so that it neither
// crashes the program nor stops the other events' callbacks.
func (c *Client) callOne(msg Message, err error) {
	defer func() {
		if p := recover(); p != nil {
			c.log.Error("analytics: callback panicked", slog.Any("panic", p))
		}
	}()
	if err == nil {
		c.callback.Success(msg)
	} else {
		c.callback.Failure(msg, err)
	}
}

// flushWaiter is a Flush waiting for every event numbered below target.
type flushWaiter struct {
	target uint64
	done   chan struct{}
	err    error // what Flush returns once done is closed
}

// addWaiter registers a Flush, or returns nil if everything below target
// already has its outcome.
func (c *Client) addWaiter(target uint64) *flushWaiter {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.flushedTo(target) {
		return nil
	}
	w := &flushWaiter{target: target, done: make(chan struct{})}
	c.waiters = append(c.waiters, w)
	return w
}

func (c *Client) dropWaiter(w *flushWaiter) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.waiters = slices.DeleteFunc(c.waiters, func(x *flushWaiter) bool { return x == w })
}

// flushedTo reports whether every event numbered below target has left the
// queue and its batch has ended. c.mu is held.
func (c *Client) flushedTo(target uint64) bool {
	if _, taken := c.queue.Counts(); taken < target {
		return false
	}
	for _, seq := range c.inflight {
		if seq < target {
			return false
		}
	}
	return true
}

// batchDone records the end of the batch starting at seq and releases the
// Flush calls that were waiting for it.
func (c *Client) batchDone(seq uint64) {
	c.mu.Lock()
	if i := slices.Index(c.inflight, seq); i >= 0 {
		c.inflight = slices.Delete(c.inflight, i, i+1)
	}
	c.mu.Unlock()
	c.notifyWaiters()
}

// releaseWaiters ends every Flush still waiting once the client has shut
// down, with ErrClosed: what they wait for stays in the spool (WithSpool)
// and will not end in this client.
func (c *Client) releaseWaiters() {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, w := range c.waiters {
		w.err = ErrClosed
		close(w.done)
	}
	c.waiters = nil
}

func (c *Client) notifyWaiters() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.waiters = slices.DeleteFunc(c.waiters, func(w *flushWaiter) bool {
		if c.flushedTo(w.target) {
			close(w.done)
			return true
		}
		return false
	})
}
