package consumer

import (
	"sync/atomic"
	"time"

	"github.com/dualpath/analytics-go/retry"
)

// Counters is a snapshot of what an Uploader has done since it was made.
type Counters struct {
	// Attempts is every attempt sent, first attempts and retries: the
	// HTTP requests sent, but for Resends.
	Attempts int64
	// BatchesDelivered and BatchesFailed count batches that reached a final
	// outcome; the halves of a split batch count as batches of their own.
	BatchesDelivered int64
	BatchesFailed    int64
	// Splits counts batches split in two after a 413 (or an oversized body).
	Splits int64
	// BackoffRetries and RateLimitRetries count retries by path.
	BackoffRetries   int64
	RateLimitRetries int64
	// Resends counts attempts sent a second time at once, as part of the
	// same attempt, after a kept-alive connection closed under them
	// without a byte of answer (see Uploader.Deliver). They are not in
	// Attempts nor in the retries.
	Resends int64
	// RateLimitedWaits counts attempts held back by the client-wide pause
	// that a Retry-After starts, the rate-limited batch's own included.
	RateLimitedWaits int64
	// BytesSent is the request body bytes sent, as on the wire (after gzip).
	BytesSent int64
	// TransportErrorsNotWritten and TransportErrorsWritten count attempts
	// that got no response, by whether the request had been written.
	TransportErrorsNotWritten int64
	TransportErrorsWritten    int64
}

type counters struct {
	attempts, delivered, failed, splits         atomic.Int64
	backoffRetries, rateLimitRetries, gateWaits atomic.Int64
	resends                                     atomic.Int64
	bytesSent, notWritten, written              atomic.Int64
}

func (c *counters) snapshot() Counters {
	return Counters{
		Attempts:                  c.attempts.Load(),
		BatchesDelivered:          c.delivered.Load(),
		BatchesFailed:             c.failed.Load(),
		Splits:                    c.splits.Load(),
		BackoffRetries:            c.backoffRetries.Load(),
		RateLimitRetries:          c.rateLimitRetries.Load(),
		Resends:                   c.resends.Load(),
		RateLimitedWaits:          c.gateWaits.Load(),
		BytesSent:                 c.bytesSent.Load(),
		TransportErrorsNotWritten: c.notWritten.Load(),
		TransportErrorsWritten:    c.written.Load(),
	}
}

// SendRateState is a snapshot of the Uploader's client-wide send rate
// (Config.AdaptiveSendRate). With the send rate off it is all zero.
type SendRateState struct {
	// Limit is the attempts per second the send rate allows now: the
	// limit while it is lowered, one over the probe's spacing while
	// probing; 0 while it does not limit.
	Limit float64
	// Probing reports whether the API seems down: one attempt at a time
	// goes out, spaced by the backoff schedule.
	Probing bool
	// Held counts attempts that waited for their turn, since New.
	Held int64
	// Waiting is the attempts waiting for their turn now.
	Waiting int
}

// SendRate returns a snapshot of the send rate.
func (u *Uploader) SendRate() SendRateState {
	l := u.line
	if l.rate == nil {
		return SendRateState{}
	}
	st := l.rate.State(time.Now())
	return SendRateState{
		Limit:   st.Limit,
		Probing: st.Mode == retry.SendProbing,
		Held:    l.held.Load(),
		Waiting: l.waiting(),
	}
}
