package consumer

import (
	"context"
	"time"
)

// ready returns the slot of the next attempt once the client-wide
// rate-limit pause is open: slot itself when it still holds one of u's and
// the pause is open, else a new one, taken after waiting out the pause
// without a slot. It returns the context's cause, or
// ErrRateLimitBudgetExceeded from the pause, instead.
func (u *Uploader) ready(ctx context.Context, slot *Slot) (*Slot, error) {
	for {
		if u.holds(slot) {
			if !u.pause.Until().After(time.Now()) {
				return slot, nil
			}
			// The client is paused by a Retry-After: wait without the slot.
			slot.Release()
		}
		waited, err := u.wait(ctx)
		if waited {
			u.stats.gateWaits.Add(1)
		}
		if err != nil {
			return nil, err
		}
		if slot, err = u.Acquire(ctx); err != nil {
			return nil, err
		}
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
		if err := sleep(ctx, d); err != nil {
			return waited, err
		}
	}
}

// sleep waits d, or until ctx ends; then it returns context.Cause(ctx).
func sleep(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return context.Cause(ctx)
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return context.Cause(ctx)
	}
}
