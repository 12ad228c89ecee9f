package consumer

import (
	"context"
	"sync/atomic"
)

// A Slot is the right to have one request in flight: one of the
// MaxConcurrentRequests an Uploader allows, as a rate.Reservation carries
// its token. Acquire takes one and Release gives it back. Release acts
// once, however often it is called, so a slot is never given back twice;
// Deliver releases the slot it is handed whatever happens, so none is kept.
// The zero Slot, a nil *Slot and a released one hold nothing.
//
// A Slot is supported API of this package, for the analytics package, which
// takes the first slot of each batch in the order it cuts them. Release is
// safe to call from any goroutine.
type Slot struct {
	tokens   chan struct{} // the Uploader's; nil for the zero Slot
	released atomic.Bool
}

// Acquire takes a request slot, waiting while MaxConcurrentRequests
// requests are in flight, or returns the context's cause.
func (u *Uploader) Acquire(ctx context.Context) (*Slot, error) {
	select {
	case u.requests <- struct{}{}:
		return &Slot{tokens: u.requests}, nil
	case <-ctx.Done():
		return nil, context.Cause(ctx)
	}
}

// Release gives the slot back. Only the first call on a slot that holds one
// does anything.
func (s *Slot) Release() {
	if s != nil && s.tokens != nil && s.released.CompareAndSwap(false, true) {
		<-s.tokens
	}
}

// holds reports whether s holds one of u's request slots.
func (u *Uploader) holds(s *Slot) bool {
	return s != nil && s.tokens == u.requests && !s.released.Load()
}
