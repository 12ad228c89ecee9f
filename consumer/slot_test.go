package consumer

import (
	"context"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// free reports how many of u's request slots can be taken now: it takes
// them until one would block (for a second of the bubble's fake time), then
// gives them all back.
func free(t *testing.T, u *Uploader) int {
	t.Helper()
	var taken []*slot
	defer func() {
		for _, s := range taken {
			s.release()
		}
	}()
	for {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		s, err := u.acquire(ctx)
		cancel()
		if err != nil {
			require.ErrorIs(t, err, context.DeadlineExceeded)
			return len(taken)
		}
		taken = append(taken, s)
	}
}

func TestReleaseTwiceGivesBackOneSlot(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := newRig(t)
		r.up = New(Config{Client: r.up.cfg.Client, MaxConcurrentRequests: 2})
		a, err := r.up.acquire(context.Background())
		require.NoError(t, err)
		b, err := r.up.acquire(context.Background())
		require.NoError(t, err)

		a.release()
		a.release() // must not give back b's slot, nor block
		assert.Equal(t, 1, free(t, r.up), "slots free with b still held")

		b.release()
		assert.Equal(t, 2, free(t, r.up), "slots free once both are released")

		var zero slot
		zero.release()
		(*slot)(nil).release()
		assert.Equal(t, 2, free(t, r.up), "slots free after releasing the zero and a nil slot")
	})
}

// A deliver handed a slot that holds nothing takes one of its own for the
// first attempt: it neither blocks forever giving back a slot it never had
// nor takes one from another batch.
func TestDeliverWithASlotThatHoldsNothing(t *testing.T) {
	released := func(u *Uploader) *slot {
		s, err := u.acquire(context.Background())
		require.NoError(t, err)
		s.release()
		return s
	}
	cases := map[string]func(u *Uploader) *slot{
		"released": released,
		"zero":     func(*Uploader) *slot { return &slot{} },
		"nil":      func(*Uploader) *slot { return nil },
		"another Uploader's": func(*Uploader) *slot {
			s, err := New(Config{MaxConcurrentRequests: 1}).acquire(context.Background())
			require.NoError(t, err)
			return s
		},
	}
	for name, take := range cases {
		t.Run(name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				r := newRig(t)
				var out []outcome
				done := make(chan struct{})
				go func() {
					defer close(done)
					r.up.deliver(context.Background(), take(r.up), events(2), func(lo, hi int, err error) {
						out = append(out, outcome{lo, hi, err})
					})
				}()
				synctest.Wait()
				select {
				case <-done:
				default:
					require.FailNow(t, "Deliver has not returned and cannot go on")
				}
				require.NoError(t, one(t, out, 2))
				assert.Len(t, r.tr.requests(), 1)
				assert.Equal(t, 8, free(t, r.up), "slots free after Deliver")
			})
		})
	}
}

// deliver sends its first attempt on the slot it is handed, without giving
// it back first, so batches go out in the order their slots were taken:
// whoever waits for a slot meanwhile gets it only after that attempt.
func TestFirstAttemptGoesOutOnTheSlotHandedIn(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := newRig(t)
		r.up.requests = make(chan struct{}, 1)
		first, err := r.up.acquire(context.Background())
		require.NoError(t, err)
		sentBefore := make(chan int, 1)
		go func() {
			next, err := r.up.acquire(context.Background()) // waits for first's slot
			sentBefore <- len(r.tr.requests())
			if assert.NoError(t, err) {
				next.release()
			}
		}()
		synctest.Wait()
		r.up.deliver(context.Background(), first, events(1), func(int, int, error) {})
		assert.Equal(t, 1, <-sentBefore, "requests sent before the next waiter got the slot")
	})
}

// Deliver, used alone, takes a slot for its first attempt and gives it
// back when it returns.
func TestDeliverTakesASlotOfItsOwn(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := newRig(t)
		var out []outcome
		r.up.Deliver(context.Background(), events(2), func(lo, hi int, err error) {
			out = append(out, outcome{lo, hi, err})
		})
		require.NoError(t, one(t, out, 2))
		assert.Len(t, r.tr.requests(), 1)
		assert.Equal(t, 8, free(t, r.up), "slots free after Deliver")
	})
}
