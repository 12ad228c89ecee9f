package consumer

import (
	"context"
	"sync"
	"time"
)

// gate is the client-wide rate-limit pause: one Retry-After from the server
// holds every upload of the client until the time it named has passed.
type gate struct {
	mu    sync.Mutex
	until time.Time
}

// hold extends the pause to at least until.
func (g *gate) hold(until time.Time) {
	g.mu.Lock()
	if until.After(g.until) {
		g.until = until
	}
	g.mu.Unlock()
}

func (g *gate) openAt() time.Time {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.until
}

// wait returns once the pause is over, reporting whether it had to wait, or
// returns the context's cause when ctx ends first. The pause may be
// extended while waiting.
func (g *gate) wait(ctx context.Context, clock Clock) (waited bool, err error) {
	for {
		d := g.openAt().Sub(clock.Now())
		if d <= 0 {
			return waited, nil
		}
		waited = true
		if err := clock.Sleep(ctx, d); err != nil {
			return waited, err
		}
	}
}
