package consumer

import (
	"context"
	"time"
)

// Clock is the time seam of the retry loop. Now must carry a monotonic
// reading (as time.Now does) so that budgets are durations, never
// wall-clock differences. Tests pass a fake that records and skips waits.
type Clock interface {
	// Now returns the current time.
	Now() time.Time
	// Sleep waits d, or until ctx ends; then it returns context.Cause(ctx).
	Sleep(ctx context.Context, d time.Duration) error
}

// SystemClock returns the Clock of the time package.
func SystemClock() Clock { return systemClock{} }

type systemClock struct{}

// Now returns time.Now().
func (systemClock) Now() time.Time { return time.Now() }

// Sleep waits on a timer or ctx.
func (systemClock) Sleep(ctx context.Context, d time.Duration) error {
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
