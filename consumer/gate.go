package consumer

import "context"

// wait returns once the client-wide rate-limit pause is over, reporting
// whether it had to wait. It returns ErrRateLimitBudgetExceeded when the
// pause would hold the batch past what the rate-limit episode may take
// (see retry.Pause), or the context's cause when ctx ends first. The pause
// may be extended while waiting.
func (u *Uploader) wait(ctx context.Context) (waited bool, err error) {
	for {
		d, err := u.pause.Wait(u.clock.Now(), &u.policy)
		if err != nil || d <= 0 {
			return waited, err
		}
		waited = true
		if err := u.clock.Sleep(ctx, d); err != nil {
			return waited, err
		}
	}
}
