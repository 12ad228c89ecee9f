package consumer

import (
	"context"
	"sync/atomic"
)

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
