package consumer

import (
	"context"
	"sync/atomic"
	"time"

	"github.com/dualpath/analytics-go/retry"
)

// ready waits at the Uploader's gate (retry.Gate: the rate-limit pause,
// the send rate's turn, then the request slot, SPEC §5) until the batch's
// next attempt may go, and returns its slot and admission: slot itself
// when it still holds one of u's, else one taken once the gate lets the
// attempt through. A batch waits without a slot. It counts each wait at
// the pause in Counters.RateLimitedWaits. It returns the gate's error
// (retry.ErrRetriesStopped, ErrRateLimitBudgetExceeded or
// ErrBackoffBudgetExceeded) or the context's cause instead.
func (u *Uploader) ready(ctx context.Context, slot *slot, budget *retry.Budget) (*slot, retry.Admission, error) {
	var w retry.Waiter
	paused := false
	for {
		a, err := u.gate.Admit(time.Now(), &w, budget, u.holds(slot))
		switch {
		case err != nil:
		case a.Go:
			return slot, a, nil
		case a.Slot:
			if slot, err = u.acquire(ctx); err == nil {
				continue
			}
		default:
			slot.release()
			if a.Paused && !paused {
				u.stats.gateWaits.Add(1)
			}
			paused = a.Paused
			if err = sleep(ctx, a.Until, a.Wake); err == nil {
				continue
			}
		}
		slot.release()
		u.gate.Leave(&w)
		return nil, retry.Admission{}, err
	}
}

// sleep waits until the time until (zero: no time), until wake is closed
// (nil: never), or until ctx ends; then it returns context.Cause(ctx).
// The gate passes a wake channel that is closed when waiting attempts
// should ask again; a backoff wait, the one closed when the API recovers,
// so that a batch sleeping through a long backoff goes at once (the send
// rate still spaces it). StopRetries closes both.
func sleep(ctx context.Context, until time.Time, wake <-chan struct{}) error {
	var due <-chan time.Time
	if !until.IsZero() {
		d := time.Until(until)
		if d <= 0 {
			return context.Cause(ctx)
		}
		t := time.NewTimer(d)
		defer t.Stop()
		due = t.C
	}
	select {
	case <-due:
	case <-wake:
	case <-ctx.Done():
	}
	return context.Cause(ctx)
}

// A slot is the right to have one request in flight: one of the
// MaxConcurrentRequests an Uploader allows, as a rate.Reservation carries
// its token (SPEC §4). acquire takes one and release gives it back. release
// acts once, however often it is called, so a slot is never given back
// twice; deliverOn releases the slot it is handed whatever happens, so
// none is kept. The zero slot, a nil *slot and a released one hold
// nothing. The Loop takes the first slot of each batch in the order it
// cuts them. release is safe to call from any goroutine.
type slot struct {
	tokens   chan struct{} // the Uploader's; nil for the zero slot
	released atomic.Bool
}

// acquire takes a request slot, waiting while MaxConcurrentRequests
// requests are in flight, or returns the context's cause.
func (u *Uploader) acquire(ctx context.Context) (*slot, error) {
	select {
	case u.requests <- struct{}{}:
		return &slot{tokens: u.requests}, nil
	case <-ctx.Done():
		return nil, context.Cause(ctx)
	}
}

// release gives the slot back. Only the first call on a slot that holds
// one does anything.
func (s *slot) release() {
	if s != nil && s.tokens != nil && s.released.CompareAndSwap(false, true) {
		<-s.tokens
	}
}

// holds reports whether s holds one of u's request slots.
func (u *Uploader) holds(s *slot) bool {
	return s != nil && s.tokens == u.requests && !s.released.Load()
}
