package consumer

import (
	"context"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/dualpath/analytics-go/retry"
)

// sendLine is where attempts wait for the client-wide send rate
// (retry.SendRate, SPEC §5). Only the first in line asks for a turn: the
// attempt that came first, except while the rate probes, when it is the
// attempt of the batch that has spent the fewest retries (the first of
// those that came), so that the batches held back through an outage spend
// their retries evenly and none runs out long before the others. A nil
// rate (the send rate turned off) admits everything at once.
//
// Waiting is event-driven, with no polling: a waiter sleeps until the
// turn the rate announced is due, until the line changes (an attempt
// ended, the head left), or until its context or its backoff budget ends.
type sendLine struct {
	rate *retry.SendRate

	mu      sync.Mutex
	line    []waiter      // the waiting attempts, in the order they came
	ticket  uint64        // the last ticket given
	changed chan struct{} // closed and replaced when the first in line should ask again
	// recovered is closed and replaced when the client sees the API recover
	// after it seemed down: batches sleeping through a backoff wait go.
	recovered chan struct{}

	held atomic.Int64 // attempts that waited in line
}

// A waiter is an attempt waiting in line.
type waiter struct {
	ticket  uint64
	retries int // the backoff-path retries its batch has spent
}

func newSendLine(rate *retry.SendRate) *sendLine {
	return &sendLine{rate: rate, changed: make(chan struct{}), recovered: make(chan struct{})}
}

// admit returns the send rate's turn for the next attempt of a batch, and
// the channel that is closed when the API recovers after now, for the
// backoff wait that may follow. When the attempt is held back, it gives
// slot back first (a batch waits in line without a request slot). It
// fails with retry.ErrBackoffBudgetExceeded when budget has no room for
// the wait (at once when the wait is known, else when the budget ends), or
// with the context's cause. Once stop is closed (the Uploader's
// StopRetries), it admits at once, with no turn: nothing is held back.
func (l *sendLine) admit(ctx context.Context, slot *slot, budget *retry.Budget, stop <-chan struct{}) (retry.Turn, <-chan struct{}, error) {
	if l.rate == nil || closed(stop) {
		return retry.Turn{}, nil, nil
	}
	l.mu.Lock()
	if len(l.line) == 0 {
		if turn, _, ok := l.rate.Admit(time.Now()); ok {
			recovered := l.recovered
			l.mu.Unlock()
			return turn, recovered, nil
		}
	}
	l.ticket++
	me := l.ticket
	l.line = append(l.line, waiter{ticket: me, retries: budget.Retries()})
	l.mu.Unlock()
	l.held.Add(1)
	slot.release()

	var budgetEnd <-chan time.Time
	if end, ok := budget.BackoffDeadline(); ok {
		t := time.NewTimer(time.Until(end))
		defer t.Stop()
		budgetEnd = t.C
	}
	l.mu.Lock()
	for {
		if closed(stop) {
			l.leave(me)
			l.mu.Unlock()
			return retry.Turn{}, nil, nil
		}
		var wait time.Duration
		if l.first() == me {
			now := time.Now()
			turn, d, ok := l.rate.Admit(now)
			if ok {
				l.leave(me)
				recovered := l.recovered
				l.mu.Unlock()
				return turn, recovered, nil
			}
			if !budget.HoldFits(now, d) {
				l.leave(me)
				l.mu.Unlock()
				return retry.Turn{}, nil, retry.ErrBackoffBudgetExceeded
			}
			wait = d
		}
		changed := l.changed
		l.mu.Unlock()
		err := waitTurn(ctx, wait, changed, budgetEnd)
		l.mu.Lock()
		if err != nil {
			l.leave(me)
			l.mu.Unlock()
			return retry.Turn{}, nil, err
		}
	}
}

// closed reports whether ch is closed.
func closed(ch <-chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}

// waitTurn waits until wait has passed (0: no timer), changed is closed,
// the budget ends (retry.ErrBackoffBudgetExceeded) or ctx ends (its
// cause).
func waitTurn(ctx context.Context, wait time.Duration, changed <-chan struct{}, budgetEnd <-chan time.Time) error {
	var due <-chan time.Time
	if wait > 0 {
		t := time.NewTimer(wait)
		defer t.Stop()
		due = t.C
	}
	select {
	case <-due:
	case <-changed:
	case <-budgetEnd:
		return retry.ErrBackoffBudgetExceeded
	case <-ctx.Done():
		return context.Cause(ctx)
	}
	return nil
}

// first returns the ticket of the attempt that asks for the next turn.
// l.mu is held.
func (l *sendLine) first() uint64 {
	if !l.rate.Probing() {
		return l.line[0].ticket
	}
	head := l.line[0]
	for _, w := range l.line[1:] {
		if w.retries < head.retries {
			head = w
		}
	}
	return head.ticket
}

// leave takes ticket out of the line, and wakes the line: the next first
// asks. l.mu is held.
func (l *sendLine) leave(ticket uint64) {
	l.line = slices.DeleteFunc(l.line, func(w waiter) bool { return w.ticket == ticket })
	if len(l.line) > 0 {
		l.announce()
	}
}

// announce wakes the line. l.mu is held.
func (l *sendLine) announce() {
	close(l.changed)
	l.changed = make(chan struct{})
}

// end reports the end of an admitted attempt (o: its outcome, 0 when it
// was not sent) to the send rate, wakes the line to ask again, and, when
// the attempt showed the API has recovered, the batches sleeping through
// a backoff wait.
func (l *sendLine) end(turn retry.Turn, o retry.Outcome) {
	if l.rate == nil {
		return
	}
	recovered := l.rate.End(turn, time.Now(), o)
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.line) > 0 {
		l.announce()
	}
	if recovered {
		close(l.recovered)
		l.recovered = make(chan struct{})
	}
}

// waiting returns how many attempts wait in line now.
func (l *sendLine) waiting() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.line)
}
