package consumer

import (
	"context"
	"slices"
)

// flushWaiter is a Flush waiting for every event numbered below target.
type flushWaiter struct {
	target uint64
	done   chan struct{}
	err    error // what Flush returns once done is closed
}

// Flush makes the Loop send every event numbered below target (as the
// queue numbers them, from 0) without waiting for FlushAt or
// FlushInterval, and returns once each of them has left the queue and its
// batch has ended, or when ctx ends, returning ctx.Err(). Events
// still in flight when ctx ends go on as usual. A Flush still waiting when
// EndFlushes runs returns what EndFlushes says.
func (l *Loop) Flush(ctx context.Context, target uint64) error {
	w := l.addWaiter(target)
	if w == nil {
		return nil
	}
	select {
	case l.flushReq <- target:
	case <-l.done:
	case <-ctx.Done():
		l.dropWaiter(w)
		return ctx.Err()
	}
	select {
	case <-w.done:
		return w.err
	case <-ctx.Done():
		l.dropWaiter(w)
		return ctx.Err()
	}
}

// EndFlushes ends every Flush still waiting, once Done is closed and what
// was left queued is drained: those whose events have all ended return
// nil, the others err (their events are not in the queue, and will not
// end in this Loop).
func (l *Loop) EndFlushes(err error) {
	l.notifyWaiters()
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, w := range l.waiters {
		w.err = err
		close(w.done)
	}
	l.waiters = nil
}

// addWaiter registers a Flush, or returns nil if everything below target
// already has its outcome.
func (l *Loop) addWaiter(target uint64) *flushWaiter {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.flushedTo(target) {
		return nil
	}
	w := &flushWaiter{target: target, done: make(chan struct{})}
	l.waiters = append(l.waiters, w)
	return w
}

func (l *Loop) dropWaiter(w *flushWaiter) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.waiters = slices.DeleteFunc(l.waiters, func(x *flushWaiter) bool { return x == w })
}

// flushedTo reports whether every event numbered below target has left the
// queue and its batch has ended. l.mu is held.
func (l *Loop) flushedTo(target uint64) bool {
	if _, taken := l.q.Counts(); taken < target {
		return false
	}
	for _, seq := range l.inflight {
		if seq < target {
			return false
		}
	}
	return true
}

// batchDone records the end of the batch starting at seq and releases the
// Flush calls that were waiting for it.
func (l *Loop) batchDone(seq uint64) {
	l.mu.Lock()
	if i := slices.Index(l.inflight, seq); i >= 0 {
		l.inflight = slices.Delete(l.inflight, i, i+1)
	}
	l.mu.Unlock()
	l.notifyWaiters()
}

func (l *Loop) notifyWaiters() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.waiters = slices.DeleteFunc(l.waiters, func(w *flushWaiter) bool {
		if l.flushedTo(w.target) {
			close(w.done)
			return true
		}
		return false
	})
}
