package consumer

import (
	"context"
	"time"

	"github.com/dualpath/analytics-go/retry"
)

// ready returns the slot of the next attempt, and its turn at the send
// rate, once the client-wide rate-limit pause is open and the send rate
// admits it (SPEC §5: the pause, then the turn, then the request slot): slot itself when it still holds one of u's and nothing held
// the attempt back, else a new one, taken after waiting without a slot.
// It also returns the channel that is closed when the API recovers, for
// the backoff wait that may follow the attempt. It returns the context's
// cause, ErrRateLimitBudgetExceeded from the pause, or
// ErrBackoffBudgetExceeded from the send rate, instead.
func (u *Uploader) ready(ctx context.Context, slot *slot, budget *retry.Budget) (*slot, retry.Turn, <-chan struct{}, error) {
	for {
		if u.pause.Until().After(time.Now()) && !u.retriesStopped() {
			// The client is paused by a Retry-After: wait without the slot.
			slot.release()
			waited, err := u.wait(ctx)
			if waited {
				u.stats.gateWaits.Add(1)
			}
			if err != nil {
				return nil, retry.Turn{}, nil, err
			}
		}
		turn, recovered, err := u.line.admit(ctx, slot, budget, u.stop)
		if err != nil {
			return nil, retry.Turn{}, nil, err
		}
		if !u.holds(slot) {
			if slot, err = u.acquire(ctx); err != nil {
				u.line.end(turn, 0)
				return nil, retry.Turn{}, nil, err
			}
		}
		if !u.pause.Until().After(time.Now()) || u.retriesStopped() {
			return slot, turn, recovered, nil
		}
		// A pause began while this attempt waited: it waits again.
		u.line.end(turn, 0)
	}
}

// wait returns once the client-wide rate-limit pause is over, reporting
// whether it had to wait. It returns ErrRateLimitBudgetExceeded when the
// pause would hold the batch past what the rate-limit episode may take
// (see retry.Pause), or the context's cause when ctx ends first. The pause
// may be extended while waiting.
func (u *Uploader) wait(ctx context.Context) (waited bool, err error) {
	for {
		d, err := u.pause.Wait(time.Now(), &u.policy)
		if err != nil || d <= 0 {
			return waited, err
		}
		waited = true
		if err := sleep(ctx, d, nil, u.stop); err != nil || u.retriesStopped() {
			return waited, err
		}
	}
}

// sleep waits d, until wake or stop is closed (nil: never), or until ctx
// ends; then it returns context.Cause(ctx). A backoff wait passes the
// channel the send line closes when the API recovers, so that a batch
// sleeping through a long backoff goes at once (the send rate still spaces
// it); the pause passes nil. Both pass the Uploader's stop (StopRetries).
func sleep(ctx context.Context, d time.Duration, wake, stop <-chan struct{}) error {
	if d <= 0 {
		return context.Cause(ctx)
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-wake:
		return context.Cause(ctx)
	case <-stop:
		return context.Cause(ctx)
	case <-ctx.Done():
		return context.Cause(ctx)
	}
}
